"""``watches.sqlite``: the saved searches and the hits each run found.

Its own file, not the corpus store: watches are the user's state, written by ``watch``
commands and the TUI while an update may hold the store's writer lock, and reading or
marking hits must never wait for that lock. A run's hits and the point it read the
store's change rows up to are written in one transaction, so a run that is killed
leaves the watch as it was and the next run reads the same changes again; a hit is
keyed by (watch, PMID), so reading them twice never lists one twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path

from medsearch.errors import MedsearchError, NotFoundError, StoreError, UsageError
from medsearch.store.transactions import transaction
from medsearch.watches.model import (
    REFERENCES,
    Watch,
    WatchHit,
    check_name,
    filters_from_json,
    filters_to_json,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS watches (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    query TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('set', 'ranked', 'references')),
    mode TEXT,
    filters TEXT NOT NULL DEFAULT '{}',
    threshold REAL,
    replaced INTEGER NOT NULL DEFAULT 0,
    created TEXT NOT NULL,
    last_run TEXT,
    last_change INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS hits (
    watch_id INTEGER NOT NULL REFERENCES watches(id) ON DELETE CASCADE,
    pmid INTEGER NOT NULL,
    change TEXT NOT NULL,
    score REAL NOT NULL DEFAULT 0,
    found TEXT NOT NULL,
    read_at TEXT,
    notice INTEGER,
    PRIMARY KEY (watch_id, pmid)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS hits_found ON hits(watch_id, found);
CREATE TABLE IF NOT EXISTS watch_refs (
    watch_id INTEGER NOT NULL REFERENCES watches(id) ON DELETE CASCADE,
    pmid INTEGER NOT NULL,
    known TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (watch_id, pmid)
) WITHOUT ROWID;
"""

