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
from medsearch.store.db import SQL_CHUNK
from medsearch.store.rows import unpack
from medsearch.store.schema import QUEUE_KEY

if TYPE_CHECKING:
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_index import SentenceCollection

    Collection = VectorCollection | SentenceCollection

SENTENCES = "sentences"
CHUNK = 256  # default PMIDs per query


_STALE = "(e.pmid IS NULL OR e.content_hash != a.content_hash OR e.profile != ?)"


def queued(store: Store, kind: str) -> str | None:
    """The profile whose last finished pass of ``kind`` started the store's queue of
    changed PMIDs for it (None: no pass has finished, every record must be checked)."""
    row = store.conn.execute("SELECT value FROM meta WHERE key = ?", (QUEUE_KEY + kind,))
    found = row.fetchone()
    return None if found is None else str(found[0])


def _stale_scope(store: Store, kind: str, profile: str) -> tuple[str, str]:
    """``FROM ... WHERE ...`` of the stale articles (parameters: kind, profile) and the
    PMID column to page on: the store's queue once a pass of ``kind`` under ``profile``
    has finished, else every record joined with ``encoded``."""
    if queued(store, kind) == profile:
        return (
            "FROM stale_queue q JOIN records a ON a.pmid = q.pmid"
            " LEFT JOIN encoded e ON e.kind = q.kind AND e.pmid = q.pmid"
            f" WHERE q.kind = ? AND {_STALE}",
            "q.pmid",
        )
    return (
        f"FROM records a LEFT JOIN encoded e ON e.kind = ? AND e.pmid = a.pmid WHERE {_STALE}",
        "a.pmid",
    )


def stale_pmids(
    store: Store, kind: str, profile: str, *, batch: int | None = None
) -> Iterator[list[int]]:
    """PMIDs whose vectors are missing, from another profile, or of an older text.

    Once a pass of ``kind`` under ``profile`` has finished (:func:`finish_pass`), only
    the PMIDs the store queued since are candidates: a daily update file's 30K changes
    instead of a join of all 40.9M records with ``encoded``.
    """
    scope, column = _stale_scope(store, kind, profile)
    sql = f"SELECT {column} {scope} AND {column} > ? ORDER BY {column} LIMIT ?"
    last = 0
    while True:
        rows = store.conn.execute(sql, (kind, profile, last, batch or CHUNK)).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield [r[0] for r in rows]


def count_stale(store: Store, kind: str, profile: str) -> int:
    scope, _ = _stale_scope(store, kind, profile)
    return int(store.conn.execute(f"SELECT COUNT(*) {scope}", (kind, profile)).fetchone()[0])


def finish_pass(store: Store, kind: str, profile: str) -> None:
    """Every stale PMID of ``kind`` now has committed vectors from ``profile``: empty the
    queue and keep queueing from here (the store writes nothing else meanwhile: the
    vector stage runs in the ingest process, after its files)."""
    with store.transaction():
        store.conn.execute("DELETE FROM stale_queue WHERE kind = ?", (kind,))
        store.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (QUEUE_KEY + kind, profile),
        )
    store.reload_queues()


def sentence_ids(pmid: int, count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64) + pmid * SENTENCES_PER_ARTICLE


def remove_deleted(store: Store, collections: dict[str, Collection]) -> int:
    """Vectors of PMIDs no longer in the store (DeleteCitation) leave every collection."""
    rows: list[tuple[str, int, int]] = []
    for kind in collections:
        if queued(store, kind) is None:  # every vector of kind must be checked
            sql = (
                "SELECT e.kind, e.pmid, e.items FROM encoded e LEFT JOIN records a"
                " ON a.pmid = e.pmid WHERE e.kind = ? AND a.pmid IS NULL"
            )
        else:  # deletions since the last finished pass are queued, whatever the profile
            sql = (
                "SELECT e.kind, e.pmid, e.items FROM stale_queue q JOIN encoded e"
                " ON e.kind = q.kind AND e.pmid = q.pmid LEFT JOIN records a"
                " ON a.pmid = q.pmid WHERE q.kind = ? AND a.pmid IS NULL"
            )
        rows.extend(store.conn.execute(sql, (kind,)).fetchall())
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
