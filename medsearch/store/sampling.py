"""Samples of the stored records, read without a full scan at 40M articles: every
Nth PMID (the rerank trainer's corpus sample) and a uniform random draw (``stats``'s
mix of abstracts)."""

from __future__ import annotations

from collections.abc import Iterator

from medsearch.records import Article
from medsearch.store.damage import reading
from medsearch.store.db import Store
from medsearch.store.rows import unpack


def iter_sample(store: Store, every: int, *, batch: int = 2000) -> Iterator[list[Article]]:
    """Every article whose PMID is a multiple of ``every``, a batch at a time, in
    PMID order; only sampled rows decode.

    The rerank trainer's sample of a 40M-article store. Where PMIDs are dense (as
    PubMed's are) the multiples are looked up one by one: a filter on ``pmid %
    every`` would visit every row, i.e. read the whole store (30 GB at 40.9M) for a
    sample of 200K. A sparse store keeps the filter (its multiples are mostly gaps).
    """
    every = max(1, every)
    low, high = pmid_range(store)
    if low is None or high is None:
        return
    first = -(-low // every) * every
    lookups = (high - first) // every + 1
    if every > 1 and lookups <= 4 * (store.count() // every + 1):
        for lo in range(first, high + 1, every * batch):
            wanted = range(lo, min(high, lo + every * (batch - 1)) + 1, every)
            found = store.get_many(list(wanted))
            if found:
                yield [found[p] for p in sorted(found)]
        return
    last = 0
    while True:
        with reading(store.path):
            rows = store.conn.execute(
                "SELECT pmid, data FROM records WHERE pmid > ? AND pmid % ? = 0"
                " ORDER BY pmid LIMIT ?",
                (last, every, batch),
            ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield [unpack(blob, pmid) for pmid, blob in rows]


def pmid_range(store: Store) -> tuple[int | None, int | None]:
    # Two subqueries: SQLite reads a lone MIN or MAX from the primary key's ends, but
    # `SELECT MIN(pmid), MAX(pmid)` scans the table (1.6 s warm at 10M, the whole
    # file cold: `stats` took 14.7 s).
    with reading(store.path):
        low, high = store.conn.execute(
            "SELECT (SELECT MIN(pmid) FROM records), (SELECT MAX(pmid) FROM records)"
        ).fetchone()
    return low, high


def sample(store: Store, n: int, *, seed: int = 0) -> list[bytes]:
    """Up to ``n`` stored records (compressed), drawn uniformly at random.

    PubMed's PMIDs are dense, so random PMIDs in the stored range mostly exist: one
    indexed lookup each, the same cost at 40M articles as at 4K (no full scan). A
    corpus that holds few of its PMID range (10 tries per record found too few) is
    small by that token, and its PMIDs are listed and sampled exactly.
    """
    import random

    low, high = pmid_range(store)
    if low is None or high is None:
        return []
    rng = random.Random(seed)
    found: dict[int, bytes] = {}
    with reading(store.path):
        for _ in range(10 * n):
            if len(found) >= n:
                return list(found.values())
            pmid = rng.randint(low, high)
            row = store.conn.execute("SELECT data FROM records WHERE pmid = ?", (pmid,)).fetchone()
            if row is not None:
                found[pmid] = row[0]
        every = [r[0] for r in store.conn.execute("SELECT pmid FROM records")]
        chosen = rng.sample(every, min(n, len(every)))
        return [
            store.conn.execute("SELECT data FROM records WHERE pmid = ?", (p,)).fetchone()[0]
            for p in chosen
        ]
