"""What each applied file changed, by PMID: the ``file_changes`` rows the writer keeps.

A saved search asks "what entered the corpus since I last ran"; a re-run search asks
"what changed since then". Both read the rows after a point (a row id), so the cost
follows the update files applied since, not the corpus: a daily file is ~30K PMIDs,
~240 KB of rows, against 40.9M records that no one should scan.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePath

ADDED = "added"
REPLACED = "replaced"
DELETED = "deleted"


def pack(pmids: Iterable[int]) -> bytes:
    """PMIDs as little-endian 64-bit integers (the ``unindexed`` table's form too)."""
    packed = array("q", pmids)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tobytes()


def unpack(blob: bytes) -> list[int]:
    packed = array("q", blob)
    if sys.byteorder == "big":
        packed.byteswap()
    return packed.tolist()


@dataclass(frozen=True, slots=True)
class Changes:
    """The net effect of the files applied after one point, in the order they applied.

    Seen from the point the window starts: a PMID added and then replaced is ``added``;
    one added and then deleted is no change; one there at the start and then deleted is
    ``deleted``, and ``replaced`` if it was sent again after. A baseline file (one
    applied from a folder named ``baseline``, as NCBI and ``ingest --download`` name
    it) is a snapshot, not a revision: the
    records it sends again are not ``replaced`` (moving to a new year's baseline would
    otherwise list every article as revised).
    """

    added: frozenset[int]
    replaced: frozenset[int]
    deleted: frozenset[int]
    last: int
    """The id of the last row read: the point the next reader starts after."""
    files: tuple[str, ...] = ()
    """The names of the files the rows came from, in the order they applied."""

    @property
    def empty(self) -> bool:
        return not (self.added or self.replaced or self.deleted)


def last_change(conn: sqlite3.Connection) -> int:
    """The id of the newest row (0 when none): a new reader's starting point."""
    if not _has_table(conn):
        return 0
    row = conn.execute("SELECT MAX(id) FROM file_changes").fetchone()
    return int(row[0] or 0)


def changes_after(conn: sqlite3.Connection, after: int, *, baseline: bool = True) -> Changes:
    """The net :class:`Changes` of the rows after ``after``; an index range read.

    ``baseline=False`` leaves out what baseline files brought (a snapshot of the
    literature, not news): a saved search made on a home of one baseline file, which
    then ingests the other 1,333, is not handed 40M "new" articles (nor are they held
    in memory to find that out).
    """
    added: set[int] = set()
    replaced: set[int] = set()
    deleted: set[int] = set()
    files: dict[int, str] = {}
    if not _has_table(conn):
        return Changes(frozenset(), frozenset(), frozenset(), after)
    newest = conn.execute("SELECT MAX(id) FROM file_changes").fetchone()[0]
    last = max(after, int(newest or 0))
    rows = conn.execute(
        "SELECT c.id, c.change, c.pmids, c.file_id, f.name, f.path FROM file_changes c"
        " LEFT JOIN files f ON f.id = c.file_id WHERE c.id > ?"
        " AND (? OR (instr(COALESCE(f.path, ''), '/baseline/') = 0"
        " AND instr(COALESCE(f.path, ''), '\\baseline\\') = 0))"
        " ORDER BY c.id",
        (after, baseline),
    )
    for _, change, blob, file_id, name, path in rows:
        files.setdefault(file_id, name or f"file {file_id}")
        pmids = unpack(blob)
        if change == REPLACED and PurePath(path or "").parent.name == "baseline":
            deleted.difference_update(pmids)
            continue
        if change == ADDED:
            for p in pmids:
                if p in deleted:  # there at the start, gone, and back: a new record of it
                    deleted.discard(p)
                    replaced.add(p)
                else:
                    added.add(p)
        elif change == REPLACED:
            replaced.update(p for p in pmids if p not in added)
        else:
            for p in pmids:
                if p in added:  # came and went within the window: no change at all
                    added.discard(p)
                else:
                    replaced.discard(p)
                    deleted.add(p)
    return Changes(
        frozenset(added), frozenset(replaced), frozenset(deleted), last, tuple(files.values())
    )


def _has_table(conn: sqlite3.Connection) -> bool:
    """A read-only store an older medsearch wrote has no change rows yet."""
    return (
        conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='file_changes'"
        ).fetchone()
        is not None
    )
