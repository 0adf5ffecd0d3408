"""The ``encoded`` table: which articles need vectors, and recording those that got them.

The table says, per (kind, PMID), which text (content hash) and which profile the
stored vectors came from, and how many vectors the article has (sentences: one per
abstract sentence, keyed ``pmid * SENTENCES_PER_ARTICLE + i``). The vector stage reads
it to find stale work and writes it only after the vectors are committed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from medsearch.records import SENTENCES_PER_ARTICLE, Article
from medsearch.store import Store
from medsearch.store.db import SQL_CHUNK, unpack

if TYPE_CHECKING:
    from medsearch.index.sentence_index import SentenceCollection
    from medsearch.index.vector import VectorCollection

    Collection = VectorCollection | SentenceCollection

SENTENCES = "sentences"
CHUNK = 256  # default PMIDs per query


def stale_pmids(
    store: Store, kind: str, profile: str, *, batch: int | None = None
) -> Iterator[list[int]]:
    """PMIDs whose vectors are missing, from another profile, or of an older text."""
    last = 0
    while True:
        rows = store.conn.execute(
            "SELECT a.pmid FROM records a LEFT JOIN encoded e"
            " ON e.kind = ? AND e.pmid = a.pmid"
            " WHERE a.pmid > ? AND (e.pmid IS NULL OR e.content_hash != a.content_hash"
            " OR e.profile != ?) ORDER BY a.pmid LIMIT ?",
            (kind, last, profile, batch or CHUNK),
        ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield [r[0] for r in rows]


def count_stale(store: Store, kind: str, profile: str) -> int:
    row = store.conn.execute(
        "SELECT COUNT(*) FROM records a LEFT JOIN encoded e ON e.kind = ? AND e.pmid = a.pmid"
        " WHERE e.pmid IS NULL OR e.content_hash != a.content_hash OR e.profile != ?",
        (kind, profile),
    ).fetchone()
    return int(row[0])


def sentence_ids(pmid: int, count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64) + pmid * SENTENCES_PER_ARTICLE


def remove_deleted(store: Store, collections: dict[str, Collection]) -> int:
    """Vectors of PMIDs no longer in the store (DeleteCitation) leave every collection."""
    rows = store.conn.execute(
        "SELECT e.kind, e.pmid, e.items FROM encoded e"
        " LEFT JOIN records a ON a.pmid = e.pmid WHERE a.pmid IS NULL"
    ).fetchall()
    if not rows:
        return 0
    for kind, collection in collections.items():
        ids = [
            sentence_ids(pmid, items) if kind == SENTENCES else np.array([pmid], dtype=np.int64)
            for k, pmid, items in rows
            if k == kind
        ]
        if ids:
            collection.remove(np.concatenate(ids))
            collection.commit()
    with store.transaction():
        store.conn.executemany(
            "DELETE FROM encoded WHERE kind = ? AND pmid = ?", [(k, p) for k, p, _ in rows]
        )
    return len({p for _, p, _ in rows})


def fetch(store: Store, pmids: Sequence[int]) -> list[Article]:
    out: list[Article] = []
    for i in range(0, len(pmids), SQL_CHUNK):
        chunk = tuple(pmids[i : i + SQL_CHUNK])
        marks = ",".join("?" * len(chunk))
        out.extend(
            unpack(blob)
            for (blob,) in store.conn.execute(
                f"SELECT data FROM records WHERE pmid IN ({marks}) ORDER BY pmid", chunk
            )
        )
    return out


def previous_items(store: Store, kind: str, pmids: Sequence[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for i in range(0, len(pmids), SQL_CHUNK):
        chunk = tuple(pmids[i : i + SQL_CHUNK])
        marks = ",".join("?" * len(chunk))
        found.update(
            store.conn.execute(
                f"SELECT pmid, items FROM encoded WHERE kind = ? AND pmid IN ({marks})",
                (kind, *chunk),
            ).fetchall()
        )
    return found


def record_hashes(
    store: Store, kind: str, profile: str, rows: Sequence[tuple[int, str, int]]
) -> None:
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO encoded(pmid, kind, profile, content_hash, items) VALUES (?,?,?,?,?)"
            " ON CONFLICT(kind, pmid) DO UPDATE SET profile=excluded.profile,"
            " content_hash=excluded.content_hash, items=excluded.items",
            [(pmid, kind, profile, digest, n) for pmid, digest, n in rows],
        )
