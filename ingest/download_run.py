"""``--download``: what to fetch, whether the disk holds it, and the ingest that runs
beside the download, each file applied as soon as it (and every file before it) is
downloaded and verified."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from medsearch.paths import Paths
from medsearch.progress import Progress

if TYPE_CHECKING:
    from ingest.clock import StageClock
    from ingest.download import RemoteFile
    from ingest.pipeline import Ingestor


def plan_download(
    paths: Paths,
    kind: str,
    limit: int | None,
    mirror: str | None,
    *,
    encode: bool = True,
    space_check: bool = True,
    keep_downloads: bool = True,
    connections: int,
) -> tuple[list[RemoteFile], Path]:
    """The files to fetch and where they go. The listing's sizes say what the download and
    the ingest after it will write, and a disk that cannot hold it stops the command
    before any byte moves."""
    from ingest.download import DEFAULT_MIRROR, discard_oversize_parts, plan

    target: Literal["baseline", "updates"] = "baseline" if kind == "baseline" else "updates"
    dest = paths.downloads / target
    chosen = plan(target, limit=limit, mirror=mirror or DEFAULT_MIRROR)
    discard_oversize_parts(chosen, dest)  # garbage whose disk the space check would miss
    done = ingested_files(paths)
    if space_check:
        check_space(
            paths,
            chosen,
            dest,
            encode=encode,
            ingested=done,
            keep=keep_downloads,
            connections=connections,
        )
    # A file the ledger has is in the store: never fetched again (it may have been
    # deleted after its ingest, see --delete-downloads).
    return [r for r in chosen if r.name not in done], dest


def download_and_ingest(
    ing: Ingestor,
    inputs: list[Path],
    wanted: list[RemoteFile],
    dest: Path,
    progress: Progress,
    clock: StageClock,
    *,
    delete: bool,
    connections: int,
) -> BaseException | None:
    """Ingest ``inputs``, then each of ``wanted`` as soon as it (and every file before
    it) is downloaded and verified, while the next ones download, ``connections`` at a
    time (one progress bar for them all, in MB), counting into ``clock.summary``. With
    ``delete`` each downloaded file goes once the store has it, and at most a window of
    them is on disk, so the baseline's 51.8 GB never sit there at once. Returns what
    stopped the download, if anything did (the files that came are ingested all the
    same)."""
    from ingest.download_ahead import BackgroundDownload
    from ingest.incoming import Incoming, InputFile
    from ingest.pipeline import UNIT_FILES
    from ingest.workers import SPOOL_AHEAD
    from medsearch.footprint import human

    deleted: list[int] = []
    kept: list[str] = []

    def on_finished(item: InputFile, in_store: bool) -> None:
        if delete and in_store:
            try:
                item.path.unlink(missing_ok=True)
                deleted.append(item.size)
            except OSError as exc:  # the store has it: a file left behind is no failure
                kept.append(f"{item.name} ({exc.strerror or exc})")
        download.release()

    def megabytes(total: int | None) -> int | None:
        return None if total is None else max(1, round(total / 1e6))

    def on_bytes(done: int, total: int | None) -> None:
        progress.update("download", completed=round(done / 1e6), total=megabytes(total))

    def on_ended(error: BaseException | None) -> None:
        ended.append(time.monotonic())
        incoming.end()

    ended: list[float] = []
    incoming = Incoming(expected=len(wanted), on_finished=on_finished)
    download = BackgroundDownload(
        wanted,
        dest,
        lambda path, md5: incoming.add(InputFile(path, path.stat().st_size, md5)),
        on_ended,
        connections=connections,
        # parsing, parsed and waiting, in the unit being written, and downloading: none
        # of them waits for the window
        ahead=ing.jobs + SPOOL_AHEAD + UNIT_FILES + connections if delete else None,
        progress=on_bytes,
    )
    if wanted:
        n = len(wanted)
        what = f"Downloading {n} file{'s' * (n > 1)} (MB)"
        progress.start("download", what, total=megabytes(download.total_bytes))
    summary = clock.summary
    begun = time.monotonic()
    try:
        with download, clock.stage("ingest"):
            ing.run(inputs, incoming=incoming, summary=summary)
    finally:  # the download ran beside the ingest: its own time, not the ingest's
        clock.add("download", (ended[0] if ended else time.monotonic()) - begun)
    if wanted:
        progress.finish("download")
    if deleted:
        summary.notes.append(
            f"deleted {len(deleted)} downloaded file(s) now in the store ({human(sum(deleted))})"
        )
    if kept:
        summary.notes.append(f"could not delete {len(kept)} ingested download(s): {kept[0]}")
    if download.error is not None:
        summary.notes.append(
            f"the download stopped after {len(download.fetched)} of {len(wanted)} file(s);"
            " those are ingested: run the same command again to fetch the rest"
        )
    return download.error


def ingested_files(paths: Paths) -> frozenset[str]:
    """Names of the input files the ledger records as fully ingested."""
    if not paths.store.exists():
        return frozenset()
    from medsearch.store import Store

    with Store(paths.store, readonly=True) as store:
        return frozenset(e.name for e in store.files.entries() if e.status == "done")


def check_space(
    paths: Paths,
    chosen: list[RemoteFile],
    dest: Path,
    *,
    encode: bool,
    ingested: frozenset[str],
    keep: bool,
    connections: int,
) -> None:
    """Refuse (:class:`DiskSpaceError`) when the disk cannot hold what ``chosen`` brings
    (``keep``: the downloads stay, else only a window of them is on disk at once)."""
    from ingest.space import check, estimate, per_citation
    from medsearch.config import load_ingest_settings
    from medsearch.status import corpus_status

    status = corpus_status(paths)
    per = per_citation(status["footprint"], int(status["articles"]))
    needed = estimate(
        chosen,
        dest,
        per,
        ingested=ingested,
        encode=encode,
        keep_downloads=keep,
        connections=connections,
    )
    check(needed, paths.home, keep_free=load_ingest_settings(paths).keep_free_bytes)
