"""Downloading from a server that is broken or hostile: what it sends cannot fill memory
or the disk, and no link or redirect it gives makes medsearch read a local file.

Every server here is real (tests/httpserver.py on 127.0.0.1) and stops by itself: an
"endless" body is tens of MB, many times any cap, so an unbounded reader shows in the
memory it takes rather than running forever. Memory is what ``tracemalloc`` sees
Python allocate during the call (the body's bytes live in Python objects).
"""

from __future__ import annotations

import hashlib
import json
import random
import socket
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from click.testing import CliRunner
from httpserver import LocalServer, serve

from benchmarks.synth import article_xml, pubmed_file
from ingest import http_get
from ingest.download import (
    MAX_UNLISTED_FILE_BYTES,
    RemoteFile,
    download,
    download_file,
    list_remote,
    size_limit,
)
from ingest.http_get import MAX_LISTING_BYTES, MAX_MD5_BYTES
from ingest.space import to_fetch
from medsearch.cli import main
from medsearch.errors import DownloadError

NAME = "pubmed26n0001.xml.gz"
SIZE = 300_000
FOLDER = "/pubmed/baseline/"
DATA = FOLDER + NAME
ENDLESS = 32 << 20
"""What an endless body sends at most: four times the largest cap (a listing's)."""

T = TypeVar("T")


@dataclass
class Mirror:
    server: LocalServer
    url: str
    data: bytes
    root: Path
    sleeps: list[float]

    def remote(self) -> RemoteFile:
        """The file as the listing gives it (with its size)."""
        [remote] = list_remote("baseline", mirror=self.url)
        return remote


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[Mirror]:
    """One baseline file and its .md5, served like NCBI's pubmed/ folder."""
    data = random.Random(7).randbytes(SIZE)
    folder = tmp_path / "site" / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    (folder / NAME).write_bytes(data)
    (folder / f"{NAME}.md5").write_text(f"MD5({NAME})= {hashlib.md5(data).hexdigest()}\n")
    with serve(tmp_path / "site") as server:
        yield Mirror(server, server.url + "pubmed/", data, tmp_path / "site", [])


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    folder = tmp_path / "home" / "downloads" / "baseline"
    folder.mkdir(parents=True)
    return folder


def peak_bytes(action: Callable[[], T]) -> tuple[T | BaseException, int]:
    """What ``action`` returned or raised, and the most memory Python held meanwhile
    beyond what it held before."""
    tracemalloc.start()
    try:
        try:
            outcome: T | BaseException = action()
        except Exception as exc:
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root``: size and modification time, to show nothing changed."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- answers that never end -----------------------------------------------------------------


def test_an_endless_checksum_file_is_cut_off_after_a_few_kilobytes(
    mirror: Mirror, dest: Path
) -> None:
    """Even one that starts with a good checksum line: a .md5 file is one line."""
    good = f"MD5({NAME})= {hashlib.md5(mirror.data).hexdigest()}\n".encode()
    mirror.server.endless(DATA + ".md5", prefix=good, most=ENDLESS)
    remote = mirror.remote()
    outcome, peak = peak_bytes(lambda: download_file(remote, dest, sleep=mirror.sleeps.append))
    assert isinstance(outcome, DownloadError)
    message = str(outcome)
    assert message.startswith(f"{remote.md5_url}: ")
    assert f"{MAX_MD5_BYTES:,} bytes" in message and "checksum file" in message
    assert "\n" not in message
    assert peak < 1 << 20
    assert mirror.sleeps == []  # a server that sends without end is not asked again
    assert not mirror.server.requests_for(DATA)
    assert list(dest.iterdir()) == []


