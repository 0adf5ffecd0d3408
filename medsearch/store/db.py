"""The SQLite article store: articles, deletions, the file ledger, encoding bookkeeping.

Why plain ``sqlite3`` and not sqlite-utils: ingest writes ~40M rows through one
``executemany`` per batch inside one transaction per input file (or a few files the
parsers finished, see :mod:`ingest.pipeline`), and each file's ledger row is written in
the same transaction. That all-or-nothing unit is what makes an
interrupted ingest resumable, and it is clearest with the standard library's explicit
``BEGIN``/``COMMIT``.

Records are kept as zstd-compressed JSON (see :mod:`medsearch.store.codec`): at 40M
citations the JSON is ~120 GB raw and ~45-55 GB compressed one record at a time, ~35%
less with a dictionary trained on the corpus's own records. The dictionary is trained
once, from the first :data:`TRAIN_RECORDS` records a store receives, stored in the
``dictionaries`` table in the same transaction as the first records that use it, and
never changed after: every later record is compressed with it. Decoding a page of hits
costs microseconds either way.

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
import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
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
from medsearch.store.damage import DamagedRecordError, damaged, is_damage, reading
from medsearch.store.readonly import open_readonly
from medsearch.store.schema import (
    COUNT_KEY,
    QUEUE_KEY,
    RECORDS_SCHEMA,
    migrate,
    schema_version,
)

WRITER_CACHE_KIB = 256 * 1024
"""The writer's SQLite page cache (allocated as used). At PubMed's ~30K journals and ~30K
MeSH headings the pages new rows land on are ~100-200 MB; with SQLite's 2 MB default the
writer's SQL cost per article at 1M PubMed-like articles was 30 us instead of 26
(BENCHMARKS.md)."""
SQL_CHUNK = 500  # parameters per IN (...) query: well below SQLite's limit
TRAIN_RECORDS = 5_000
"""Records the dictionary is trained on (~17 MB of JSON held until then, ~0.4 s to train;
1,000 measured within a point of 4,000). A corpus smaller than this keeps plain zstd."""
RECOMPRESS_MAX = 2 * TRAIN_RECORDS
"""Once trained, a store this small has its earlier records rewritten with the dictionary
(~0.1 s); a larger one (an old store being extended) keeps them as they are."""


def pack(article: Article) -> bytes:
    return codec.compress(codec.encode(article.to_dict()))


def decoded(blob: bytes, pmid: int | None = None) -> dict[str, Any]:
    """A stored record's fields; one whose bytes no longer decode is a
    :class:`DamagedRecordError` that names ``pmid`` (the bytes cannot be trusted to)."""
    try:
        return codec.decode(blob)
    except DamagedRecordError as exc:
        raise exc.of(pmid) from exc


def unpack(blob: bytes, pmid: int | None = None) -> Article:
    data = decoded(blob, pmid)
    try:
        return Article.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:  # JSON, but not a record's
        raise DamagedRecordError(f"{type(exc).__name__}: {exc}", pmid) from exc


# (pmid, version, year, content_hash, record JSON or zstd blob, ``articles`` row): built
# in the parser processes (see ingest.prepare for who compresses), so the writer inserts
# both tables' rows as they come.
Row = tuple[int, int, int | None, str, bytes, ArticleRow]

LEDGER_SELECT = (
    "SELECT name, path, size, checksum, status, articles, added, replaced, deleted,"
    " books, error, finished_at, seconds FROM files"
)
"""A ledger row, in :class:`LedgerEntry`'s field order."""

RECORDS_UPSERT = (
    "INSERT INTO records(pmid, version, year, content_hash, file_id, data)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(pmid) DO UPDATE SET version=excluded.version,"
    " year=excluded.year, content_hash=excluded.content_hash,"
    " file_id=excluded.file_id, data=excluded.data"
)


def row_of(article: Article) -> Row:
    data = codec.encode(article.to_dict())
    return (
        article.pmid,
        article.version,
        article.year,
        article.content_hash,
        data,
        article_row(article),
    )


