"""`ingest --download`: each file is ingested as soon as it has downloaded, while the next
one downloads, instead of the whole baseline first (hours) and the ingest after it.

The pieces, each against a real HTTP server on 127.0.0.1, real parser processes and a
real store: the parser pool takes files that are still arriving; the ingest finishes a
file before a later one has come; with ``--delete-downloads`` only a window of
downloaded files is ever on disk; a download that fails or is stopped half-way keeps
what came (in the store, or as a ``.part`` to resume).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from conftest import wait_until
from httpserver import serve

from benchmarks.synth import article_xml, pubmed_file
from ingest.download import RemoteFile, list_remote
from ingest.download_ahead import BackgroundDownload
from ingest.incoming import Incoming, InputFile
from ingest.pipeline import Ingestor
from ingest.workers import Arrivals, ParserPool
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store

PER_FILE = 5


def site(tmp_path: Path, files: int, *, words: int = 0) -> Path:
    """NCBI's layout: ``files`` baseline files of :data:`PER_FILE` articles with their
    md5 files. ``words``: random words per abstract, to make a file big (incompressible)."""
    folder = tmp_path / "site" / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    rng = random.Random(5)
    per_file = PER_FILE if not words else 400
    for n in range(1, files + 1):
        name = f"pubmed26n{n:04d}.xml.gz"
        articles = [
            article_xml(
                n * 1000 + i,
                f"Baseline {n} article {i}",
                " ".join(f"{rng.getrandbits(40):x}" for _ in range(words)) or "Statins.",
            )
            for i in range(per_file)
        ]
        pubmed_file(folder / name, articles, gz=True)
        digest = hashlib.md5((folder / name).read_bytes()).hexdigest()
        (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")
    return tmp_path / "site"


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


# -- the parser pool takes files as they arrive -------------------------------------------


def test_the_parsers_take_files_that_are_still_arriving_and_stop_when_the_feed_ends(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    files = [
        pubmed_file(
            folder / f"pubmed26n000{f}.xml", [article_xml(f * 10 + i, "T", "A.") for i in range(3)]
        )
        for f in (1, 2)
    ]
    feed = Arrivals(ended=False)
    first_out = threading.Event()
    waited: list[bool] = []

    def arrive() -> None:
        feed.add(files[0])
        # The second file comes only once the first is through the pool: a pool that
        # waited for more files, or for the feed's end, before handing the first over
        # would hold this thread here until the wait runs out.
        waited.append(first_out.wait(60))
        feed.add(files[1])
        feed.end()

    pool = ParserPool(feed, jobs=2, batch_size=2, spool_root=tmp_path / "tmp")
    threading.Thread(target=arrive, daemon=True).start()
    got = []
    for path, messages in pool:
        got.append((path, [r[0] for k, p in messages if k == "articles" for r in p.rows]))
        first_out.set()
    assert got == [(files[0], [10, 11, 12]), (files[1], [20, 21, 22])]
    assert waited == [True]
    assert feed.exhausted and feed.taken == 2


def test_a_feed_that_ends_empty_gives_nothing(tmp_path: Path) -> None:
    feed = Arrivals(ended=False)
    threading.Timer(0.2, feed.end).start()
    assert list(ParserPool(feed, jobs=1, spool_root=tmp_path / "tmp")) == []


# -- the ingest overlaps the download -----------------------------------------------------


def test_a_file_is_in_the_store_before_a_later_one_has_downloaded(tmp_path: Path) -> None:
    root = site(tmp_path, 3)
    dest = tmp_path / "downloads"
    names = [f"pubmed26n000{n}.xml.gz" for n in (1, 2, 3)]
    when: dict[str, float] = {}
    two_written = threading.Event()
    with serve(root) as server, Ingestor(Paths.resolve(tmp_path / "home"), jobs=1) as ing:
        # The last file is sent only once the first two are in the store: an ingest that
        # waited for every download first would never get it (until the hold runs out,
        # and the order below fails).
        server.hold_first(f"/pubmed/baseline/{names[2]}", two_written)
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")

        def finished(item: InputFile, in_store: bool) -> None:
            when[f"written {item.name}"] = time.monotonic()
            assert in_store
            if item.name == names[1]:
                two_written.set()
            download.release()

        def deliver(path: Path, md5: str) -> None:
            when[f"downloaded {path.name}"] = time.monotonic()
            incoming.add(InputFile(path, path.stat().st_size, md5))

        incoming = Incoming(expected=len(wanted), on_finished=finished)
        download = BackgroundDownload(
            wanted, dest, deliver, lambda error: incoming.end(), ahead=None
        )
        with download:
            summary = ing.run([], incoming=incoming)
        assert download.error is None
        assert (summary.files, summary.ingested, summary.added) == (3, 3, 15)
        assert ing.store.count() == 15
    assert when[f"written {names[0]}"] < when[f"downloaded {names[2]}"]
    assert when[f"written {names[1]}"] < when[f"downloaded {names[2]}"]
    assert sorted(when, key=when.get)[-1] == f"written {names[2]}"  # type: ignore[arg-type]


def test_a_unit_never_waits_for_a_file_still_downloading(tmp_path: Path) -> None:
    """With a window of one file, a unit that waited for the next file inside its
    transaction would never commit, so never release the window: a deadlock."""
    root = site(tmp_path, 3)
    counted: list[int] = []
    with serve(root) as server:
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        incoming = Incoming(len(wanted), lambda item, ok: download.release())
        download = BackgroundDownload(
            wanted,
            tmp_path / "downloads",
            lambda p, md5: incoming.add(InputFile(p, p.stat().st_size, md5)),
            lambda error: incoming.end(),
            ahead=1,
        )

        def ingest() -> None:  # in a thread of its own, so a deadlock fails instead of hangs
            with Ingestor(Paths.resolve(tmp_path / "home"), jobs=1) as ing:
                ing.run([], incoming=incoming)
                counted.append(ing.store.count())

        with download:
            runner = threading.Thread(target=ingest, daemon=True)
            runner.start()
            runner.join(30)
            assert not runner.is_alive(), "the ingest waited for a download that waited for it"
    assert counted == [15]


def test_files_given_on_the_command_line_go_first_and_a_downloaded_twin_is_not_parsed_twice(
    tmp_path: Path,
) -> None:
    root = site(tmp_path, 2)
    local = tmp_path / "local"
    local.mkdir()
    twin = root / "pubmed" / "baseline" / "pubmed26n0002.xml.gz"
    (local / "copy.xml.gz").write_bytes(twin.read_bytes())
    told: list[tuple[str, bool]] = []
    with serve(root) as server, Ingestor(Paths.resolve(tmp_path / "home"), jobs=1) as ing:
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        incoming = Incoming(len(wanted), lambda item, ok: told.append((item.name, ok)))
        with BackgroundDownload(
            wanted,
            tmp_path / "downloads",
            lambda p, md5: incoming.add(InputFile(p, p.stat().st_size, md5)),
            lambda error: incoming.end(),
        ):
            summary = ing.run([local], incoming=incoming)
        ledger = [(e.name, e.status) for e in ing.store.files.entries()]
    assert ledger == [("copy.xml.gz", "done"), ("pubmed26n0001.xml.gz", "done")]
    assert (summary.files, summary.ingested, summary.skipped, summary.added) == (3, 2, 1, 10)
    # the twin was never the store's under its own name: it is not reported as stored
    assert sorted(told) == [("pubmed26n0001.xml.gz", True), ("pubmed26n0002.xml.gz", False)]


# -- a window of downloads, a stop, a failure ---------------------------------------------


def recording(
    wanted: list[RemoteFile],
    dest: Path,
    delivered: list[str],
    ended: Callable[[BaseException | None], None] = lambda error: None,
    **options: Any,
) -> BackgroundDownload:
    """A download that records the names it delivers, in order."""
    return BackgroundDownload(
        wanted, dest, lambda path, md5: delivered.append(path.name), ended, **options
    )


def test_the_download_waits_while_a_window_of_files_waits_for_the_ingest(tmp_path: Path) -> None:
    """With a window of one file, a file starts only once the one before it is released,
    even with a second connection idle from the start (which, if the window let it,
    would start the second file at once, while the first is still downloading)."""
    root = site(tmp_path, 3)
    delivered: list[str] = []
    events: list[str] = []  # appended by the download threads and this one, in order
    with serve(root) as server:
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        download = recording(
            wanted,
            tmp_path / "downloads",
            delivered,
            ahead=1,
            connections=2,
            on_file=lambda remote, index, total: events.append(f"start {index}"),
        )
        with download:
            assert wait_until(lambda: len(delivered) >= 1)
            events.append("release 1")
            download.release()
            assert wait_until(lambda: len(delivered) >= 2)
            events.append("release 2")
            download.release()
            download.join(10)
    assert delivered == [r.name for r in wanted]
    assert events == ["start 0", "release 1", "start 1", "release 2", "start 2"]


def test_several_connections_fetch_at_once_and_deliver_in_the_listing_order(
    tmp_path: Path,
) -> None:
    root = site(tmp_path, 4)
    delivered: list[str] = []
    counted: list[tuple[int, int | None]] = []
    started: dict[int, int] = {}  # file index -> files delivered when it started
    others_started = threading.Event()

    def on_file(remote: RemoteFile, index: int, total: int) -> None:
        started[index] = len(delivered)
        if {1, 2} <= started.keys():
            others_started.set()

    with serve(root) as server:
        # The first file is answered only once the second and third have started: one
        # connection at a time would start them only after the first had come.
        server.hold_first("/pubmed/baseline/pubmed26n0001.xml.gz", others_started, 20)
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        download = recording(
            wanted,
            tmp_path / "downloads",
            delivered,
            connections=3,
            progress=lambda done, total: counted.append((done, total)),
            on_file=on_file,
        )
        with download:
            download.join(30)
    assert started[1] == started[2] == 0  # started while the first was still on its way
    assert delivered == [r.name for r in wanted]
    assert download.error is None and download.fetched == [
        tmp_path / "downloads" / n for n in delivered
    ]
    total = sum(r.size or 0 for r in wanted)
    assert counted[-1] == (total, total) and all(t == total for _, t in counted)
    assert [d for d, _ in counted] == sorted(d for d, _ in counted)


def test_a_failed_file_stops_delivery_there_and_nothing_after_it_is_delivered(
    tmp_path: Path,
) -> None:
    root = site(tmp_path, 3)
    delivered: list[str] = []
    ended: list[BaseException | None] = []
    dest = tmp_path / "downloads"
    with serve(root) as server:
        server.fail_first("/pubmed/baseline/pubmed26n0002.xml.gz", 1, 404)
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        download = recording(wanted, dest, delivered, ended.append, connections=3)
        with download:
            download.join(20)
    assert delivered == ["pubmed26n0001.xml.gz"]  # never the third before the second
    assert len(ended) == 1 and ended[0] is download.error
    assert "pubmed26n0002.xml.gz: HTTP 404" in str(download.error)
    assert not (dest / "pubmed26n0002.xml.gz").exists()


def test_a_file_the_ingest_cannot_take_stops_delivery_like_a_failed_fetch(
    tmp_path: Path,
) -> None:
    root = site(tmp_path, 3)
    taken: list[str] = []
    ended: list[BaseException | None] = []

    def deliver(path: Path, md5: str) -> None:
        if path.name == "pubmed26n0002.xml.gz":
            raise OSError(f"{path}: vanished")
        taken.append(path.name)

    with serve(root) as server:
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        download = BackgroundDownload(
            wanted, tmp_path / "downloads", deliver, ended.append, connections=2
        )
        with download:
            download.join(20)
    assert taken == ["pubmed26n0001.xml.gz"]
    assert ended == [download.error] and "vanished" in str(download.error)
    assert download.fetched == [tmp_path / "downloads" / "pubmed26n0001.xml.gz"]


def test_a_stopped_download_leaves_its_part_and_the_next_run_resumes_it(tmp_path: Path) -> None:
    root = site(tmp_path, 1, words=60)
    name = "pubmed26n0001.xml.gz"
    size = (root / "pubmed" / "baseline" / name).stat().st_size
    assert size > 150_000
    dest = tmp_path / "downloads"
    ended: list[BaseException | None] = []
    with serve(root) as server:
        server.rate = 50_000  # bytes a second: a few seconds for this file
        wanted = list_remote("baseline", mirror=server.url + "pubmed/")
        download = BackgroundDownload(
            wanted, dest, lambda p, m: None, ended.append, timeout=10
        ).start()
        part = dest / (name + ".part")
        assert wait_until(lambda: part.exists() and part.stat().st_size > 0)
        began = time.monotonic()
        download.stop()
        assert time.monotonic() - began < 2
        assert ended == [None] and download.error is None and download.fetched == []
        kept = part.stat().st_size
        assert 0 < kept < size and not (dest / name).exists()
        server.rate = None
        got: list[Path] = []
        again = BackgroundDownload(wanted, dest, lambda p, m: got.append(p), ended.append)
        with again:
            again.join(10)
        assert got == [dest / name] and (dest / name).stat().st_size == size
        assert server.requests_for(f"/pubmed/baseline/{name}")[-1].range == f"bytes={kept}-"


def test_a_download_that_fails_half_way_keeps_what_came_and_the_rerun_fetches_the_rest(
    tmp_path: Path,
) -> None:
    root = site(tmp_path, 3)
    home = tmp_path / "home"
    third = "/pubmed/baseline/pubmed26n0003.xml.gz"
    with serve(root) as server:
        args = ("ingest", "--download", "baseline", "--mirror", server.url + "pubmed/")
        server.fail_first(third, 1, 404)
        code, out, err = cli(home, *args, "--no-encode", "--json")
        assert code == 1
        assert (
            err.strip()
            .splitlines()[-1]
            .endswith(f"{server.url}pubmed/baseline/pubmed26n0003.xml.gz: HTTP 404 Not Found")
        )
        summary = json.loads(out)
        assert (summary["ingested"], summary["added"]) == (2, 10)
        assert any("stopped after 2 of 3 file(s)" in note for note in summary["notes"])
        code, out, err = cli(home, *args, "--no-encode", "--json")
        assert code == 0, err
        assert (json.loads(out)["ingested"], json.loads(out)["added"]) == (1, 5)
        first = "/pubmed/baseline/pubmed26n0001.xml.gz"
        assert len(server.requests_for(first)) == 1  # never fetched twice
    with Store(home / "store.sqlite") as store:
        assert store.count() == 15


def test_deleted_downloads_go_as_they_are_ingested(tmp_path: Path) -> None:
    root = site(tmp_path, 4)
    home = tmp_path / "home"
    downloads = home / "downloads" / "baseline"
    with serve(root) as server:
        code, out, err = cli(
            home,
            "ingest",
            "--download",
            "baseline",
            "--mirror",
            server.url + "pubmed/",
            "--delete-downloads",
            "--no-encode",
            "--jobs",
            "1",
            "--json",
        )
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["ingested"], summary["added"]) == (4, 20)
    assert any("deleted 4 downloaded file(s)" in note for note in summary["notes"])
    assert not list(downloads.iterdir())
