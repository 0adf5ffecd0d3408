# Over 450 lines by a little: the Store is one connection whose writes (records, SQL
# columns, deletions, change logs) share its transactions; the ledger, dictionary,
# sampling and catch-up list live in their own modules.
"""The SQLite article store: records, their SQL columns, deletions, what changed.

The file ledger is :mod:`medsearch.store.ledger`, the compression dictionary
:mod:`medsearch.store.dictionary`, samples of the records
:mod:`medsearch.store.sampling`.

Why plain ``sqlite3`` and not sqlite-utils: ingest writes ~40M rows through one
``executemany`` per batch inside one transaction per input file (or a few files the
parsers finished, see :mod:`ingest.pipeline`), and each file's ledger row is written in
the same transaction. That all-or-nothing unit is what makes an
interrupted ingest resumable, and it is clearest with the standard library's explicit
``BEGIN``/``COMMIT``.

Records are kept as zstd-compressed JSON (see :mod:`medsearch.store.codec`): at 40M
citations the JSON is ~120 GB raw and ~45-55 GB compressed one record at a time, ~35%
less with a dictionary trained on the corpus's own records
(:mod:`medsearch.store.dictionary`). Decoding a page of hits costs microseconds either
way.

The records live in ``records``; ``articles`` holds the same articles' plain columns for
SQL (:mod:`medsearch.store.columns`). The writer keeps the two in step inside the same
transaction (both upserted and deleted together) and the parsers compute both, so the
writer only inserts. Its page cache is large (:data:`WRITER_CACHE_KIB`) because the
indexes of ``articles`` take each new row at a different page (one per journal, one per
MeSH heading).
"""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsearch.errors import DiskFullError, NotFoundError, StoreError
from medsearch.notices import with_notices
from medsearch.records import Article
from medsearch.store import changes, codec, refs
from medsearch.store.columns import (
    ARTICLES_UPSERT,
    MESH_INSERT,
    TYPES_INSERT,
    ArticleRow,
    article_row,
    late_notices,
    side_rows,
)
from medsearch.store.damage import damaged, is_damage, reading
from medsearch.store.dictionary import Dictionary
from medsearch.store.ledger import Ledger
from medsearch.store.readonly import open_readonly
from medsearch.store.rows import RECORDS_UPSERT, Row, decoded, row_of, unpack
from medsearch.store.schema import (
    COUNT_KEY,
    QUEUE_KEY,
    RECORDS_SCHEMA,
    migrate,
    schema_version,
)
from medsearch.store.unindexed import Unindexed

WRITER_CACHE_KIB = 256 * 1024
"""The writer's SQLite page cache (allocated as used). At PubMed's ~30K journals and ~30K
MeSH headings the pages new rows land on are ~100-200 MB; with SQLite's 2 MB default the
writer's SQL cost per article at 1M PubMed-like articles was 30 us instead of 26
(BENCHMARKS.md)."""
SQL_CHUNK = 500  # parameters per IN (...) query: well below SQLite's limit