def test_an_endless_listing_is_cut_off_at_its_cap(mirror: Mirror, dest: Path) -> None:
    mirror.server.endless(FOLDER, prefix=b"<html><pre>\n", most=ENDLESS)
    outcome, peak = peak_bytes(lambda: download("baseline", dest, mirror=mirror.url))
    assert isinstance(outcome, DownloadError)
    message = str(outcome)
    assert message.startswith(f"{mirror.url}baseline/: ")
    assert f"{MAX_LISTING_BYTES:,} bytes" in message and "listing" in message
    assert peak < MAX_LISTING_BYTES + (4 << 20)  # the capped page, never the stream
    assert len(mirror.server.requests_for(FOLDER)) == 1
    assert list(dest.iterdir()) == []


def test_a_redirect_is_followed_without_reading_its_body(mirror: Mirror, dest: Path) -> None:
    """urllib's own redirect handler reads a redirect's body whole, however long."""
    mirror.server.endless(
        DATA, status=302, location=FOLDER + "moved/" + NAME, prefix=b"moved\n", most=ENDLESS
    )
    (mirror.root / "pubmed" / "baseline" / "moved").mkdir()
    (mirror.root / "pubmed" / "baseline" / "moved" / NAME).write_bytes(mirror.data)
    remote = mirror.remote()
    outcome, peak = peak_bytes(lambda: download_file(remote, dest))
    assert outcome == dest / NAME
    assert (dest / NAME).read_bytes() == mirror.data
    assert peak < 4 << 20


# -- data bodies longer than they may be ----------------------------------------------------


def test_a_body_past_the_listed_size_is_stopped_its_part_deleted_and_a_rerun_works(
    mirror: Mirror, dest: Path
) -> None:
    mirror.server.endless(DATA, prefix=mirror.data, most=ENDLESS)  # no Content-Length
    remote = mirror.remote()
    assert remote.size == SIZE
    limit = size_limit(SIZE).most
    grew: list[int] = []
    with pytest.raises(DownloadError) as caught:
        download_file(remote, dest, progress=lambda done, _: grew.append(done))
    message = str(caught.value)
    assert message.startswith(f"{remote.url}: ")
    assert f"past the {limit:,} bytes" in message and f"listing says {SIZE:,}" in message
    assert f"{NAME}.part deleted" in message
    assert max(grew) <= limit  # the .part never grew past the bound
    assert list(dest.iterdir()) == []  # no oversize .part to resume or to count
    assert len(mirror.server.requests_for(DATA)) == 1  # not retried

    mirror.server.behave(DATA)
    assert download_file(remote, dest).read_bytes() == mirror.data
    assert [r.range for r in mirror.server.requests_for(DATA)] == [None, None]


def test_an_announced_length_past_the_listed_size_is_refused_before_any_byte(
    mirror: Mirror, dest: Path
) -> None:
    mirror.server.endless(DATA, prefix=mirror.data, length=10**12, most=ENDLESS)
    remote = mirror.remote()
    with pytest.raises(DownloadError) as caught:
        download_file(remote, dest, sleep=mirror.sleeps.append)
    message = str(caught.value)
    assert message.startswith(f"{remote.url}: ")
    assert "announces a body of 1,000,000,000,000 bytes" in message
    assert mirror.sleeps == []
    assert list(dest.iterdir()) == []


def test_an_unlisted_file_is_held_to_the_hard_cap(mirror: Mirror, dest: Path) -> None:
    """No size in the listing: Content-Length is believed up to the cap, never past it."""
    assert size_limit(None).most == MAX_UNLISTED_FILE_BYTES == 1 << 30
    remote = RemoteFile(NAME, mirror.url + "baseline/" + NAME, mirror.url + f"baseline/{NAME}.md5")
    mirror.server.endless(DATA, length=MAX_UNLISTED_FILE_BYTES + 1, most=ENDLESS)
    with pytest.raises(DownloadError) as caught:
        download_file(remote, dest, sleep=mirror.sleeps.append)
    assert "announces a body of 1,073,741,825 bytes" in str(caught.value)
    assert "the listing gives no size, and 1,073,741,824 bytes is the cap" in str(caught.value)
    assert list(dest.iterdir()) == []
    mirror.server.behave(DATA)
    assert download_file(remote, dest).read_bytes() == mirror.data


