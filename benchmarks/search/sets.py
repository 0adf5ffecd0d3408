"""Dense search inside a set: the exact and the oversample paths of a set query.

A set query's dense side orders its set (``medsearch.retrieval.sets``): a set up to
``SET_LIST_MAX`` is listed and restricts the vector search (``allowed_ids``: exact while
small, the IVF-PQ index with the set as its ID selector beyond); a larger one is
searched through the whole collection ``DEEPEN`` times deeper, keeping the members.
Here the set is a random subset of synthetic clustered 768-d vectors, its membership
a bitmap standing in for the lexical index's check (so the tantivy cost of
listing or checking a set is NOT included: ``benchmarks/lexical.py`` measures counts
and top-k at scale). Recall@10 is against exact scoring of the whole set, and the plain
first stage (no set) is timed in the same run for the ratio.

    python -m benchmarks.search sets --n 200000 --sizes 10,1000,20000,50000,100000
    python -m benchmarks.search sets --selector --n 1000000 --dim 384 \
        --sizes 2000,5000,10000,20000,50000,100000 --queries 20

``--home DIR`` times the whole thing instead: the real Searcher over a data home built by
``benchmarks.search scale`` (synthetic articles, random minilm-sized vectors, IVF-PQ past
500K), set queries ``word[ti]`` whose sets span 10 articles to a third of the corpus,
in hybrid mode end to end (tantivy's count, listing or membership checks included, the
query encoder too), with a plain two-word hybrid search timed in the same run as the
reference; recall@10 of dense mode against exact scoring of the listed set.

    python -m benchmarks.search sets --home DIR/home --per-class 8

``--home DIR --lexical`` times only the parts of a set query whose cost grows with the
corpus, for a home without vectors (a 10M home's vectors take hours to build on 2
cores): the lexical set query (count, top 10 by BM25, hit records and snippets) against
a plain two-word lexical search in the same run, and listing the whole set in PMID
order (``LexicalIndex.set_pmids``, the dense side's input for a listed set). What the
dense side does with a listed set depends on the set's size, not the corpus's, and is
measured by ``--selector``.

    python -m benchmarks.search sets --home DIR/home --lexical --per-class 8
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.vectors import clustered
from medsearch.index.vectors.collection import VectorCollection
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
            for method in ("listed", "oversample"):
                times, recalls = [], []
                for q in qs:
                    t = time.perf_counter()
                    if method == "listed":
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
                        "chosen": dense_method(size, n) == method,
                        "p95_ms": round(p95(times), 2),
                        "recall@10": round(float(np.mean(recalls)), 3),
                        "plain_p95_ms": round(p95(plain), 2),
                        "ratio": round(p95(times) / p95(plain), 2),
                    }
                )
        col.close()
    return rows


SIZE_CLASSES = (
    (10, 100),
    (100, 1_000),
    (1_000, 10_000),
    (10_000, 50_000),
    (50_000, 150_000),
    (150_000, 400_000),
    (400_000, 10**9),
)


def title_words_by_size(
    lexical: Any, vocab: list[str], per_class: int
) -> dict[tuple[int, int], list[tuple[str, int]]]:
    """``word[ti]`` queries bucketed by their set size, words sampled along the Zipf ranks."""
    from medsearch.query.parser import parse_query

    found: dict[tuple[int, int], list[tuple[str, int]]] = {c: [] for c in SIZE_CLASSES}
    ranks = np.unique(np.geomspace(1, len(vocab), 400).astype(int)) - 1
    for rank in ranks.tolist():
        word = vocab[rank]
        total = lexical.rank(parse_query(f"{word}[ti]"), k=1).total
        for lo, hi in SIZE_CLASSES:
            if lo <= total < hi and len(found[(lo, hi)]) < per_class:
                found[(lo, hi)].append((word, total))
    return found


def home_run(
    home: Path, per_class: int, older_index: tuple[int, ...] = ()
) -> list[dict[str, object]]:
    from benchmarks.lexical import VOCAB_SIZE
    from benchmarks.synth import pseudo_vocabulary
    from medsearch.paths import Paths
    from medsearch.query.parser import parse_query
    from medsearch.retrieval.searcher import open_searcher

    vocab = pseudo_vocabulary(VOCAB_SIZE, 0)
    rows: list[dict[str, object]] = []
    if older_index:  # word[ti] reads the title fields, which every format since 3 holds
        from medsearch.index.lexical import schema as lexical_schema

        lexical_schema.READABLE_VERSIONS = (*lexical_schema.READABLE_VERSIONS, *older_index)
    with open_searcher(Paths(home), device="cpu", load=True) as searcher:
        searcher.search("warm up the model", mode="hybrid")
        dense = searcher.dense_side("benchmark")
        classes = title_words_by_size(searcher.lexical, vocab, per_class)
        rng = np.random.default_rng(0)
        for (lo, hi), words in classes.items():
            if not words:
                continue
            times, plain, recalls = [], [], []
            for word, size in words:
                other = vocab[int(rng.integers(100, 5_000))]
                t = time.perf_counter()
                searcher.search(f"{word} {other}", mode="hybrid", k=10)
                plain.append(time.perf_counter() - t)
                t = time.perf_counter()
                result = searcher.search(f"{word}[ti]", mode="hybrid", k=10)
                times.append(time.perf_counter() - t)
                assert result.total == size, (word, result.total, size)
                got = searcher.search(f"{word}[ti]", mode="dense", k=10)
                listed = searcher.lexical.rank(parse_query(f"{word}[ti]"), k=size, count=False)
                ids = np.asarray(listed.pmids, dtype=np.int64)
                q = dense.encode_query(word).reshape(-1)
                scores = np.concatenate(
                    [
                        dense.articles.get(ids[i : i + 100_000]) @ q
                        for i in range(0, len(ids), 100_000)
                    ]
                )
                truth = set(ids[np.argsort(-scores)[:10]].tolist())
                top = {h.pmid for h in got.hits[:10]}
                recalls.append(len(top & truth) / min(10, size))
            rows.append(
                {
                    "articles": len(dense.articles),
                    "set": f"{lo:,}-{hi:,}",
                    "sizes": [s for _, s in words],
                    "method": dense_method(
                        int(np.median([s for _, s in words])), len(dense.articles)
                    ),
                    "hybrid_p50_ms": round(float(np.percentile(times, 50)) * 1000, 1),
                    "hybrid_p95_ms": round(p95(times), 1),
                    "plain_hybrid_p95_ms": round(p95(plain), 1),
                    "ratio": round(p95(times) / p95(plain), 2),
                    "dense_recall@10": round(float(np.mean(recalls)), 3),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def lexical_home_run(home: Path, per_class: int) -> list[dict[str, object]]:
    from benchmarks.lexical import VOCAB_SIZE
    from benchmarks.synth import pseudo_vocabulary
    from medsearch.paths import Paths
    from medsearch.query.parser import parse_query
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.retrieval.sets import SET_LIST_MAX

    vocab = pseudo_vocabulary(VOCAB_SIZE, 0)
    rows: list[dict[str, object]] = []
    with open_searcher(Paths(home), device="cpu", load=False) as searcher:
        corpus = searcher.store.count()
        searcher.search("warm up", mode="lexical")
        classes = title_words_by_size(searcher.lexical, vocab, per_class)
        rng = np.random.default_rng(0)
        for (lo, hi), words in classes.items():
            if not words:
                continue
            times, plain, listing = [], [], []
            for word, size in words:
                other = vocab[int(rng.integers(100, 5_000))]
                t = time.perf_counter()
                searcher.search(f"{word} {other}", mode="lexical", k=10)
                plain.append(time.perf_counter() - t)
                t = time.perf_counter()
                result = searcher.search(f"{word}[ti]", mode="lexical", k=10)
                times.append(time.perf_counter() - t)
                assert result.total == size, (word, result.total, size)
                if size <= SET_LIST_MAX:
                    t = time.perf_counter()
                    listed = searcher.lexical.set_pmids(parse_query(f"{word}[ti]"), size)
                    listing.append(time.perf_counter() - t)
                    assert len(listed) == size, (word, len(listed), size)
            rows.append(
                {
                    "articles": corpus,
                    "set": f"{lo:,}-{hi:,}",
                    "sizes": [s for _, s in words],
                    "method": dense_method(int(np.median([s for _, s in words])), corpus),
                    "lexical_p50_ms": round(float(np.percentile(times, 50)) * 1000, 1),
                    "lexical_p95_ms": round(p95(times), 1),
                    "plain_lexical_p95_ms": round(p95(plain), 1),
                    "ratio": round(p95(times) / p95(plain), 2),
                    "listing_p95_ms": round(p95(listing), 1) if listing else None,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def selector_run(n: int, dim: int, sizes: list[int], queries: int, seed: int) -> None:
    """The listed path's two ways, side by side: exact scoring of the set's rows against
    the IVF-PQ index searched with the set as a Faiss ID selector (exact is the reference,
    recall@10 against it), top 1,000 as the dense side asks."""
    x = clustered(n, dim, 1_000, seed, normalise=True)
    rng = np.random.default_rng(seed + 1)
    qs = x[rng.integers(0, n, queries)] + 0.05 * rng.normal(size=(queries, dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        col = VectorCollection.open(Path(tmp) / "v", dim=dim, profile="bench", create=True)
        for lo in range(0, n, 50_000):
            col.add(np.arange(lo, min(n, lo + 50_000)), x[lo : lo + 50_000])
        col.commit()
        print(f"{n:,} x {dim} clustered vectors, {col.manifest.factory}")
        for size in sizes:
            ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int64)
            stored = x[ids]
            for path, limit in (("exact", 10**12), ("selector", 0)):
                col.exact_filter_max = limit
                times, recalls = [], []
                for q in qs:
                    t = time.perf_counter()
                    got = col.search(q, 1_000, allowed_ids=ids)[0]
                    times.append(time.perf_counter() - t)
                    truth = set(ids[np.argsort(-(stored @ q))[:10]].tolist())
                    recalls.append(len({i for i, _ in got[:10]} & truth) / min(10, size))
                row = {"set": size, "path": path, "p95_ms": round(p95(times), 1)}
                row["recall@10"] = round(float(np.mean(recalls)), 3)
                print(json.dumps(row), flush=True)
        col.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--home", type=Path, help="time the real Searcher over this data home")
    ap.add_argument("--per-class", type=int, default=8)
    ap.add_argument(
        "--read-format",
        type=int,
        action="append",
        default=[],
        help="also read a home whose lexical index has this older format (its [ti] fields"
        " are the same), instead of rebuilding a large home's index first",
    )
    ap.add_argument(
        "--lexical", action="store_true", help="with --home: the corpus-bound parts only"
    )
    ap.add_argument("--selector", action="store_true", help="exact scoring against the ID selector")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--sizes", default="10,1000,20000,50000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    if args.home is not None and args.lexical:
        lexical_home_run(args.home, args.per_class)
        return
    if args.home is not None:
        home_run(args.home, args.per_class, tuple(args.read_format))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.selector:
        selector_run(args.n, args.dim, sizes, args.queries, args.seed)
        return
    for row in run(args.n, sizes, args.queries, args.k, args.seed):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
