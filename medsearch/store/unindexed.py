"""The PMIDs the lexical index may not have yet (the ``unindexed`` table, migration 8).

A unit of ingest commits the store, then the lexical index (:mod:`ingest.pipeline`). Each
write or deletion lists its PMIDs here in the store's transaction, and the index's commit
clears the list, so a crash between the two commits leaves exactly the PMIDs the next
ingest must re-index from the store (:mod:`ingest.lexical_sync`).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any


class Unindexed:
    """The list of one store connection. ``execute`` is the store's own, which turns a
    full disk into a :class:`~medsearch.errors.DiskFullError`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        execute: Callable[[str, tuple[Any, ...]], sqlite3.Cursor],
    ) -> None:
        self.conn = conn
        self._execute = execute

    def mark(self, pmids: Sequence[int]) -> None:
        """List ``pmids``, inside the transaction that writes or deletes them."""
        if pmids:
            packed = array("q", pmids)
            if sys.byteorder == "big":
                packed.byteswap()
            self._execute("INSERT INTO unindexed(pmids) VALUES (?)", (packed.tobytes(),))

    def batches(self) -> Iterator[list[int]]:
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

    def count(self) -> int:
        """PMIDs listed: at most one unit's, as each unit's index commit clears them."""
        row = self.conn.execute("SELECT SUM(length(pmids)) FROM unindexed").fetchone()
        return int(row[0] or 0) // 8

    def clear(self) -> None:
        """The lexical index has committed every listed PMID (a transaction of its own)."""
        self._execute("DELETE FROM unindexed", ())
