"""The search history's own SQLite file, ``<home>/history.sqlite``.

Kept apart from the article store on purpose: recording a search must never wait for
(or take) the corpus writer's lock, a history can be cleared without touching the
corpus, and a read-only home (a corpus on shared or read-only media) still searches:
there the history is read if one exists and nothing is recorded. WAL with
``synchronous=NORMAL``: a line costs an append to the log, not an fsync, and a CLI
search and an open TUI can record at the same time.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from medsearch.errors import HomeError
from medsearch.history.entries import Entry, filters_dict, filters_from, pack_pmids, unpack_pmids
from medsearch.paths import Paths
from medsearch.store.snapshot import Snapshot
from medsearch.store.transactions import transaction

MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE searches (
        number INTEGER PRIMARY KEY,
        at TEXT NOT NULL,
        source TEXT NOT NULL,
        command TEXT NOT NULL,
        typed TEXT NOT NULL,
        query TEXT,
        mode TEXT,
        filters TEXT NOT NULL DEFAULT '{}',
        total INTEGER,
        counted TEXT,
        baseline_year INTEGER,
        last_file TEXT,
        file_mark INTEGER,
        articles INTEGER,
        pmids BLOB
    );
    """,
    """
    ALTER TABLE searches ADD COLUMN translation TEXT;
    """,
)
_COLUMNS = (
    "number, at, source, command, typed, query, mode, filters, total, counted,"
    " baseline_year, last_file, file_mark, articles, pmids, translation"
)
_TRANSLATION_FROM = 2
"""The migration that added the MeSH translation: a history read (never migrated) in a
read-only home may predate it, and its lines then have none."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class HistoryStore:
    """One connection to the history file; open it with :func:`open_history`."""

    def __init__(self, conn: sqlite3.Connection, path: Path, version: int) -> None:
        self.conn = conn
        self.path = path
        self.version = version

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> HistoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, entry: Entry) -> int:
        """Append ``entry`` (its ``number`` is ignored); returns its ``#N``."""
        snap = entry.snapshot
        values = (
            entry.at,
            entry.source,
            entry.command,
            entry.typed,
            entry.query,
            entry.mode,
            json.dumps(filters_dict(entry.filters)),
            entry.total,
            entry.counted,
            snap.baseline_year if snap else None,
            snap.last_file if snap else None,
            snap.file_mark if snap else None,
            snap.articles if snap else None,
            None if entry.pmids is None else pack_pmids(entry.pmids),
            entry.translation,
        )
        marks = ",".join("?" * len(values))
        with self._writing():
            cur = self.conn.execute(
                f"INSERT INTO searches({_COLUMNS.split(', ', 1)[1]})"
                f" VALUES ({marks}) RETURNING number",
                values,
            )
            number = int(cur.fetchone()[0])
        return number

    def import_lines(self, lines: list[str]) -> int:
        """Lines of the old one-query-per-line recall file, as entries never run here."""
        rows = [(now(), " ".join(line.split())) for line in lines if line.strip()]
        with self._writing():
            self.conn.executemany(
                "INSERT INTO searches(at, source, command, typed)"
                " VALUES (?, 'imported', 'search', ?)",
                rows,
            )
        return len(rows)

    def entries(self, *, sets: bool = False) -> list[Entry]:
        """Every line, oldest first; the PMID sets only when asked (``sets``)."""
        return list(self.iter_entries(sets=sets))

    def iter_entries(self, *, sets: bool = False) -> Iterator[Entry]:
        """:meth:`entries` one at a time, for a listing that streams (a history of 200K
        lines held as a list, then as a table, took 763 MB and 69 s)."""
        for row in self.conn.execute(self._select()):
            yield self._entry(row, sets)

    def get(self, number: int) -> Entry | None:
        row = self.conn.execute(f"{self._select()} WHERE number = ?", (number,)).fetchone()
        return None if row is None else self._entry(row, True)

    def count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM searches").fetchone()[0])

    def recall(self, limit: int) -> list[str]:
        """The distinct queries typed, oldest first by their latest use (up/down recall;
        similar-articles lines are PMIDs picked from a list, not queries typed)."""
        rows = self.conn.execute(
            "SELECT typed FROM searches WHERE command = 'search'"
            " GROUP BY typed ORDER BY MAX(number) DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [str(r[0]) for r in reversed(rows)]

    def clear(self) -> int:
        """Forget every line; the freed pages are overwritten and the file shrunk, so the
        queries are gone from the disk, not only from the table. Returns how many."""
        gone = self.count()
        self.conn.execute("PRAGMA secure_delete=ON")
        with self._writing():
            self.conn.execute("DELETE FROM searches")
        self.conn.execute("VACUUM")
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return gone

    def _select(self) -> str:
        columns = _COLUMNS
        if self.version < _TRANSLATION_FROM:
            columns = columns.replace("translation", "NULL")
        return f"SELECT {columns} FROM searches"

    def _entry(self, row: tuple[Any, ...], sets: bool) -> Entry:
        (number, at, source, command, typed, query, mode, filters) = row[:8]
        (total, counted, year, last_file, mark, articles, blob, translation) = row[8:]
        snapshot = (
            None
            if articles is None
            else Snapshot(
                baseline_year=year, last_file=last_file, file_mark=mark or 0, articles=articles
            )
        )
        pmids = unpack_pmids(blob) if sets and blob is not None else None
        return Entry(
            number=number,
            at=at,
            command=command,
            typed=typed,
            query=query,
            mode=mode,
            filters=filters_from(json.loads(filters)),
            total=total,
            counted=counted,
            snapshot=snapshot,
            pmids=pmids,
            source=source,
            set_kept=blob is not None,
            translation=translation,
        )

    @contextmanager
    def _writing(self) -> Iterator[None]:
        try:
            with transaction(self.conn):
                yield
        except sqlite3.Error as exc:
            raise HomeError(f"cannot write the search history {self.path}: {exc}") from exc


def writable(paths: Paths) -> bool:
    """Whether this home can take history lines (a read-only home records nothing)."""
    path = paths.history_db
    if path.exists():
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)
    return paths.home.is_dir() and os.access(paths.home, os.W_OK)