def test_bytes_past_the_content_length_are_never_read(mirror: Mirror, dest: Path) -> None:
    """The true file, announced at its length, then garbage: the file lands, and only it."""
    mirror.server.endless(DATA, prefix=mirror.data, length=SIZE, most=ENDLESS)
    grew: list[int] = []
    path = download_file(mirror.remote(), dest, progress=lambda done, _: grew.append(done))
    assert path.read_bytes() == mirror.data
    assert max(grew) == SIZE


def test_an_oversize_part_left_behind_is_thrown_away_not_resumed(
    mirror: Mirror, dest: Path
) -> None:
    """A .part longer than the file may be is garbage: resuming would only add to it."""
    remote = mirror.remote()
    part = dest / f"{NAME}.part"
    with part.open("wb") as handle:
        handle.truncate(5 << 30)  # sparse: its length counts, it takes no disk
    assert to_fetch([remote], dest) == SIZE  # the whole file, as if the .part were not there
    path = download_file(remote, dest)
    assert path.read_bytes() == mirror.data
    assert [r.range for r in mirror.server.requests_for(DATA)] == [None]


def test_the_cli_says_one_line_and_a_rerun_with_a_leftover_downloads_and_ingests(
    tmp_path: Path,
) -> None:
    """`ingest --download` against a data body that never ends: one line naming the URL,
    exit 1, no .part left; then a rerun, with an oversize .part an older run left where
    the downloads go, passes the space check, fetches from the start and ingests."""
    folder = tmp_path / "site" / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    pubmed_file(
        folder / NAME, [article_xml(i, f"Title {i}", "Text.") for i in range(1, 6)], gz=True
    )
    good = (folder / NAME).read_bytes()
    (folder / f"{NAME}.md5").write_text(f"MD5({NAME})= {hashlib.md5(good).hexdigest()}\n")
    home = tmp_path / "home"
    downloads = home / "downloads" / "baseline"

    def ingest(url: str) -> tuple[int, str, str]:
        args = ["--home", str(home), "ingest", "--download", "baseline", "--mirror", url]
        result = CliRunner().invoke(main, [*args, "--no-encode", "--json", "-j", "0"])
        return result.exit_code, result.stdout, result.stderr

    with serve(tmp_path / "site") as server:
        url = server.url + "pubmed/"
        server.endless(DATA, prefix=good, most=ENDLESS)
        code, _, err = ingest(url)
        assert code == 1
        [line] = err.strip().splitlines()
        assert line.startswith(
            f"medsearch: error: {url}baseline/{NAME}: the server sends a body past"
        )
        assert list(downloads.iterdir()) == []

        server.behave(DATA)
        with (downloads / f"{NAME}.part").open("wb") as handle:
            handle.truncate(5 << 30)
        code, out, err = ingest(url)
        assert code == 0, err
        assert json.loads(out)["added"] == 5
        assert [r.range for r in server.requests_for(DATA)] == [None, None]
    assert sorted(p.name for p in downloads.iterdir()) == [NAME]


