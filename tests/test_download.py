"""Downloading PubMed files: what a flaky NCBI connection must not be able to break.

Every test talks HTTP to a real local server (tests/httpserver.py) that serves a folder
laid out like https://ftp.ncbi.nlm.nih.gov/pubmed/ and fails on request; the request
log shows what actually went over the wire.
"""

from __future__ import annotations

import hashlib
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from httpserver import LocalServer, serve

from ingest.download import (
    RemoteFile,
    download,
    download_file,
    list_remote,
    md5_of,
    ncbi_reachable,
    parse_md5,
)
from medsearch.errors import DiskFullError, DownloadError, UsageError

BASELINE = ("pubmed26n0001.xml.gz", "pubmed26n0002.xml.gz", "pubmed26n0003.xml.gz")
UPDATES = ("pubmed26n1335.xml.gz", "pubmed26n1336.xml.gz")
SIZE = 300_000
FIRST = "/pubmed/baseline/pubmed26n0001.xml.gz"


@dataclass
class Mirror:
    server: LocalServer
    url: str
    content: dict[str, bytes]
    sleeps: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        """Stands in for time.sleep: records the backoff schedule, waits for nothing."""
        self.sleeps.append(seconds)

    def remote(self, name: str, folder: str = "baseline") -> RemoteFile:
        url = f"{self.url}{folder}/{name}"
        return RemoteFile(name=name, url=url, md5_url=url + ".md5")


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    """pubmed/baseline and pubmed/updatefiles with data, .md5 files and NCBI's extras."""
    rng = random.Random(26)
    content: dict[str, bytes] = {}
    for folder, names in (("baseline", BASELINE), ("updatefiles", UPDATES)):
        where = tmp_path / "site" / "pubmed" / folder
        where.mkdir(parents=True)
        for name in reversed(names):  # listing order must not come from creation order
            data = rng.randbytes(SIZE)
            content[name] = data
            (where / name).write_bytes(data)
            digest = hashlib.md5(data).hexdigest()
            (where / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")
        (where / "README.txt").write_text("PubMed files\n")
        (where / "pubmed26n.xml.gz.html").write_text("<html></html>")
    with serve(tmp_path / "site") as server:
        yield Mirror(server, server.url + "pubmed/", content)


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    """Where downloads go: empty, and apart from the served site."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    return folder


def closed_port_url() -> str:
    """A URL on this machine where nothing listens: connection refused, instantly."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/pubmed/"


# -- listing ------------------------------------------------------------------------------


def test_listing_finds_the_data_files_in_name_order(mirror: Mirror) -> None:
    files = list_remote("baseline", mirror=mirror.url)
    assert [f.name for f in files] == list(BASELINE)
    assert files[0] == mirror.remote(BASELINE[0])


def test_updates_come_from_updatefiles(mirror: Mirror) -> None:
    files = list_remote("updates", mirror=mirror.url.rstrip("/"))
    assert [f.name for f in files] == list(UPDATES)
    assert all("/pubmed/updatefiles/" in f.url for f in files)


def test_listing_accepts_every_href_spelling_and_nothing_else(mirror: Mirror) -> None:
    mirror.server.override(
        "/pubmed/baseline/",
        b"""<pre><a HREF='pubmed26n0004.xml.gz'>x</a>
        <a href="/pubmed/baseline/pubmed26n0005.xml.gz">x</a> <a href=pubmed26n0006.xml.gz>x</a>
        <a href="pubmed26n0004.xml.gz">again</a> <a href="pubmed26n0007.xml.gz.md5">md5</a>
        <a href="old/xpubmed26n0008.xml.gz">x</a> <a href="pubmed26n0009.xml">x</a></pre>""",
    )
    files = list_remote("baseline", mirror=mirror.url)
    assert [f.name for f in files] == [f"pubmed26n000{i}.xml.gz" for i in (4, 5, 6)]
    assert {f.url for f in files} == {f"{mirror.url}baseline/{f.name}" for f in files}


def test_unknown_kind_is_a_usage_error(mirror: Mirror) -> None:
    with pytest.raises(UsageError, match="baseline"):
        list_remote("daily", mirror=mirror.url)  # type: ignore[arg-type]


# -- downloading --------------------------------------------------------------------------


def test_download_takes_the_first_files_and_verifies_them(mirror: Mirror, dest: Path) -> None:
    paths = download("baseline", dest, limit=2, mirror=mirror.url, sleep=mirror.sleep)
    assert paths == [dest / BASELINE[0], dest / BASELINE[1]]
    assert all(p.read_bytes() == mirror.content[p.name] for p in paths)
    assert sorted(p.name for p in dest.iterdir()) == list(BASELINE[:2])  # no .part left over
    assert not mirror.server.requests_for(f"/pubmed/baseline/{BASELINE[2]}")


def test_progress_reports_bytes_done_and_total(mirror: Mirror, dest: Path) -> None:
    seen: list[tuple[int, int | None]] = []
    download_file(mirror.remote(BASELINE[0]), dest, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, SIZE)
    assert seen[-1] == (SIZE, SIZE)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_verified_file_is_not_downloaded_again(mirror: Mirror, dest: Path) -> None:
    remote = mirror.remote(BASELINE[0])
    download_file(remote, dest)
    download_file(remote, dest)
    assert len(mirror.server.requests_for(FIRST)) == 1
    assert len(mirror.server.requests_for(FIRST + ".md5")) == 2


def test_a_damaged_final_file_is_fetched_again(mirror: Mirror, dest: Path) -> None:
    (dest / BASELINE[0]).write_bytes(b"not what NCBI published")
    path = download_file(mirror.remote(BASELINE[0]), dest)
    assert path.read_bytes() == mirror.content[BASELINE[0]]


def test_a_partial_download_resumes_with_a_range_request(mirror: Mirror, dest: Path) -> None:
    data = mirror.content[BASELINE[0]]
    (dest / f"{BASELINE[0]}.part").write_bytes(data[:100_000])
    seen: list[tuple[int, int | None]] = []
    path = download_file(
        mirror.remote(BASELINE[0]), dest, progress=lambda d, t: seen.append((d, t))
    )
    assert path.read_bytes() == data
    [request] = mirror.server.requests_for(FIRST)
    assert request.range == "bytes=100000-"
    assert request.status == 206
    assert request.body_bytes == SIZE - 100_000
    assert seen[0] == (100_000, SIZE)


def test_a_server_that_ignores_range_gets_a_fresh_start(mirror: Mirror, dest: Path) -> None:
    mirror.server.ignore_range = True
    data = mirror.content[BASELINE[0]]
    (dest / f"{BASELINE[0]}.part").write_bytes(data[:100_000])
    path = download_file(mirror.remote(BASELINE[0]), dest)
    assert path.read_bytes() == data  # not the first 100 kB twice
    [request] = mirror.server.requests_for(FIRST)
    assert (request.range, request.status, request.body_bytes) == ("bytes=100000-", 200, SIZE)


def test_a_complete_part_is_finished_without_a_transfer(mirror: Mirror, dest: Path) -> None:
    """A run that died between the last byte and the rename: the server answers 416."""
    (dest / f"{BASELINE[0]}.part").write_bytes(mirror.content[BASELINE[0]])
    path = download_file(mirror.remote(BASELINE[0]), dest)
    assert md5_of(path) == hashlib.md5(mirror.content[BASELINE[0]]).hexdigest()
    assert [r.status for r in mirror.server.requests_for(FIRST)] == [416]


def test_a_stale_part_from_another_file_version_is_discarded(mirror: Mirror, dest: Path) -> None:
    (dest / f"{BASELINE[0]}.part").write_bytes(b"\0" * 1000)
    path = download_file(mirror.remote(BASELINE[0]), dest, sleep=mirror.sleep)
    assert path.read_bytes() == mirror.content[BASELINE[0]]
    ranges = [r.range for r in mirror.server.requests_for(FIRST)]
    assert ranges == ["bytes=1000-", None]  # resumed, failed the checksum, started over


# -- failures -----------------------------------------------------------------------------


def test_503s_are_retried_with_exponential_backoff(mirror: Mirror, dest: Path) -> None:
    mirror.server.fail_first(FIRST, 3)
    path = download_file(mirror.remote(BASELINE[0]), dest, backoff=0.5, sleep=mirror.sleep)
    assert path.read_bytes() == mirror.content[BASELINE[0]]
    assert mirror.sleeps == [0.5, 1.0, 2.0]
    assert [r.status for r in mirror.server.requests_for(FIRST)] == [503, 503, 503, 200]


def test_too_many_503s_give_up_with_the_reason(mirror: Mirror, dest: Path) -> None:
    mirror.server.fail_first(FIRST, 10)
    with pytest.raises(DownloadError) as caught:
        download_file(mirror.remote(BASELINE[0]), dest, retries=2, sleep=mirror.sleep)
    message = str(caught.value)
    assert FIRST in message and "503" in message and "3 attempts" in message
    assert "\n" not in message
    assert mirror.sleeps == [1.0, 2.0]


def test_a_short_read_is_retried_and_resumed(mirror: Mirror, dest: Path) -> None:
    mirror.server.cut_short(FIRST, after=50_000)
    path = download_file(mirror.remote(BASELINE[0]), dest, sleep=mirror.sleep)
    assert path.read_bytes() == mirror.content[BASELINE[0]]
    first, second = mirror.server.requests_for(FIRST)
    assert (first.range, first.body_bytes) == (None, 50_000)
    assert (second.range, second.body_bytes) == ("bytes=50000-", SIZE - 50_000)
    assert mirror.sleeps == [1.0]


def test_a_timeout_is_retried(mirror: Mirror, dest: Path) -> None:
    mirror.server.stall_first(FIRST, 1, seconds=0.8)
    path = download_file(mirror.remote(BASELINE[0]), dest, timeout=0.3, sleep=mirror.sleep)
    assert path.read_bytes() == mirror.content[BASELINE[0]]
    assert mirror.sleeps[:1] == [1.0]  # (a very busy machine may need more than one retry)


def test_a_wrong_checksum_fails_after_one_clean_retry(mirror: Mirror, dest: Path) -> None:
    wrong = "0" * 32
    mirror.server.override(FIRST + ".md5", f"MD5({BASELINE[0]})= {wrong}\n".encode())
    with pytest.raises(DownloadError) as caught:
        download_file(mirror.remote(BASELINE[0]), dest, sleep=mirror.sleep)
    message = str(caught.value)
    actual = hashlib.md5(mirror.content[BASELINE[0]]).hexdigest()
    assert BASELINE[0] in message and wrong in message and actual in message
    assert [r.range for r in mirror.server.requests_for(FIRST)] == [None, None]
    assert list(dest.iterdir()) == []  # neither a bad file nor a bad .part is kept


def test_a_checksum_for_another_file_is_refused(mirror: Mirror, dest: Path) -> None:
    digest = hashlib.md5(mirror.content[BASELINE[0]]).hexdigest()
    mirror.server.override(FIRST + ".md5", f"MD5({BASELINE[1]})= {digest}\n".encode())
    with pytest.raises(DownloadError, match=BASELINE[1]):
        download_file(mirror.remote(BASELINE[0]), dest)
    assert not mirror.server.requests_for(FIRST)


def test_a_missing_file_fails_at_once(mirror: Mirror, dest: Path) -> None:
    with pytest.raises(DownloadError, match="404"):
        download_file(mirror.remote("pubmed26n9999.xml.gz"), dest, sleep=mirror.sleep)
    assert mirror.sleeps == []  # a 404 will not fix itself


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_is_not_retried(mirror: Mirror, dest: Path) -> None:
    """Writes to /dev/full fail with ENOSPC: the real error, no mock needed."""
    (dest / f"{BASELINE[0]}.part").symlink_to("/dev/full")
    with pytest.raises(DiskFullError, match="disk full"):
        download_file(mirror.remote(BASELINE[0]), dest, sleep=mirror.sleep)
    assert mirror.sleeps == []
    assert len(mirror.server.requests_for(FIRST)) == 1


def test_an_unusable_destination_is_a_clear_error(mirror: Mirror, dest: Path) -> None:
    (dest / "file").write_text("")
    with pytest.raises(DownloadError, match="cannot create"):
        download_file(mirror.remote(BASELINE[0]), dest / "file" / "sub")


def test_an_unreachable_mirror(dest: Path) -> None:
    url = closed_port_url()
    assert ncbi_reachable(url, timeout=1.0) is False
    sleeps: list[float] = []
    with pytest.raises(DownloadError) as caught:
        download("baseline", dest, mirror=url, retries=2, sleep=sleeps.append)
    message = str(caught.value)
    assert message.startswith(f"{url}baseline/: ")
    assert "refused" in message and "gave up after 3 attempts" in message
    assert sleeps == [1.0, 2.0]


def test_a_reachable_mirror(mirror: Mirror) -> None:
    assert ncbi_reachable(mirror.url, timeout=1.0) is True
    assert mirror.server.requests_for("/pubmed/", method="HEAD")


def test_a_malformed_mirror_url_is_unreachable_and_a_clear_error(dest: Path) -> None:
    assert ncbi_reachable("not a url") is False
    with pytest.raises(DownloadError, match="unknown url type"):
        list_remote("baseline", mirror="not-a-url/")


# -- checksum files -----------------------------------------------------------------------

DIGEST = "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (f"MD5(pubmed26n0001.xml.gz)= {DIGEST}\n", "pubmed26n0001.xml.gz"),
        (f"{DIGEST}  pubmed26n0001.xml.gz\n", "pubmed26n0001.xml.gz"),
        (f"{DIGEST.upper()} *pubmed26n0001.xml.gz", "pubmed26n0001.xml.gz"),
        (f"{DIGEST}\n", None),
    ],
)
def test_checksum_file_forms(text: str, name: str | None) -> None:
    assert parse_md5(text) == (DIGEST, name)


@pytest.mark.parametrize("text", ["", "<html>Not Found</html>", "MD5(x)= 1234"])
def test_garbage_is_not_a_checksum(text: str) -> None:
    with pytest.raises(ValueError, match="MD5"):
        parse_md5(text)
