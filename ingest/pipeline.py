# Over 450 lines: the Ingestor's units, ledger and crash recovery are one transaction
# discipline; parsing is workers.py, the lexical side lexical_sync.py.
"""parse -> store -> lexical index (-> encode -> vector index); resumable, file by file.

The unit of work is one input file, or a few consecutive ones that the parsers have
already finished (:data:`UNIT_FILES`: on many cores the writer is the ceiling and each
commit stalls it). A unit's records, deletions and ledger rows (one per file) are
written to SQLite in one transaction, and its changes to the tantivy index are committed
just after that transaction commits (with the last file's name as the commit payload).
So:

- an interruption (Ctrl-C, kill, crash, full disk) before the SQLite commit leaves the
  store and the index as they were; re-running re-applies the unit's files, and because
  every tantivy change is "delete this PMID, add this document" the re-application is
  idempotent;
- one between the two commits leaves the unit's PMIDs listed in the store, and the next
  ingest re-indexes them from it before anything else (:mod:`ingest.lexical_sync`);
- a file that fails to parse (always a unit of its own: a file joins a unit only once
  it is parsed whole) is rolled back in both places, recorded as failed in the ledger,
  and retried on the next run while the other files go on.

Files may also arrive while a run goes on (:class:`Incoming`: ``ingest --download``
verifies each file and hands it over while the next downloads); each is parsed as it
comes, and a unit never waits for one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.download import md5_of
from ingest.incoming import Incoming, InputFile
from ingest.inputs import Ignored, Reason, describe, discover
from ingest.lexical_sync import open_in_step, split_if_large
from ingest.summary import IngestSummary
from ingest.workers import Arrivals, ParserPool
from medsearch.errors import DiskFullError, ParseError, UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress, Progress
from medsearch.records import MAX_PMID
from medsearch.store import ApplyCounts, Store, refs
from medsearch.store.backfill import fill as fill_articles
from medsearch.store.db import is_disk_full

if TYPE_CHECKING:
    from ingest.workers import Message


Source = tuple[InputFile, Iterable["Message"]]
"""One input and its parser's messages."""


UNIT_FILES = 4
"""Files written in one unit at most: one SQLite transaction and one tantivy commit.
A commit stalls the writer (tantivy flushes its segments; ~0.3-0.6 s a baseline file on
16 cores, by the model in BENCHMARKS.md), and on many cores that writer is the ceiling,
so files already parsed whole are written together; a file still parsing starts a unit
of its own, so on 2 cores, or with single files, a unit is one file."""
UNIT_ARTICLES = 100_000
"""Articles after which a unit takes no more files: what a crash or Ctrl-C can lose
(seconds of work) and what tantivy holds staged (~1.3 KB a staged delete)."""
HASH_THREADS = 8
"""Threads that read the input files' MD5s as a run starts (at most one a core)."""


@dataclass(frozen=True, slots=True)
class _Applied:
    """One file written inside a unit, counted in the summary once the unit commits."""

    item: InputFile
    articles: int
    books: int
    counts: ApplyCounts
    rejected: int = 0
    """Records (or DeleteCitation entries) left out: their PMID is not one."""
    bad_pmids: tuple[str, ...] = ()
    graphless: int = 0
    """Records kept without their reference lists: their PMID is past the graph's."""


