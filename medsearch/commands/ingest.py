"""``medsearch ingest``: PubMed files (local or downloaded) into the store and indexes."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.commands.ingest_clock import IngestFailed, StageClock
from medsearch.errors import UsageError
from medsearch.paths import Paths
from medsearch.progress import Progress

if TYPE_CHECKING:
    from ingest.download import RemoteFile
    from ingest.pipeline import Ingestor
    from medsearch.store import Store


def default_jobs(cores: int | None = None) -> int:
    """Parser processes: ~60% of the cores, two where there are two, at most 8.

    Per article a parser costs ~230 us, the writer thread ~50 and tantivy's indexing
    threads ~90 since documents arrive split into words (BENCHMARKS.md, session 24), so
    parsers are ~60% of ingest's CPU. On 2 cores two parsers beside the writer ingest
    4,729-4,779 articles/s against 3,791-4,147 for one, which had become the critical
    path. 8 parsers supply more than one writer thread takes (~14-20K articles/s), so
    more would only fill the spool.
    """
    from ingest.workers import MAX_PARSERS

    cores = cores or os.cpu_count() or 2
    return max(min(cores, 2), min(MAX_PARSERS, round(cores * 0.6)))


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
        return frozenset(e.name for e in store.ledger() if e.status == "done")


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


@click.command()
@click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--download",
    type=click.Choice(["baseline", "updates", "mesh"]),
    default=None,
    help="Fetch PubMed files from NCBI (verified by md5, resumable) and ingest them; mesh:"
    " the newest MeSH descriptor and supplementary files from NLM, imported as"
    " `medsearch mesh import` does.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="With --download: at most N files."
)
@click.option("--mirror", default=None, help="With --download: base URL instead of NCBI's.")
@click.option(
    "--connections",
    type=click.IntRange(min=1, max=8),
    default=None,
    help="With --download: files fetched at once (default 2).",
)
@click.option(
    "--embeddings",
    "embeddings",
    default=None,
    help="Import NCBI's precomputed MedCPT article embeddings from a directory or URL.",
)
@click.option(
    "--skip-space-check",
    is_flag=True,
    help="With --download: start even if the disk looks too small for the estimate.",
)
@click.option(
    "--delete-downloads",
    is_flag=True,
    help="With --download: delete each file once it is ingested (the baseline is 51.8 GB).",
)
@click.option(
    "--citations",
    "citations",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Import NIH's Open Citation Collection (iCite's open_citation_collection.zip or"
    " .csv) into the citation graph (resumable; a second import skips it).",
)
@click.option("--no-encode", is_flag=True, help="Skip encoding: lexical search only, encode later.")
@click.option(
    "--models", "profile", default=None, help="Model profile (medcpt, minilm, or your own)."
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="auto, cpu, cuda (every GPU), cuda:N, cuda:N,M or mps.",
)
@click.option(
    "--index-factory",
    default=None,
    help="Faiss index factory string (overrides the automatic choice).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    help="Parser processes (default: ~60% of the cores, 2 to 8; 0: parse in-process).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def ingest(
    ctx: click.Context,
    inputs: tuple[Path, ...],
    download: str | None,
    limit: int | None,
    mirror: str | None,
    connections: int | None,
    embeddings: str | None,
    skip_space_check: bool,
    delete_downloads: bool,
    citations: Path | None,
    no_encode: bool,
    profile: str | None,
    device: str,
    index_factory: str | None,
    jobs: int | None,
    as_json: bool,
) -> None:
    """Ingest PubMed XML files (*.xml, *.xml.gz) and MEDLINE exports (.nbib), or folders.

    Files are applied in NCBI's order, by the number in their pubmedYYnNNNN names across
    folders (baseline, then update files), then other files by path; a later record for a
    PMID replaces an earlier one and DeleteCitation removes it everywhere. Other files
    (.md5, README, partial downloads, hidden files in a folder) and second copies of a file
    are set aside and listed. Re-running skips files already ingested (known by content, not
    name) and retries failed ones; an interrupted run resumes.
    """
    if download == "mesh":
        _download_mesh(ctx, inputs, mirror, as_json=as_json)
        return
    from ingest.pipeline import IngestSummary

    clock = StageClock(IngestSummary())
    try:
        stopped = run_ingest(
            paths_of(ctx).ensure(),
            clock,
            list(inputs),
            download=download,
            limit=limit,
            mirror=mirror,
            connections=connections,
            embeddings=embeddings,
            skip_space_check=skip_space_check,
            delete_downloads=delete_downloads,
            no_encode=no_encode,
            profile=profile,
            device=device,
            index_factory=index_factory,
            jobs=jobs,
            quiet=as_json,
            citations=citations,
        )
    except (Exception, KeyboardInterrupt) as exc:
        clock.stop()
        if as_json and not isinstance(exc, click.ClickException):
            emit_json(clock.report(exc, stopped_in=clock.running))
        raise
    clock.stop()
    summary = clock.summary
    if stopped is None and not summary.ok:
        stopped = IngestFailed(
            f"{len(summary.failures)} input(s) failed; fix or remove them and run ingest again"
        )
    if as_json:
        emit_json(clock.report(stopped))
    else:
        from medsearch.commands.render import print_summary

        print_summary(summary)
    if stopped is not None:  # after the summary: what did arrive is in the store
        raise stopped


def _download_mesh(
    ctx: click.Context, inputs: tuple[Path, ...], mirror: str | None, *, as_json: bool
) -> None:
    """``--download mesh``: fetch NLM's newest MeSH (resumable) and import it."""
    from ingest.mesh_download import MESH_MIRROR, download_mesh
    from medsearch.commands.mesh import import_files

    if inputs:
        raise UsageError("--download mesh takes no input files (`medsearch mesh import` does)")
    paths = paths_of(ctx).ensure()
    year, files = download_mesh(paths.downloads / "mesh", mirror or MESH_MIRROR)
    result = import_files(paths, files)
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"MeSH {year}: {result['descriptors']:,} descriptors and"
        f" {result['supplementals']:,} supplementary concepts installed from"
        f" {', '.join(p.name for p in files)}"
    )