def open_history(paths: Paths, *, write: bool = True) -> HistoryStore | None:
    """The history of ``paths``: created on first write, None when it cannot be (``write``
    in a read-only home) or does not exist yet (reading). The old recall file
    (``history.txt``) is imported once, on the first writable open, then removed."""
    path = paths.history_db
    if write and not writable(paths):
        return None
    if not write and not path.exists():
        return None
    try:
        if write:
            if not path.exists():  # private: other users of the machine may read the home
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
        else:
            conn = sqlite3.connect(
                f"file:{path}?mode={_read_mode(path)}",
                uri=True,
                isolation_level=None,
                check_same_thread=False,
            )
            conn.execute("PRAGMA query_only=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=5000")
        store = HistoryStore(conn, path, int(conn.execute("PRAGMA user_version").fetchone()[0]))
        if write:
            _migrate(store)
            _import_flat_file(store, paths.history_file)
        elif store.version < 1:
            conn.close()
            return None
    except (sqlite3.Error, OSError) as exc:
        raise HomeError(f"cannot open the search history {path}: {exc}") from exc
    return store


def _read_mode(path: Path) -> str:
    """How to open the history only to read it: as a writer would where the reader may
    write (closing it then tidies the log files away, as a writer's close does), read-only
    where only the folder is writable (SQLite still needs its ``-shm`` there), and
    ``immutable`` where nothing is: lines still in the owner's write-ahead log are then not
    seen (no writer can be at work in a folder nobody may create that file in)."""
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        return "rw"
    return "ro" if os.access(path.parent, os.W_OK) else "ro&immutable=1"


def _migrate(store: HistoryStore) -> None:
    conn = store.conn
    found = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if found > len(MIGRATIONS):
        raise HomeError(
            f"the search history {store.path} was written by a newer medsearch; upgrade it"
        )
    for number in range(found + 1, len(MIGRATIONS) + 1):
        with store._writing():
            for statement in MIGRATIONS[number - 1].split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number}")
        store.version = number


def _import_flat_file(store: HistoryStore, flat: Path) -> None:
    """The TUI's former recall file, one query a line, becomes the history's first lines."""
    if not flat.exists():
        return
    try:
        lines = flat.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return  # unreadable: left where it is, for the user to look at
    store.import_lines(lines)
    try:
        flat.unlink()
    except OSError as exc:
        raise HomeError(f"imported {flat} into the history but cannot remove it: {exc}") from exc