class Ingestor:
    """Applies PubMed files to the store and the lexical index of one data home."""

    def __init__(
        self,
        paths: Paths,
        *,
        jobs: int = 2,
        progress: Progress | None = None,
    ) -> None:
        self.paths = paths.ensure()
        self.jobs = jobs
        self.progress: Progress = progress or NullProgress()
        self.store = Store(paths.store)
        fill_articles(self.store, self.progress)  # a store an older medsearch wrote
        self.lexical = open_in_step(self.paths, self.store, self.progress)

    def close(self) -> None:
        self.lexical.close()
        self.store.close()

    def __enter__(self) -> Ingestor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self,
        inputs: Sequence[Path],
        *,
        incoming: Incoming | None = None,
        summary: IngestSummary | None = None,
    ) -> IngestSummary:
        """Apply ``inputs`` (files and folders), then the files ``incoming`` brings as
        they land (a download running beside the ingest), in order, unit by unit.

        Counts go into ``summary`` when given, so a caller still knows what was written
        when the run raises (a full disk): each unit is counted once it is committed."""
        started = time.monotonic()
        summary = IngestSummary() if summary is None else summary
        todo: list[InputFile] = []
        if inputs or incoming is None:
            found = discover(inputs)
            summary.failures.extend(found.missing)
            summary.ignored.extend(found.ignored)
            if not found.files and not found.missing and incoming is None:
                where = ", ".join(str(p) for p in inputs)
                also = f" (ignored {describe(found.ignored)})" if found.ignored else ""
                raise UsageError(f"no PubMed files (XML, MEDLINE .nbib) in {where}{also}")
            todo = self._plan(found.files, summary)
        feed = Arrivals((f.path for f in todo), ended=incoming is None)
        by_path = {f.path: f for f in todo}
        if incoming is not None:
            done = frozenset(e.checksum for e in self.store.files.entries() if e.status == "done")
            incoming.attach(feed, by_path, done)
        self.progress.start(
            "files", "Files", total=summary.files + (incoming.expected if incoming else 0)
        )
        self.progress.advance("files", summary.skipped)
        self.progress.start("articles", "Articles", total=None)
        pool = ParserPool(
            feed,
            jobs=self.jobs,
            dictionary=self.store.dictionary,
            spool_root=self.paths.tmp,
        )
        files = iter(pool)
        held: list[tuple[InputFile, Iterator[Message], bool]] = []  # starts the next unit

        def take() -> tuple[InputFile, Iterator[Message], bool] | None:
            if held:
                return held.pop()
            nxt = next(files, None)
            return None if nxt is None else (by_path[nxt[0]], nxt[1], pool.parsed_whole())

        def more(unit_files: int, unit_articles: int) -> Source | None:
            if not held and pool.in_flight() < 2:
                return None  # the next file has not arrived yet: a unit never waits for one
            nxt = take()
            if nxt is None:
                return None
            item, messages, whole = nxt
            if whole and unit_files < UNIT_FILES and unit_articles < UNIT_ARTICLES:
                return item, messages
            held.append(nxt)
            return None

        try:
            while (first := take()) is not None:
                for item, in_store in self._apply_unit((first[0], first[1]), summary, more=more):
                    if incoming is not None:
                        incoming.finished(item, in_store)
                self.lexical = split_if_large(self.paths, self.store, self.progress, self.lexical)
        finally:
            pool.close()
            if incoming is not None:
                summary.files += incoming.added
                summary.skipped += incoming.skipped
                self.progress.advance("files", incoming.skipped)
            self.progress.finish("articles")
            self.progress.finish("files")
            summary.seconds = time.monotonic() - started
        return summary

    def _plan(self, files: Sequence[Path], summary: IngestSummary) -> list[InputFile]:
        """The files still to apply, in order; counts the rest in ``summary``.

        Files are told apart by content (MD5), as the ledger keys them: a file whose
        bytes were ingested before is done whatever its name or folder now (a re-download
        of an update file), the second of two identical files is a duplicate, and two
        different files that share a name (``a/pubmed.xml``, ``b/pubmed.xml``: efetch and
        the PubMed web export name every file so) are both applied.
        """
        ledger = self.store.files.entries()
        done = {e.checksum for e in ledger if e.status == "done"}
        done_at = {e.path: e.checksum for e in ledger if e.status == "done"}
        first: dict[str, Path] = {}
        todo: list[InputFile] = []
        for path, item in zip(files, self._identify(files), strict=True):
            if isinstance(item, OSError):
                summary.failures.append((str(path), f"cannot read: {item.strerror or item}"))
                summary.files += 1
                continue
            kept = first.setdefault(item.checksum, path)
            if kept != path:
                summary.ignored.append(Ignored(path, Reason.DUPLICATE, same_as=kept))
                continue
            summary.files += 1
            if item.checksum in done:
                summary.skipped += 1
                continue
            if done_at.get(str(path.absolute()), item.checksum) != item.checksum:
                self.progress.message(f"{path} changed since it was ingested; re-applying")
            todo.append(item)
        return todo

    def _identify(self, files: Sequence[Path]) -> list[InputFile | OSError]:
        """Each file's size and MD5, read by a few threads at once (hashlib lets go of the
        GIL): the baseline is 51.8 GB, ~80 s of hashing on one core before the first
        parse, ~10 s on eight. A file that cannot be read gets its error instead."""

        def one(path: Path) -> InputFile | OSError:
            try:
                return InputFile(path, path.stat().st_size, md5_of(path))
            except OSError as exc:
                return exc

        if len(files) < 2:
            return [one(path) for path in files]
        self.progress.start("checksums", "Reading checksums", total=len(files))
        found: list[InputFile | OSError] = []
        workers = min(HASH_THREADS, os.cpu_count() or 1, len(files))
        pool = ThreadPoolExecutor(workers, thread_name_prefix="md5")
        try:
            for item in pool.map(one, files):
                found.append(item)
                self.progress.advance("checksums")
        finally:  # Ctrl-C: the files not yet started are dropped, not read to the end
            pool.shutdown(wait=False, cancel_futures=True)
            self.progress.finish("checksums")
        return found

    def apply(
        self,
        item: InputFile,
        messages: Iterable[Message],
        summary: IngestSummary,
        *,
        fresh: bool = False,
    ) -> None:
        """Apply one source's messages as one all-or-nothing unit, recorded in the ledger.

        Also the entry point for non-XML sources (BEIR corpora for ``medsearch eval``),
        so they go through the same store and index code as PubMed. ``fresh``: the
        lexical index holds none of the source's PMIDs, so documents are added, not
        upserted (tantivy keeps each staged delete, ~1.3 KB, until the unit's commit).
        """
        self._apply_unit((item, messages), summary, fresh=fresh)

    def _apply_unit(
        self,
        first: Source,
        summary: IngestSummary,
        *,
        more: Callable[[int, int], Source | None] = lambda files, articles: None,
        fresh: bool = False,
    ) -> list[tuple[InputFile, bool]]:
        """Apply ``first`` and the files ``more`` adds (asked with the unit's files and
        articles so far) in one SQLite transaction and one tantivy commit, each file with
        its own ledger row. ``more`` adds only files already parsed whole, which cannot
        fail to parse, so a parse failure is always the unit's only file; a full disk,
        Ctrl-C or a crash before the store's commit loses the whole unit, which the next
        run applies again, and one after it is mended by the next run's
        :func:`~medsearch.index.lexical.catch_up.replay_unindexed`.
        Returns the unit's files, each with whether the store now has it."""
        applied: list[_Applied] = []
        source: Source | None = first
        try:
            with self.store.transaction():
                while source is not None:
                    applied.append(self._apply_file(*source, fresh=fresh))
                    self.progress.advance("files")
                    source = more(len(applied), sum(a.articles for a in applied))
        except ParseError as exc:
            self.lexical.rollback()
            failed = source[0] if source is not None else first[0]
            summary.failures.append((str(failed.path), str(exc)))
            self.progress.message(f"failed: {exc}")
            self._record_failure(failed, str(exc))
            self.progress.advance("files")  # a failed file is done with for this run
            for earlier in applied:  # cannot happen from run(): see the docstring
                self.progress.message(f"{earlier.item.name} will be applied on the next run")
            return [(a.item, False) for a in applied if a.item != failed] + [(failed, False)]
        except BaseException as exc:
            self.lexical.rollback()
            if is_disk_full(exc) and not isinstance(exc, DiskFullError):
                names = [a.item.name for a in applied]
                if source is not None and source[0].name not in names:
                    names.append(source[0].name)
                what = "it" if len(names) == 1 else "them"
                raise DiskFullError(
                    f"disk full while ingesting {', '.join(names)}; nothing from {what} was kept"
                ) from exc
            raise
        self._index_unit(applied)
        summary.commits += 1
        for a in applied:
            summary.ingested += 1
            summary.articles += a.articles
            summary.books += a.books
            summary.added += a.counts.added
            summary.replaced += a.counts.replaced
            summary.deleted += a.counts.deleted
            if a.rejected:
                summary.rejected += a.rejected
                summary.warnings.append(_rejected_warning(a))
            if a.graphless:
                summary.warnings.append(_graphless_warning(a))
        return [(a.item, True) for a in applied]

    def _index_unit(self, applied: Sequence[_Applied]) -> None:
        """Commit the lexical index after the store has committed the unit, then clear
        the unit's PMIDs from the store's ``unindexed`` list. Committing the index first
        would let a failed store commit leave it holding what the store never got."""
        try:
            self.lexical.commit(payload=applied[-1].item.name)
            self.store.unindexed.clear()
        except BaseException as exc:
            self.lexical.rollback()
            if is_disk_full(exc):
                names = ", ".join(a.item.name for a in applied)
                raise DiskFullError(
                    f"disk full while indexing {names}; the store has them, and the next"
                    " `medsearch ingest` indexes them once there is space"
                ) from exc
            raise

    def _apply_file(self, item: InputFile, messages: Iterable[Message], *, fresh: bool) -> _Applied:
        """One file's messages, inside the unit's transaction, with its ledger row."""
        t0 = time.monotonic()
        articles = books = rejected = graphless = 0
        added = replaced = deleted = 0
        bad_pmids: tuple[str, ...] = ()
        file_id = self._record(item, "done")
        for kind, payload in messages:
            if kind == "articles":
                counts = self.store.upsert_rows(
                    payload.rows, file_id=file_id, cited=payload.cited or None
                )
                self.store.unindexed.mark([row[0] for row in payload.rows])
                lexical = self.lexical
                put = lexical.add_documents if fresh else lexical.upsert_documents
                put(payload.documents)  # built by the parsers
                if counts.noticed:  # stored articles a notice in the batch flagged
                    from medsearch.index.lexical import schema as ls

                    self.store.unindexed.mark(list(counts.noticed))
                    flagged = self.store.get_many(counts.noticed).values()
                    lexical.upsert_documents([ls.document(ls.article_fields(a)) for a in flagged])
                articles += len(payload)
                graphless += sum(
                    1
                    for row, cited in zip(payload.rows, payload.cited, strict=False)
                    if cited and not refs.in_graph(row[0])
                )
                books += payload.books
                added += counts.added
                replaced += counts.replaced
                self.progress.advance("articles", len(payload))
            elif kind == "delete":
                deleted += self.store.delete(payload, file_id=file_id)
                self.store.unindexed.mark(payload)
                self.lexical.delete(payload)
            elif kind == "skipped":
                rejected, bad_pmids = payload
            elif kind == "error":
                problem, position = payload
                raise ParseError(str(item.path), problem, position)
        counts = ApplyCounts(added, replaced, deleted)
        self._record(
            item,
            "done",
            articles=articles,
            counts=counts,
            books=books,
            seconds=time.monotonic() - t0,
        )
        return _Applied(item, articles, books, counts, rejected, bad_pmids, graphless)

    def _record_failure(self, item: InputFile, error: str) -> None:
        with self.store.transaction():
            self._record(item, "failed", error=error)

    def _record(self, item: InputFile, status: str, **outcome: Any) -> int:
        """The ledger row of ``item`` (inside the caller's transaction)."""
        return self.store.files.record(
            name=item.name,
            path=str(item.path.absolute()),
            size=item.size,
            checksum=item.checksum,
            status=status,
            **outcome,
        )