def is_disk_full(exc: BaseException) -> bool:
    """No space left, or the user's disk quota spent: the same remedy either way."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "disk is full" in text or "no space left" in text


@dataclass(frozen=True, slots=True)
class ApplyCounts:
    added: int = 0
    replaced: int = 0
    deleted: int = 0
    noticed: tuple[int, ...] = ()
    """Stored articles a notice in the batch was about, their records given its link
    (the lexical index must re-index them: :meth:`Store.add_late_notices`)."""


class Store:
    """One connection to ``store.sqlite``; a single writer at a time (the ingest process)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        if readonly and not path.exists():
            raise StoreError(f"no article store at {path}; run `medsearch ingest` first")
        try:
            if readonly:
                self.conn = open_readonly(path)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.conn = sqlite3.connect(path, isolation_level=None)
                self.conn.execute("PRAGMA journal_mode=WAL")
                self.conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA busy_timeout=10000")
            if not readonly:
                migrate(self.conn)
            elif not self.conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' LIMIT 1"
            ).fetchone():
                size = path.stat().st_size
                raise StoreError(
                    f"the article store {path} is empty ({size:,} bytes, no tables); run"
                    " `medsearch ingest` to build it"
                )
            elif schema_version(self.conn) < RECORDS_SCHEMA:
                # A store an older medsearch wrote and no ingest has upgraded yet (this
                # connection cannot migrate it): its records are still in ``articles``.
                self.conn.execute("CREATE TEMP VIEW records AS SELECT * FROM main.articles")
            self._dictionary = Dictionary(self.conn, self._execute, self._write)
            self.reload_queues()
            self.files = Ledger(self.conn, path, self._execute)
            """The file ledger: which input files are in the store."""
            self.unindexed = Unindexed(self.conn, self._execute)
            """PMIDs written or deleted that the lexical index may not have yet."""
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            if is_disk_full(exc):
                raise DiskFullError(f"disk full while opening the store {path}") from exc
            if is_damage(exc):
                raise damaged(path, exc) from exc
            raise StoreError(f"cannot open the article store {path}: {exc}") from exc

    def close(self) -> None:
        self.conn.close()

    def reload_queues(self) -> None:
        """Read which kinds of vectors have their changed PMIDs queued (``QUEUE_KEY``):
        every write and deletion then queues its PMIDs for each, in its transaction."""
        has_queue = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='stale_queue'"
        ).fetchone()
        rows = (
            self.conn.execute(
                "SELECT substr(key, ?) FROM meta WHERE key LIKE ? ORDER BY key",
                (len(QUEUE_KEY) + 1, QUEUE_KEY + "%"),
            ).fetchall()
            if has_queue
            else []
        )
        self._queued: tuple[str, ...] = tuple(r[0] for r in rows)

    def _queue(self, pmids: Sequence[int]) -> None:
        if self._queued:
            self._write(
                "INSERT OR IGNORE INTO stale_queue(kind, pmid) VALUES (?, ?)",
                [(kind, p) for kind in self._queued for p in pmids],
            )

    @property
    def dictionary_id(self) -> int:
        """The zstd dictionary new records are compressed with (0: plain zstd)."""
        return self._dictionary.id

    def dictionary(self) -> bytes | None:
        """The dictionary's bytes, for parser processes to compress with (None: none yet)."""
        return self._dictionary.data()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All-or-nothing: a file's records and its ledger row land together or not at all."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            self._dictionary.load()  # one trained here was rolled back too
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self._dictionary.load()
                if is_disk_full(exc):
                    raise DiskFullError(f"disk full while writing {self.path}") from exc
                # the disk or the file system refused the write (an I/O error, a file
                # size limit): nothing was kept, and the line says where
                raise StoreError(f"cannot write the article store {self.path}: {exc}") from exc

    # -- writing (inside a transaction) ----------------------------------------------------

    def upsert(self, articles: Sequence[Article], *, file_id: int | None = None) -> ApplyCounts:
        """Insert or replace; a later record for a PMID wins, as NCBI's update files intend."""
        return self.upsert_rows(
            [row_of(a) for a in articles],
            file_id=file_id,
            cited=[refs.pack_refs(a.references) for a in articles],
        )

    def upsert_rows(
        self,
        prepared: Sequence[Row],
        *,
        file_id: int | None = None,
        cited: Sequence[bytes | None] | None = None,
    ) -> ApplyCounts:
        """:meth:`upsert` for rows built by :func:`row_of` in a parser process, their data
        the JSON or (with the dictionary the store gave the parser) a zstd blob of it.
        ``cited``: each row's reference-list PMIDs packed by :func:`refs.pack` (None, or
        no list: the records cite nothing), replacing what the earlier records cited."""
        pmids = [r[0] for r in prepared]
        existing = self._existing(pmids)
        if not self._dictionary.id:
            self._dictionary.learn(prepared, self.count)
        d = self._dictionary.id
        self._write(
            RECORDS_UPSERT,
            [
                (p, v, y, h, file_id, codec.recompressed(data, d))
                for p, v, y, h, data, _ in prepared
            ],
        )
        self.write_articles([row[5] for row in prepared])
        packed = cited if cited is not None else [None] * len(pmids)
        self._guarded(refs.write_lists, list(zip(pmids, packed, strict=True)))
        self._write("DELETE FROM deleted WHERE pmid = ?", [(p,) for p in pmids])
        self._queue(pmids)
        fresh = [p for p in dict.fromkeys(pmids) if p not in existing]
        if file_id is not None:
            self._record_changes(file_id, changes.ADDED, fresh)
            self._record_changes(file_id, changes.REPLACED, sorted(existing))
        replaced = len(existing)
        added = len(fresh)
        self._add_to_count(added)
        noticed = self.add_late_notices([row[5] for row in prepared])
        return ApplyCounts(added=added, replaced=replaced, noticed=noticed)

    def add_late_notices(self, rows: Sequence[ArticleRow]) -> tuple[int, ...]:
        """Give each stored article that a notice among ``rows`` is about (a retraction's
        ``RetractionOf`` ...) the link its own record would carry, when it lacks it:
        NLM re-issues the article with the link, but not always in the same file, and
        until then the article must not read as clean. Returns the PMIDs changed; their
        text is unchanged (no vector is stale), their lexical documents are."""
        late = late_notices(rows)
        if not late:
            return ()
        changed = []
        for pmid, article in self.get_many(sorted(late)).items():
            updated = with_notices(article, late[pmid])
            if updated is None:
                continue
            data = codec.recompressed(codec.encode(updated.to_dict()), self._dictionary.id)
            self._execute("UPDATE records SET data = ? WHERE pmid = ?", (data, pmid))
            changed.append(updated)
        if changed:
            self.write_articles([article_row(a) for a in changed])
        return tuple(a.pmid for a in changed)

    def write_articles(self, rows: Sequence[ArticleRow]) -> None:
        """Upsert ``articles`` rows and their side-table rows (inside a transaction)."""
        self._write(ARTICLES_UPSERT, rows)
        mesh, types = side_rows(rows)
        self._write(MESH_INSERT, mesh)
        self._write(TYPES_INSERT, types)

    def delete(self, pmids: Sequence[int], *, file_id: int | None = None) -> int:
        """Remove PMIDs (a ``DeleteCitation``); returns how many were present.

        Their ``encoded`` rows stay until the vector stage removes the vectors too: those
        rows are how it finds what to remove.
        """
        present = self._existing(pmids)
        gone = [(p,) for p in pmids]
        self._add_to_count(-len(present))
        self._write("DELETE FROM records WHERE pmid = ?", gone)
        self._write("DELETE FROM articles WHERE pmid = ?", gone)
        self._guarded(refs.delete, list(pmids))
        self._write(
            "INSERT INTO deleted(pmid, file_id) VALUES (?, ?) "
            "ON CONFLICT(pmid) DO UPDATE SET file_id=excluded.file_id",
            [(p, file_id) for p in pmids],
        )
        self._queue(pmids)
        if file_id is not None:
            self._record_changes(file_id, changes.DELETED, sorted(present))
        return len(present)

    def _record_changes(self, file_id: int, change: str, pmids: Sequence[int]) -> None:
        """One ``file_changes`` row (see :mod:`medsearch.store.changes`), in the
        transaction that makes the change."""
        if pmids:
            self._execute(
                "INSERT INTO file_changes(file_id, change, pmids) VALUES (?, ?, ?)",
                (file_id, change, changes.pack(pmids)),
            )

    def last_change(self) -> int:
        """The newest ``file_changes`` row id: where a new saved search starts reading."""
        with reading(self.path):
            return changes.last_change(self.conn)

    def changes_after(self, after: int, *, baseline: bool = True) -> changes.Changes:
        """What the files applied after change row ``after`` added, replaced, deleted
        (``baseline=False``: leaving out what baseline files brought)."""
        with reading(self.path):
            return changes.changes_after(self.conn, after, baseline=baseline)

    def _existing(self, pmids: Sequence[int]) -> set[int]:
        found: set[int] = set()
        for i in range(0, len(pmids), SQL_CHUNK):
            chunk = pmids[i : i + SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self.conn.execute(
                f"SELECT pmid FROM records WHERE pmid IN ({marks})", tuple(chunk)
            )
            found.update(r[0] for r in rows)
        return found

    def _write(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> None:
        try:
            self.conn.executemany(sql, rows)
        except sqlite3.OperationalError as exc:
            if is_disk_full(exc):
                raise DiskFullError(f"disk full while writing {self.path}") from exc
            raise

    def _guarded(self, write: Any, *args: Any) -> Any:
        """``write(conn, *args)`` with a full disk reported as such."""
        try:
            return write(self.conn, *args)
        except sqlite3.OperationalError as exc:
            if is_disk_full(exc):
                raise DiskFullError(f"disk full while writing {self.path}") from exc
            raise

    def add_collection_edges(self, citing: Any, cited: Any) -> int:
        """Open Citation Collection edges (numpy arrays sorted by citing), inside a
        transaction; returns how many were new."""
        return int(self._guarded(refs.add_collection, citing, cited))

    def _execute(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Cursor:
        try:
            return self.conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            if is_disk_full(exc):
                raise DiskFullError(f"disk full while writing {self.path}") from exc
            raise

    # -- reading -------------------------------------------------------------------------

    def get(self, pmid: int) -> Article:
        with reading(self.path, pmid):
            row = self.conn.execute("SELECT data FROM records WHERE pmid = ?", (pmid,)).fetchone()
        if row is None:
            if self.is_deleted(pmid):
                raise NotFoundError(f"PMID {pmid} was deleted by a PubMed update file")
            raise NotFoundError(f"PMID {pmid} is not in the store")
        return unpack(row[0], pmid)

    def get_many(self, pmids: Sequence[int]) -> dict[int, Article]:
        """Records for the PMIDs that exist (missing ones are simply absent)."""
        return {pmid: unpack(blob, pmid) for pmid, blob in self._blobs(pmids)}

    def _blobs(self, pmids: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        """A chunk's rows are fetched before any is handed out: a caller that stops early
        (a record failed to decode) must not leave a cursor behind the store's close."""
        for i in range(0, len(pmids), SQL_CHUNK):
            chunk = tuple(pmids[i : i + SQL_CHUNK])
            marks = ",".join("?" * len(chunk))
            with reading(self.path):
                rows = self.conn.execute(
                    f"SELECT pmid, data FROM records WHERE pmid IN ({marks})", chunk
                ).fetchall()
            yield from rows

    def abstracts_many(self, pmids: Sequence[int]) -> dict[int, Article]:
        """As :meth:`get_many`, but each article holds only its PMID and abstract: what
        splitting into sentences needs. Sentence search splits the articles of hundreds
        of candidate sentences a query, and building whole records was most of reading
        them (~52 of ~77 us an article, profiled)."""
        return {
            pmid: Article.from_dict(
                {"pmid": pmid, "abstract": decoded(blob, pmid).get("abstract", ())}
            )
            for pmid, blob in self._blobs(pmids)
        }

    def sort_fields_many(self, pmids: Sequence[int]) -> dict[int, dict[str, Any]]:
        """What sorting reads of each stored record, as plain values: ``pub_date`` (a
        dict of year, month, day ...), ``journal``, ``journal_abbrev`` and
        ``first_author`` (a dict, or None). Sorting a search reads up to 10,000 records:
        building whole :class:`Article` values would double the cost of decoding them."""
        out: dict[int, dict[str, Any]] = {}
        for pmid, blob in self._blobs(pmids):
            data = decoded(blob, pmid)
            authors = data.get("authors") or ()
            out[pmid] = {
                "pub_date": data.get("pub_date") or {},
                "journal": data.get("journal") or "",
                "journal_abbrev": data.get("journal_abbrev") or "",
                "first_author": authors[0] if authors else None,
            }
        return out

    def existing(self, pmids: Sequence[int]) -> set[int]:
        return self._existing(pmids)

    def is_deleted(self, pmid: int) -> bool:
        with reading(self.path, pmid):
            row = self.conn.execute("SELECT 1 FROM deleted WHERE pmid = ?", (pmid,)).fetchone()
        return row is not None

    def iter_articles(self, *, batch: int = 2000, after: int = 0) -> Iterator[list[Article]]:
        """Every article in PMID order, a batch at a time (keyset pagination, flat memory)."""
        last = after
        while True:
            with reading(self.path):
                rows = self.conn.execute(
                    "SELECT pmid, data FROM records WHERE pmid > ? ORDER BY pmid LIMIT ?",
                    (last, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [unpack(blob, pmid) for pmid, blob in rows]

    def count(self) -> int:
        """How many articles the store holds: kept in ``meta`` by the writer, so asking
        costs nothing at 40M (a store no ingest has upgraded yet is counted)."""
        with reading(self.path):
            row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (COUNT_KEY,)).fetchone()
            if row is not None:
                return int(row[0])
            return int(self.conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])

    def _add_to_count(self, change: int) -> None:
        """Inside the transaction that adds or removes the records (rolled back with them)."""
        if change:
            self._execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?",
                (change, COUNT_KEY),
            )

    def count_deleted(self) -> int:
        with reading(self.path):
            return int(self.conn.execute("SELECT COUNT(*) FROM deleted").fetchone()[0])

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total
