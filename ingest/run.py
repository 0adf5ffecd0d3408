"""One ingest run, the whole of it: download, parse, store, lexical index, citation
graph, vectors.

``medsearch ingest`` and the quick start, ``medsearch eval``'s collections and the
benchmarks all call :func:`ingest`, so a corpus goes in one way whoever asks; the
callers only choose the options and print (or not) what the run reports.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ingest.clock import StageClock
from ingest.incoming import InputFile
from ingest.summary import IngestSummary
from medsearch.errors import UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress, Progress
from medsearch.store.refs import GRAPH_MAX

if TYPE_CHECKING:
    from ingest.download import RemoteFile
    from ingest.pipeline import Ingestor
    from ingest.workers import Message
    from medsearch.store import Store


def default_jobs(cores: int | None = None) -> int:
    """Parser processes: ~60% of the cores, two where there are two, at most 8.

    Per article a parser costs ~230 us, the writer thread ~50 and tantivy's indexing
    threads ~90 since documents arrive split into words (BENCHMARKS.md), so parsers are
    ~60% of ingest's CPU. On 2 cores two parsers beside the writer ingest 4,729-4,779
    articles/s against 3,791-4,147 for one, which had become the critical path. 8
    parsers supply more than one writer thread takes (~14-20K articles/s), so more would
    only fill the spool.
    """
    from ingest.workers import MAX_PARSERS

    cores = cores or os.cpu_count() or 2
    return max(min(cores, 2), min(MAX_PARSERS, round(cores * 0.6)))


@dataclass(frozen=True, slots=True)
class Corpus:
    """A corpus that is not PubMed files (a BEIR folder for ``medsearch eval``), for a
    data home that holds it alone: one ledger entry, its records applied in one unit."""

    item: InputFile
    """The file the ledger knows it by (its MD5 says whether it is in the store)."""
    messages: Callable[[], Iterable[Message]]
    """The writer's messages for its records (:func:`ingest.writer_rows.messages`)."""


@dataclass(frozen=True, slots=True)
class IngestOptions:
    """What one run does; the defaults are ``medsearch ingest``'s."""

    files: tuple[Path, ...] = ()
    """PubMed files and folders, applied in NCBI's order."""
    download: Literal["baseline", "updates"] | None = None
    """Fetch NCBI's files (verified, resumable) and ingest each as it lands."""
    limit: int | None = None
    """With ``download``: at most this many files."""
    mirror: str | None = None
    """With ``download``: base URL instead of NCBI's."""
    connections: int | None = None
    """With ``download``: files fetched at once (None: the download's default)."""
    space_check: bool = True
    """With ``download``: refuse to start when the disk looks too small."""
    delete_downloads: bool | None = None
    """With ``download``: delete each file once it is in the store. None: as the
    config file's ``[ingest] delete_downloads`` says."""
    corpus: Corpus | None = None
    """A non-PubMed corpus to apply instead of files (reused when already stored)."""
    citations: Path | None = None
    """An Open Citation Collection file to import into the citation graph."""
    embeddings: str | None = None
    """NCBI's precomputed MedCPT article embeddings (a directory or URL) to import."""
    encode: bool = True
    """Encode what has no vectors yet (False: lexical search only, encode later)."""
    profile: str | None = None
    device: str = "auto"
    index_factory: str | None = None
    """A Faiss index factory string instead of the automatic choice."""
    sentences: bool = True
    """Encode abstract sentences too (``eval`` measures articles only)."""
    ask_before_cpu: bool = True
    """Leave a backlog too long for this CPU unencoded (:mod:`ingest.cpu_guard`)."""
    needed_by: str | None = None
    """The command that needs every vector (``eval``): a backlog too long for this CPU
    is then an error naming it, not a lexical-only home."""
    jobs: int | None = None
    """Parser processes (None: :func:`default_jobs`; 0: parse in this process)."""
    holder: str = "ingest"
    """The command the data home's write lock names while the run holds it."""


@dataclass(frozen=True, slots=True)
class Report:
    """How a run ended. Counts, notes and stage times are in ``summary``."""

    summary: IngestSummary
    stopped: BaseException | None = None
    """What stopped a download (the files that came are ingested all the same)."""
    articles: int = 0
    """Articles in the store after the run."""
    reused: bool = False
    """The :class:`Corpus` was in the store already, so nothing was applied."""