def _rejected_warning(applied: _Applied) -> str:
    """One line on what a file lost to invalid PMIDs.

    Such a record is skipped and the rest of its file kept (the file is done, not
    failed): PubMed never sends a PMID of 0, 20 digits or ``²``, so one means a damaged
    or hostile record, and failing the file would hold back its ~30,000 good records on
    every run while the bad one stays as it is.
    """
    n = applied.rejected
    records = "record" if n == 1 else "records"
    shown = ", ".join(repr(text) for text in applied.bad_pmids)
    return (
        f"{applied.item.name}: skipped {n:,} {records} without a valid PMID"
        + (f" ({shown})" if shown else "")
        + f"; a PMID is a positive whole number up to {MAX_PMID}"
    )


def _graphless_warning(applied: _Applied) -> str:
    """One line on the records kept without their references: a PMID past the citation
    graph's ``uint32`` (valid for the store) cannot be a graph key, and holding the
    whole graph in ``uint64`` for PMIDs PubMed will not reach for decades would double
    its size."""
    n = applied.graphless
    records = "record" if n == 1 else "records"
    return (
        f"{applied.item.name}: kept {n:,} {records} without {'its' if n == 1 else 'their'}"
        f" references: the citation graph holds PMIDs up to {refs.GRAPH_MAX}"
    )