def is_disk_full(exc: BaseException) -> bool:
    """No space left, or the user's disk quota spent: the same remedy either way."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return "disk is full" in text or "no space left" in text


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    name: str
    path: str
    size: int
    checksum: str
    status: str
    articles: int
    added: int
    replaced: int
    deleted: int
    books: int
    error: str | None
    finished_at: str
    seconds: float


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
            elif schema_version(self.conn) < RECORDS_SCHEMA:
                # A store an older medsearch wrote and no ingest has upgraded yet (this
                # connection cannot migrate it): its records are still in ``articles``.
                self.conn.execute("CREATE TEMP VIEW records AS SELECT * FROM main.articles")
            self._dict_id = self._load_dictionaries()
            self.reload_queues()
        except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
            if is_disk_full(exc):
                raise DiskFullError(f"disk full while opening the store {path}") from exc
            if is_damage(exc):
                raise damaged(path, exc) from exc
            raise StoreError(f"cannot open the article store {path}: {exc}") from exc

        self._samples: list[bytes] = []

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

    def _load_dictionaries(self) -> int:
        """Register every stored dictionary for decoding; the newest one compresses (0:
        none yet). A read-only store from before migration 3 simply has none."""
        has_table = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='dictionaries'"
        ).fetchone()
        if not has_table:
            return 0
        newest = 0
        for (data,) in self.conn.execute(
            "SELECT data FROM dictionaries ORDER BY created_at, rowid"
        ):
            newest = codec.register(data)
        return newest

    @property
    def dictionary_id(self) -> int:
        """The zstd dictionary new records are compressed with (0: plain zstd)."""
        return self._dict_id

    def dictionary(self) -> bytes | None:
        """The dictionary's bytes, for parser processes to compress with (None: none yet)."""
        return codec.dictionary_bytes(self._dict_id) if self._dict_id else None

    def _train_from(self, prepared: Sequence[Row]) -> None:
        """Collect the first records; at :data:`TRAIN_RECORDS`, train and store the
        dictionary (inside the caller's transaction: it lands with the records using it)."""
        room = TRAIN_RECORDS - len(self._samples)
        self._samples.extend(codec.plain(row[4]) for row in prepared[:room])
        if len(self._samples) < TRAIN_RECORDS:
            return
        data = codec.train(self._samples)
        self._samples = []
        if data is None:
            return
        dict_id = codec.register(data)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        self._execute(
            "INSERT OR IGNORE INTO dictionaries(id, data, records, created_at) VALUES (?,?,?,?)",
            (dict_id, data, TRAIN_RECORDS, now),
        )
        self._dict_id = dict_id
        if self.count() <= RECOMPRESS_MAX:
            rows = self.conn.execute("SELECT pmid, data FROM records").fetchall()
            self._write(
                "UPDATE records SET data = ? WHERE pmid = ?",
                [(codec.compress(codec.decompress(blob), dict_id), p) for p, blob in rows],
            )

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
            self._dict_id = self._load_dictionaries()  # one trained here was rolled back too
            raise
        else:
            try:
                self.conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                self._dict_id = self._load_dictionaries()
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
        if not self._dict_id:
            self._train_from(prepared)
        d = self._dict_id
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
            data = codec.recompressed(codec.encode(updated.to_dict()), self._dict_id)
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

    def record_file(
        self,
        *,
        name: str,
        path: str,
        size: int,
        checksum: str,
        status: str,
        articles: int = 0,
        counts: ApplyCounts = ApplyCounts(),
        books: int = 0,
        error: str | None = None,
        seconds: float = 0.0,
    ) -> int:
        """Create or update the ledger row of the file whose content is ``checksum``.

        The ledger tells files apart by content, not name: two different files may share
        a name (``a/pubmed.xml``, ``b/pubmed.xml``), and the same bytes under a new name
        or folder (an update file downloaded again) are the same file. A file recorded
        done at ``path`` retires failed rows for earlier contents of that path (the user
        replaced a broken download), so the ledger does not keep reporting them.
        """
        now = datetime.now(UTC).isoformat(timespec="seconds")
        values = (
            name,
            path,
            size,
            checksum,
            status,
            articles,
            counts.added,
            counts.replaced,
            counts.deleted,
            books,
            error,
            now,
            seconds,
        )
        found = self._execute(
            "SELECT id FROM files WHERE checksum = ? ORDER BY status = 'done' DESC, id DESC",
            (checksum,),
        ).fetchone()
        if found is None:
            cur = self._execute(
                "INSERT INTO files(name, path, size, checksum, status, articles, added,"
                " replaced, deleted, books, error, finished_at, seconds)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id",
                values,
            )
            file_id = int(cur.fetchone()[0])
        else:
            file_id = int(found[0])
            self._execute(
                "UPDATE files SET name=?, path=?, size=?, checksum=?, status=?, articles=?,"
                " added=?, replaced=?, deleted=?, books=?, error=?, finished_at=?, seconds=?"
                " WHERE id=?",
                (*values, file_id),
            )
        if status == "done":
            self._execute(
                "DELETE FROM files WHERE path = ? AND status = 'failed' AND id != ?",
                (path, file_id),
            )
        return file_id

    def mark_unindexed(self, pmids: Sequence[int]) -> None:
        """List ``pmids`` as maybe not in the lexical index yet, inside the transaction
        that writes or deletes them (migration 8; see :mod:`ingest.lexical_sync`)."""
        if pmids:
            packed = array("q", pmids)
            if sys.byteorder == "big":
                packed.byteswap()
            self._execute("INSERT INTO unindexed(pmids) VALUES (?)", (packed.tobytes(),))

    def unindexed(self) -> Iterator[list[int]]:
        """The listed PMIDs, a batch at a time (a PMID may come in more than one)."""
        last = 0
        while row := self.conn.execute(
            "SELECT id, pmids FROM unindexed WHERE id > ? ORDER BY id LIMIT 1", (last,)
        ).fetchone():
            last = row[0]
            packed = array("q", row[1])
            if sys.byteorder == "big":
                packed.byteswap()
            yield packed.tolist()

    def count_unindexed(self) -> int:
        """PMIDs listed: at most one unit's, as each unit's index commit clears them."""
        row = self.conn.execute("SELECT SUM(length(pmids)) FROM unindexed").fetchone()
        return int(row[0] or 0) // 8

    def clear_unindexed(self) -> None:
        """The lexical index has committed every listed PMID (a transaction of its own)."""
        self._execute("DELETE FROM unindexed", ())

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

    def iter_sample(self, every: int, *, batch: int = 2000) -> Iterator[list[Article]]:
        """Every article whose PMID is a multiple of ``every``, a batch at a time, in
        PMID order; only sampled rows decode.

        The rerank trainer's sample of a 40M-article store. Where PMIDs are dense (as
        PubMed's are) the multiples are looked up one by one: a filter on ``pmid %
        every`` would visit every row, i.e. read the whole store (30 GB at 40.9M) for a
        sample of 200K. A sparse store keeps the filter (its multiples are mostly gaps).
        """
        every = max(1, every)
        low, high = self._pmid_range()
        if low is None or high is None:
            return
        first = -(-low // every) * every
        lookups = (high - first) // every + 1
        if every > 1 and lookups <= 4 * (self.count() // every + 1):
            for lo in range(first, high + 1, every * batch):
                wanted = range(lo, min(high, lo + every * (batch - 1)) + 1, every)
                found = self.get_many(list(wanted))
                if found:
                    yield [found[p] for p in sorted(found)]
            return
        last = 0
        while True:
            with reading(self.path):
                rows = self.conn.execute(
                    "SELECT pmid, data FROM records WHERE pmid > ? AND pmid % ? = 0"
                    " ORDER BY pmid LIMIT ?",
                    (last, every, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield [unpack(blob, pmid) for pmid, blob in rows]

    def _pmid_range(self) -> tuple[int | None, int | None]:
        # Two subqueries: SQLite reads a lone MIN or MAX from the primary key's ends, but
        # `SELECT MIN(pmid), MAX(pmid)` scans the table (1.6 s warm at 10M, the whole
        # file cold: `stats` took 14.7 s).
        with reading(self.path):
            low, high = self.conn.execute(
                "SELECT (SELECT MIN(pmid) FROM records), (SELECT MAX(pmid) FROM records)"
            ).fetchone()
        return low, high

    def sample(self, n: int, *, seed: int = 0) -> list[bytes]:
        """Up to ``n`` stored records (compressed), drawn uniformly at random.

        PubMed's PMIDs are dense, so random PMIDs in the stored range mostly exist: one
        indexed lookup each, the same cost at 40M articles as at 4K (no full scan). A
        corpus that holds few of its PMID range (10 tries per record found too few) is
        small by that token, and its PMIDs are listed and sampled exactly.
        """
        import random

        low, high = self._pmid_range()
        if low is None or high is None:
            return []
        rng = random.Random(seed)
        found: dict[int, bytes] = {}
        with reading(self.path):
            for _ in range(10 * n):
                if len(found) >= n:
                    return list(found.values())
                pmid = rng.randint(low, high)
                row = self.conn.execute(
                    "SELECT data FROM records WHERE pmid = ?", (pmid,)
                ).fetchone()
                if row is not None:
                    found[pmid] = row[0]
            every = [r[0] for r in self.conn.execute("SELECT pmid FROM records")]
            chosen = rng.sample(every, min(n, len(every)))
            return [
                self.conn.execute("SELECT data FROM records WHERE pmid = ?", (p,)).fetchone()[0]
                for p in chosen
            ]

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

    def ledger(self) -> list[LedgerEntry]:
        with reading(self.path):
            rows = self.conn.execute(f"{LEDGER_SELECT} ORDER BY name, id").fetchall()
        return [LedgerEntry(*r) for r in rows]

    def ledger_entry(self, name: str) -> LedgerEntry | None:
        """The latest ledger row of a file called ``name`` (several files may be)."""
        with reading(self.path):
            row = self.conn.execute(
                f"{LEDGER_SELECT} WHERE name = ? ORDER BY finished_at DESC, id DESC", (name,)
            ).fetchone()
        return LedgerEntry(*row) if row else None

    def size_bytes(self) -> int:
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.path) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total