_SELECT = (
    "SELECT w.name, w.query, w.kind, w.mode, w.filters, w.threshold, w.replaced, w.created,"
    " w.last_run, w.last_change,"
    " (SELECT COUNT(*) FROM hits h WHERE h.watch_id = w.id AND h.read_at IS NULL),"
    " (SELECT COUNT(*) FROM hits h WHERE h.watch_id = w.id)"
    " FROM watches w"
)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class WatchBook:
    """One connection to ``watches.sqlite`` (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = sqlite3.connect(path, isolation_level=None, timeout=10)
            self.conn.execute("PRAGMA journal_mode=WAL")
            # a commit lost to a power cut only means the next run reads its changes again
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.executescript(SCHEMA)
            _upgrade(self.conn)
        except (OSError, sqlite3.DatabaseError) as exc:
            raise StoreError(f"cannot open the saved searches {path}: {exc}") from exc

    @classmethod
    def reading(cls, path: Path) -> WatchBook | None:
        """The book opened read-only, for listing (a read-only data home lists its
        watches; opening it to write created the WAL files there, and refused); None
        when there is none yet. A book that needs an upgrade is opened to write it."""
        from medsearch.store.readonly import open_readonly

        if not path.exists():
            return None
        try:
            conn = open_readonly(path)
            (sql,) = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'watches'"
            ).fetchone() or ("",)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(hits)")}
        except (OSError, sqlite3.DatabaseError, MedsearchError) as exc:
            raise StoreError(f"cannot read the saved searches {path}: {exc}") from exc
        if "'references'" not in sql or "notice" not in columns:
            conn.close()
            return cls(path)
        book = cls.__new__(cls)
        book.path, book.conn = path, conn
        return book

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> WatchBook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def transaction(self) -> AbstractContextManager[None]:
        return transaction(self.conn)

    # -- watches -------------------------------------------------------------------------

    def add(self, watch: Watch) -> None:
        check_name(watch.name)
        try:
            self.conn.execute(
                "INSERT INTO watches(name, query, kind, mode, filters, threshold, replaced,"
                " created, last_run, last_change) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (
                    watch.name,
                    watch.query,
                    watch.kind,
                    watch.mode,
                    filters_to_json(watch.filters),
                    watch.threshold,
                    int(watch.replaced),
                    watch.created,
                    watch.last_run,
                    watch.last_change,
                ),
            )
        except sqlite3.IntegrityError:
            raise UsageError(
                f"a watch called {watch.name!r} exists; `medsearch watch rm {watch.name}`"
                " first, or choose another name"
            ) from None

    def get(self, name: str) -> Watch:
        row = self.conn.execute(f"{_SELECT} WHERE w.name = ?", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no watch called {name!r}; `medsearch watch list` shows them")
        return _watch(row)

    def all(self) -> list[Watch]:
        return [_watch(r) for r in self.conn.execute(f"{_SELECT} ORDER BY w.name")]

    def remove(self, name: str) -> None:
        with self.transaction():
            found = self.conn.execute("SELECT id FROM watches WHERE name = ?", (name,)).fetchone()
            if found is None:
                raise NotFoundError(f"no watch called {name!r}; `medsearch watch list` shows them")
            self.conn.execute("DELETE FROM hits WHERE watch_id = ?", (found[0],))
            self.conn.execute("DELETE FROM watch_refs WHERE watch_id = ?", (found[0],))
            self.conn.execute("DELETE FROM watches WHERE id = ?", (found[0],))

    def set_threshold(self, name: str, threshold: float) -> Watch:
        watch = self.get(name)
        if watch.threshold is None:
            what = (
                "a reference list: every new notice about its references is news"
                if watch.kind == REFERENCES
                else "a set query: every new article in its set is new"
            )
            raise UsageError(
                f"watch {name!r} is {what}; a threshold is for plain-word (ranked) watches"
            )
        self.conn.execute("UPDATE watches SET threshold = ? WHERE name = ?", (threshold, name))
        return self.get(name)

    # -- reference lists ------------------------------------------------------------------

    def add_references(self, watch: Watch, known: dict[int, set[tuple[str, int | None]]]) -> None:
        """Save a reference-list watch with its PMIDs and the notices each already has
        (those are never news to it)."""
        with self.transaction():
            self.add(watch)
            watch_id = self._id(watch.name)
            self.conn.executemany(
                "INSERT OR REPLACE INTO watch_refs(watch_id, pmid, known) VALUES (?,?,?)",
                [(watch_id, p, json.dumps(sorted(k, key=str))) for p, k in known.items()],
            )

    def references(self, name: str) -> dict[int, set[tuple[str, int | None]]]:
        """A reference-list watch's PMIDs, each with the notices a run has seen."""
        rows = self.conn.execute(
            "SELECT pmid, known FROM watch_refs WHERE watch_id = ?", (self._id(name),)
        )
        return {int(p): {(str(s), n) for s, n in json.loads(k)} for p, k in rows}

    def record_notices(
        self,
        name: str,
        news: Sequence[tuple[int, str, int | None]],
        known: dict[int, set[tuple[str, int | None]]],
        last_change: int,
        when: str,
    ) -> None:
        """Keep a reference-list run: its hits (a reference flagged again, say corrected
        then retracted, is unread again with the new status), the notices now known for
        the references it looked at, and how far it read; one transaction."""
        with self.transaction():
            watch_id = self._id(name)
            for pmid, status, notice in news:
                self.conn.execute(
                    "INSERT INTO hits(watch_id, pmid, change, score, found, notice)"
                    " VALUES (?,?,?,0,?,?) ON CONFLICT(watch_id, pmid) DO UPDATE SET"
                    " change = excluded.change, found = excluded.found,"
                    " notice = excluded.notice, read_at = NULL",
                    (watch_id, pmid, status, when, notice),
                )
            self.conn.executemany(
                "UPDATE watch_refs SET known = ? WHERE watch_id = ? AND pmid = ?",
                [(json.dumps(sorted(k, key=str)), watch_id, p) for p, k in known.items()],
            )
            self.conn.execute(
                "UPDATE watches SET last_run = ?, last_change = MAX(last_change, ?) WHERE id = ?",
                (when, last_change, watch_id),
            )

    # -- hits ----------------------------------------------------------------------------

    def record_run(
        self, name: str, hits: Sequence[tuple[int, str, float]], last_change: int, when: str
    ) -> list[int]:
        """Store one run's hits and how far it read, together; the PMIDs new to this
        watch (one it already holds is not listed again)."""
        fresh: list[int] = []
        with self.transaction():
            watch_id = self._id(name)
            for pmid, change, score in hits:
                cur = self.conn.execute(
                    "INSERT OR IGNORE INTO hits(watch_id, pmid, change, score, found)"
                    " VALUES (?,?,?,?,?)",
                    (watch_id, pmid, change, score, when),
                )
                if cur.rowcount:
                    fresh.append(pmid)
            self.conn.execute(
                "UPDATE watches SET last_run = ?, last_change = MAX(last_change, ?) WHERE id = ?",
                (when, last_change, watch_id),
            )
        return fresh

    def hits(self, name: str, *, unread: bool = False, since: str | None = None) -> list[WatchHit]:
        """A watch's hits, newest run first and best first within a run."""
        sql = "SELECT pmid, change, score, found, read_at, notice FROM hits WHERE watch_id = ?"
        args: list[object] = [self._id(name)]
        if unread:
            sql += " AND read_at IS NULL"
        if since is not None:
            sql += " AND found >= ?"
            args.append(since)
        sql += " ORDER BY found DESC, score DESC, pmid DESC"
        return [
            WatchHit(int(p), c, float(s), f, r is not None, None if n is None else int(n))
            for p, c, s, f, r, n in self.conn.execute(sql, args)
        ]

    def mark_read(self, name: str, pmids: Sequence[int] | None = None) -> int:
        """Mark ``pmids`` (all unread when None) read; how many were unread."""
        watch_id = self._id(name)
        when = now()
        with self.transaction():
            if pmids is None:
                cur = self.conn.execute(
                    "UPDATE hits SET read_at = ? WHERE watch_id = ? AND read_at IS NULL",
                    (when, watch_id),
                )
                return cur.rowcount
            total = 0
            for pmid in pmids:
                cur = self.conn.execute(
                    "UPDATE hits SET read_at = ? WHERE watch_id = ? AND pmid = ?"
                    " AND read_at IS NULL",
                    (when, watch_id, pmid),
                )
                total += cur.rowcount
            return total

    def _id(self, name: str) -> int:
        row = self.conn.execute("SELECT id FROM watches WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFoundError(f"no watch called {name!r}; `medsearch watch list` shows them")
        return int(row[0])


def _upgrade(conn: sqlite3.Connection) -> None:
    """Bring a book made before reference-list watches up to :data:`SCHEMA`: the kind's
    CHECK cannot be altered in place, so the table is rebuilt (SQLite's documented
    procedure, foreign keys off so no hit is cascaded away) and ``hits`` gains its
    ``notice`` column."""
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'watches'").fetchone()
    if "'references'" not in sql:
        conn.execute("PRAGMA foreign_keys=OFF")
        with transaction(conn):
            body = sql.split("(", 1)[1].replace(
                "('set', 'ranked')", "('set', 'ranked', 'references')"
            )
            conn.execute(f"CREATE TABLE watches_new ({body}")
            conn.execute("INSERT INTO watches_new SELECT * FROM watches")
            conn.execute("DROP TABLE watches")
            conn.execute("ALTER TABLE watches_new RENAME TO watches")
        conn.execute("PRAGMA foreign_keys=ON")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(hits)")}
    if "notice" not in columns:
        conn.execute("ALTER TABLE hits ADD COLUMN notice INTEGER")


def _watch(row: tuple[object, ...]) -> Watch:
    (
        name,
        query,
        kind,
        mode,
        filters,
        threshold,
        replaced,
        created,
        last_run,
        last,
        unread,
        total,
    ) = row
    return Watch(
        name=str(name),
        query=str(query),
        kind=str(kind),
        mode=None if mode is None else str(mode),
        filters=filters_from_json(str(filters)),
        threshold=None if threshold is None else float(threshold),  # type: ignore[arg-type]
        replaced=bool(replaced),
        created=str(created),
        last_run=None if last_run is None else str(last_run),
        last_change=int(last),  # type: ignore[call-overload]
        unread=int(unread),  # type: ignore[call-overload]
        total=int(total),  # type: ignore[call-overload]
    )
