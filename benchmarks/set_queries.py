"""Dense search inside a set: the exact and the oversample paths of a set query.

A set query's dense side orders its set (``medsearch.retrieval.sets``): a set up to
``SET_EXACT_MAX`` is listed and its own vectors scored exactly (``allowed_ids``); a
larger one is searched through the whole collection ``DEEPEN`` times deeper, keeping
the members. Here the set is a random subset of synthetic clustered 768-d vectors, its
membership a bitmap standing in for the lexical index's check (so the tantivy cost of
listing or checking a set is NOT included: ``benchmarks/lexical.py`` measures counts
and top-k at scale). Recall@10 is against exact scoring of the whole set, and the plain
first stage (no set) is timed in the same run for the ratio.

    python benchmarks/set_queries.py --n 200000 --sizes 10,1000,20000,50000,100000
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.vectors import clustered
from medsearch.index.vector import VectorCollection
from medsearch.retrieval.dense import DEEPEN
from medsearch.retrieval.sets import dense_method


def p95(values: list[float]) -> float:
    return float(np.percentile(np.asarray(values), 95) * 1000)


def oversampled(
    col: VectorCollection, q: np.ndarray, k: int, member: np.ndarray
) -> list[tuple[int, float]]:
    """The dense side's oversample path, membership from a bitmap (the searcher asks
    ``LexicalIndex.members`` instead)."""
    hits: list[tuple[int, float]] = []
    for factor in DEEPEN:
        raw = col.search(q, k * factor)[0]
        hits = [(i, s) for i, s in raw if member[i]][:k]
        if len(hits) >= k or len(raw) < k * factor:
            break
    return hits


def run(n: int, sizes: list[int], queries: int, k: int, seed: int) -> list[dict[str, object]]:
    x = clustered(n, 768, 1_000, seed, normalise=True)
    rng = np.random.default_rng(seed + 1)
    qs = x[rng.integers(0, n, queries)] + 0.05 * rng.normal(size=(queries, 768)).astype(np.float32)
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        col = VectorCollection.open(Path(tmp) / "v", dim=768, profile="bench", create=True)
        for lo in range(0, n, 50_000):
            col.add(np.arange(lo, min(n, lo + 50_000)), x[lo : lo + 50_000])
        col.commit()
        plain = []
        for q in qs:
            t = time.perf_counter()
            col.search(q, k)
            plain.append(time.perf_counter() - t)
        for size in sizes:
            ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int64)
            member = np.zeros(n, dtype=bool)
            member[ids] = True
            stored = x[ids]
            for method in ("exact", "oversample"):
                times, recalls = [], []
                for q in qs:
                    t = time.perf_counter()
                    if method == "exact":
                        got = col.search(q, k, allowed_ids=ids)[0]
                    else:
                        got = oversampled(col, q, k, member)
                    times.append(time.perf_counter() - t)
                    truth = set(ids[np.argsort(-(stored @ q))[:10]].tolist())
                    top = {i for i, _ in got[:10]}
                    recalls.append(len(top & truth) / min(10, size))
                rows.append(
                    {
                        "n": n,
                        "set": size,
                        "method": method,
                        "chosen": dense_method(size) == method,
                        "p95_ms": round(p95(times), 2),
                        "recall@10": round(float(np.mean(recalls)), 3),
                        "plain_p95_ms": round(p95(plain), 2),
                        "ratio": round(p95(times) / p95(plain), 2),
                    }
                )
        col.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--sizes", default="10,1000,20000,50000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for row in run(args.n, sizes, args.queries, args.k, args.seed):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