def run_ingest(
    paths: Paths,
    clock: StageClock,
    files: list[Path],
    *,
    download: str | None,
    limit: int | None,
    mirror: str | None,
    connections: int | None,
    embeddings: str | None,
    skip_space_check: bool,
    delete_downloads: bool,
    no_encode: bool,
    profile: str | None,
    device: str,
    index_factory: str | None,
    jobs: int | None,
    quiet: bool,
    citations: Path | None = None,
) -> BaseException | None:
    """The ingest itself, counting into ``clock.summary`` and timing each stage as it
    goes. Returns what stopped a download, if anything did."""
    from medsearch.commands.progress import cli_progress

    if not (files or download or embeddings or citations or paths.store.exists()):
        raise UsageError(
            "give PubMed files or directories, --download baseline|updates, or --embeddings"
            " (with none of these, ingest brings the indexes of an existing corpus up to"
            " date: encodes what --no-encode left, rebuilds a missing lexical index)"
        )
    if (limit or mirror or connections) and not download:
        raise UsageError("--limit, --mirror and --connections go with --download")
    from ingest.download_ahead import CONNECTIONS

    connections = connections or CONNECTIONS
    from medsearch.config import load_ingest_settings
    from medsearch.lock import write_lock

    delete_downloads = delete_downloads or load_ingest_settings(paths).delete_downloads
    summary = clock.summary
    stopped: BaseException | None = None
    with write_lock(paths, "ingest"), cli_progress(enabled=not quiet) as progress:
        wanted: list[RemoteFile] = []
        if download:
            with clock.stage("download"):
                wanted, dest = plan_download(
                    paths,
                    download,
                    limit,
                    mirror,
                    encode=not no_encode,
                    space_check=not skip_space_check,
                    keep_downloads=not delete_downloads,
                    connections=connections,
                )
        from ingest.pipeline import Ingestor

        with clock.stage("prepare"):  # a store upgrade or a lexical rebuild happens here
            ing = Ingestor(paths, jobs=default_jobs() if jobs is None else jobs, progress=progress)
        with ing:
            if download:
                stopped = download_and_ingest(
                    ing,
                    files,
                    wanted,
                    dest,
                    progress,
                    clock,
                    delete=delete_downloads,
                    connections=connections,
                )
            elif files:
                with clock.stage("ingest"):
                    ing.run(files, summary=summary)
            if stopped is None:
                from medsearch.index.citations import refresh

                with clock.stage("citations"):
                    if citations is not None:
                        summary.notes.append(import_citations(ing.store, citations, progress))
                    refresh(paths.citations, ing.store.conn)
            if stopped is None and (embeddings or not no_encode):
                from ingest.encode_stage import run_vectors_stage

                with clock.stage("vectors"):
                    notes, encoded = run_vectors_stage(
                        paths,
                        ing.store,
                        profile=profile,
                        device=device,
                        index_factory=index_factory,
                        embeddings=embeddings,
                        encode=not no_encode,
                        progress=progress,
                    )
                summary.notes.extend(notes)
                summary.encoded = encoded
            summary.notes.extend(rerank_offer(paths, ing.store.count()))
    return stopped


def import_citations(store: Store, path: Path, progress: Progress) -> str:
    """Import an Open Citation Collection file; the summary's line about it."""
    from ingest.citations import import_collection

    report = import_collection(store, path, progress)
    if report.skipped:
        return f"citations: {report.file} was imported before; skipped"
    return (
        f"citations: {report.edges_read:,} edges read from {report.file},"
        f" {report.edges_added:,} new to the graph"
    )


def rerank_offer(paths: Paths, articles: int) -> list[str]:
    """Once the corpus is big enough, say how to train the Delta reranker (or retrain it)."""
    from medsearch.rerank.loading import MIN_ARTICLES, fit

    if articles < MIN_ARTICLES:
        return []
    from medsearch.status import vector_manifests

    profile = vector_manifests(paths).get("articles", {}).get("profile")
    model = fit(paths.rerank_dir / "delta", articles, profile)
    if model.directory is None:
        return [
            f"{articles:,} articles: train the fast Delta reranker on them with"
            " `medsearch rerank train` (minutes on a CPU; searches then rerank the top 500)"
        ]
    why = "its files are unreadable" if model.unreadable is not None else model.stale
    if why is None:
        return []
    return [f"the Delta reranker no longer fits ({why}): run `medsearch rerank train`"]