def ingest(
    paths: Paths,
    options: IngestOptions,
    *,
    progress: Progress | None = None,
    clock: StageClock | None = None,
) -> Report:
    """Run every stage ``options`` asks for, holding the data home's write lock.

    Counts go into ``clock.summary`` and stage times into ``clock`` as they pass, so a
    caller that passes its clock still knows what was written, and in which stage, when
    the run raises (a full disk, Ctrl-C). A ``progress`` that is a context manager
    (the CLI's bars) is entered once the lock is held, so a busy data home's error
    comes alone.
    """
    if not (
        options.files
        or options.download
        or options.embeddings
        or options.citations
        or options.corpus
        or paths.store.exists()
    ):
        raise UsageError(
            "give PubMed files or directories, --download baseline|updates, or --embeddings"
            " (with none of these, ingest brings the indexes of an existing corpus up to"
            " date: encodes what --no-encode left, rebuilds a missing lexical index)"
        )
    if (options.limit or options.mirror or options.connections) and not options.download:
        raise UsageError("--limit, --mirror and --connections go with --download")
    from ingest.download_ahead import CONNECTIONS
    from ingest.pipeline import Ingestor
    from medsearch.config import load_ingest_settings
    from medsearch.lock import write_lock

    connections = options.connections or CONNECTIONS
    delete = options.delete_downloads
    if delete is None:
        delete = load_ingest_settings(paths).delete_downloads
    clock = clock or StageClock(IngestSummary())
    summary = clock.summary
    stopped: BaseException | None = None
    reused = False
    with write_lock(paths, options.holder), _opened(progress or NullProgress()) as progress:
        wanted: list[RemoteFile] = []
        dest = paths.downloads
        if options.download:
            from ingest.download_run import plan_download

            with clock.stage("download"):
                wanted, dest = plan_download(
                    paths,
                    options.download,
                    options.limit,
                    options.mirror,
                    encode=options.encode,
                    space_check=options.space_check,
                    keep_downloads=not delete,
                    connections=connections,
                )
        jobs = default_jobs() if options.jobs is None else options.jobs
        with clock.stage("prepare"):  # a store upgrade or a lexical rebuild happens here
            ing = Ingestor(paths, jobs=jobs, progress=progress)
        with ing:
            if options.download:
                from ingest.download_run import download_and_ingest

                stopped = download_and_ingest(
                    ing,
                    list(options.files),
                    wanted,
                    dest,
                    progress,
                    clock,
                    delete=delete,
                    connections=connections,
                )
            elif options.files:
                with clock.stage("ingest"):
                    ing.run(list(options.files), summary=summary)
            elif options.corpus is not None:
                with clock.stage("ingest"):
                    reused = _apply_corpus(ing, options.corpus, summary)
            if stopped is None and options.corpus is None:  # a corpus has no reference lists
                _citations(ing, options.citations, clock, progress)
            if stopped is None and (options.embeddings or options.encode):
                from ingest.encode_stage import run_vectors_stage

                with clock.stage("vectors"):
                    notes, encoded = run_vectors_stage(
                        paths,
                        ing.store,
                        profile=options.profile,
                        device=options.device,
                        index_factory=options.index_factory,
                        embeddings=options.embeddings,
                        encode=options.encode,
                        progress=progress,
                        sentences=options.sentences,
                        ask_before_cpu=options.ask_before_cpu,
                        needed_by=options.needed_by,
                    )
                summary.notes.extend(notes)
                summary.encoded = encoded
            articles = ing.store.count()
    return Report(summary, stopped, articles, reused)


@contextmanager
def _opened(progress: Progress) -> Iterator[Progress]:
    """``progress``, entered and exited when it is a context manager."""
    if isinstance(progress, AbstractContextManager):
        with progress as entered:
            yield entered
    else:
        yield progress


def _apply_corpus(ing: Ingestor, corpus: Corpus, summary: IngestSummary) -> bool:
    """Apply ``corpus`` unless the ledger has it done; whether it was there already."""
    item = corpus.item
    entry = ing.store.files.latest(item.name)
    if entry is not None and entry.status == "done" and entry.checksum == item.checksum:
        return True
    # The home holds this corpus alone, and the store has none of it: an index a crash
    # left ahead of the store is emptied in the same commit, so the documents are added,
    # not upserted (a multi-million-document corpus would hold ~1.3 KB of staged deletes
    # per document until its one commit).
    if ing.lexical.count():
        ing.lexical.delete_all()
    ing.apply(item, corpus.messages(), summary, fresh=True)
    if summary.failures:
        raise UsageError(f"cannot ingest {item.path}: {summary.failures[0][1]}")
    return False


def _citations(ing: Ingestor, occ: Path | None, clock: StageClock, progress: Progress) -> None:
    """Import an Open Citation Collection file when one is given, then bring the
    citation graph in step with the store's reference lists."""
    from medsearch.index.citations import refresh

    with clock.stage("citations"):
        if occ is not None:
            clock.summary.notes.append(import_citations(ing.store, occ, progress))
        refresh(ing.paths.citations, ing.store.conn, ing.lexical)


def import_citations(store: Store, path: Path, progress: Progress) -> str:
    """Import an Open Citation Collection file; the summary's line about it."""
    from ingest.citations import import_collection

    report = import_collection(store, path, progress)
    if report.skipped:
        return f"citations: {report.file} was imported before; skipped"
    return (
        f"citations: {report.edges_read:,} edges read from {report.file},"
        f" {report.edges_added:,} new to the graph"
        + (
            f"; {report.edges_outside:,} rows naming PMID 0 or one past {GRAPH_MAX:,} left out"
            if report.edges_outside
            else ""
        )
    )