# -- links and redirects off the mirror -----------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A local file that looks like a baseline file, with a checksum that fits it: what a
    listing or a redirect might try to make medsearch copy into the data home."""
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = b"a local file medsearch must never read\n"
    (folder / NAME).write_bytes(secret)
    (folder / f"{NAME}.md5").write_text(f"MD5({NAME})= {hashlib.md5(secret).hexdigest()}\n")
    return folder


def listing(*hrefs: str) -> bytes:
    rows = "\n".join(
        f'<a href="{h}">{h.rsplit("/", 1)[-1]}</a>   2026-01-01 00:00  300000' for h in hrefs
    )
    return f"<html><pre>\n{rows}\n</pre></html>\n".encode()


def test_a_listing_that_links_a_local_file_is_refused(
    mirror: Mirror, dest: Path, outside: Path, tmp_path: Path
) -> None:
    before = tree(tmp_path)
    link = (outside / NAME).as_uri()
    mirror.server.override(FOLDER, listing(link))
    with pytest.raises(DownloadError) as caught:
        download("baseline", dest, mirror=mirror.url, sleep=mirror.sleeps.append)
    message = str(caught.value)
    assert message.startswith(f"{mirror.url}baseline/: the listing links {NAME} to {link}")
    assert "off the mirror" in message
    assert list(dest.iterdir()) == []
    assert tree(tmp_path) == before  # nothing written anywhere, the data home included


def test_a_listing_that_links_another_server_is_refused(
    mirror: Mirror, dest: Path, tmp_path: Path
) -> None:
    with serve(mirror.root) as stranger:
        foreign = stranger.url + "pubmed/baseline/" + NAME
        mirror.server.override(FOLDER, listing(foreign))
        with pytest.raises(DownloadError) as caught:
            download("baseline", dest, mirror=mirror.url)
        assert f"links {NAME} to {foreign}, off the mirror" in str(caught.value)
        assert stranger.requests == []
    assert list(dest.iterdir()) == []


def test_links_on_the_mirror_itself_are_followed_however_spelled(mirror: Mirror) -> None:
    port = mirror.url.split(":")[2].split("/")[0]
    mirror.server.override(
        FOLDER,
        listing(
            NAME,
            "/pubmed/baseline/pubmed26n0002.xml.gz",
            f"HTTP://127.0.0.1:{port}/pubmed/baseline/pubmed26n0003.xml.gz",
        ),
    )
    files = list_remote("baseline", mirror=mirror.url)
    assert [f.name for f in files] == [NAME, "pubmed26n0002.xml.gz", "pubmed26n0003.xml.gz"]


def test_a_file_url_is_never_opened_even_when_handed_over_directly(
    dest: Path, outside: Path
) -> None:
    url = (outside / NAME).as_uri()
    remote = RemoteFile(NAME, url, url + ".md5")
    with pytest.raises(DownloadError, match="only http:// and https://"):
        download_file(remote, dest, retries=0)
    assert list(dest.iterdir()) == []
    with pytest.raises(DownloadError, match="only http:// and https://"):
        list_remote("baseline", mirror=outside.as_uri(), retries=0)


@pytest.mark.parametrize("scheme", ["ftp", "file"])
def test_a_redirect_off_the_web_is_not_followed(
    mirror: Mirror, dest: Path, outside: Path, scheme: str
) -> None:
    """An ``ftp:`` redirect would have urllib log in to whatever host it names (here a
    socket that counts who connects); a ``file:`` one would read a local file."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        port = listener.getsockname()[1]
        target = {
            "ftp": f"ftp://127.0.0.1:{port}/pubmed/{NAME}",
            "file": (outside / NAME).as_uri(),
        }[scheme]
        mirror.server.redirect(DATA, target)
        with pytest.raises(DownloadError) as caught:
            download_file(mirror.remote(), dest, timeout=1, retries=0)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody came
    message = str(caught.value)
    assert message.startswith(f"{mirror.url}baseline/{NAME}: ") and target in message
    assert list(dest.iterdir()) == []


def test_a_mirror_that_trickles_bytes_is_cut_off_at_the_minimum_rate(
    mirror: Mirror, dest: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A byte every 20 s met every read's timeout and held `update` (and the writer lock)
    past 400 s; a body must average MIN_RATE over each RATE_WINDOW (lowered here)."""
    monkeypatch.setattr(http_get, "RATE_WINDOW", 0.4)
    monkeypatch.setattr(http_get, "MIN_RATE", 1_000)
    mirror.server.endless(DATA, prefix=mirror.data[:100], most=SIZE, trickle=0.05)
    started = time.monotonic()
    with pytest.raises(DownloadError) as caught:
        download_file(mirror.remote(), dest, retries=1, backoff=0, sleep=lambda _: None)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert message.startswith(f"{mirror.url}baseline/{NAME}: the server sent ")
    assert message.endswith(
        "under the 1,000 bytes a second a download must keep up (gave up after 2 attempts)"
    )
    assert len(mirror.server.requests_for(DATA)) == 2
