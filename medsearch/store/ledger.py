"""The file ledger: which input files the store holds, each known by its content.

One row per file in ``files``, written in the same transaction as the file's records
(:mod:`ingest.pipeline`), so a file is either in the store and "done" in the ledger, or
neither: that is what lets an interrupted ingest resume and a re-run skip what is done.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medsearch.store.damage import reading

if TYPE_CHECKING:
    from medsearch.store.db import ApplyCounts

LEDGER_SELECT = (
    "SELECT name, path, size, checksum, status, articles, added, replaced, deleted,"
    " books, error, finished_at, seconds FROM files"
)
"""A ledger row, in :class:`LedgerEntry`'s field order."""


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


class Ledger:
    """The ``files`` table of one store connection.

    ``execute`` is the store's own, which turns a full disk into a
    :class:`~medsearch.errors.DiskFullError`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        execute: Callable[[str, tuple[Any, ...]], sqlite3.Cursor],
    ) -> None:
        self.conn = conn
        self.path = path
        self._execute = execute

    def entries(self) -> list[LedgerEntry]:
        """Every row, by name."""
        with reading(self.path):
            rows = self.conn.execute(f"{LEDGER_SELECT} ORDER BY name, id").fetchall()
        return [LedgerEntry(*r) for r in rows]

    def latest(self, name: str) -> LedgerEntry | None:
        """The latest row of a file called ``name`` (several files may be)."""
        with reading(self.path):
            row = self.conn.execute(
                f"{LEDGER_SELECT} WHERE name = ? ORDER BY finished_at DESC, id DESC", (name,)
            ).fetchone()
        return LedgerEntry(*row) if row else None

    def record(
        self,
        *,
        name: str,
        path: str,
        size: int,
        checksum: str,
        status: str,
        articles: int = 0,
        counts: ApplyCounts | None = None,
        books: int = 0,
        error: str | None = None,
        seconds: float = 0.0,
    ) -> int:
        """Create or update the row of the file whose content is ``checksum`` (inside the
        caller's transaction); its id.

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
            counts.added if counts else 0,
            counts.replaced if counts else 0,
            counts.deleted if counts else 0,
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
