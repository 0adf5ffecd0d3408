"""Would a lexical index split into shards search faster on a workstation's cores?

    nice -n 10 python -m benchmarks.lexical shards --docs 10000000 --shards 2 \
        --dir SHARDS_DIR --single SINGLE_DIR
    python -m benchmarks.lexical shards --beir ../shared/data/beir/scifact   # quality

Builds ``--shards`` tantivy indexes of the same synthetic corpus as
``python -m benchmarks.lexical --corpus fast`` (document PMID p goes to shard p mod N), or reuses
them, then times top-1000 searches for the common/mid/rare query classes three ways:
the shards one after another; :class:`ShardedLexicalIndex` (the product: its shards
from a thread pool, as tantivy-py releases the GIL while searching, merged); and, as the
reference measured in the same run, the single index of all documents (``--single``,
built by ``benchmarks.lexical --dir``). It also reports how much of the single index's
top-100 the merged shard top-100 keeps (per-shard BM25 statistics differ slightly from
the global ones).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

from benchmarks.lexical.latency import BATCH, COMMIT_EVERY, _queries, fast_articles
from medsearch.index.lexical.index import LexicalHit, LexicalIndex
from medsearch.index.lexical.shards import SHARDS_FILE, ShardedLexicalIndex
from medsearch.records import Article

K = 1000


def build_in_processes(root: Path, docs: int, shards: int, seed: int) -> None:
    """The shards built at once, one process each: the same synthetic corpus in law (each
    shard draws its own documents from the vocabulary and Zipf law, PMIDs p with p mod N
    its number), so a 10M-document index takes minutes on many cores, not a quarter of
    an hour of one Python thread feeding tantivy."""
    ShardedLexicalIndex.create(root, shards).close()
    threads = max(1, (os.cpu_count() or 1) // shards)
    spawn = multiprocessing.get_context("spawn")  # tantivy's threads must not be forked
    with ProcessPoolExecutor(shards, mp_context=spawn) as pool:
        jobs = [
            pool.submit(_build_shard, root, i, docs, shards, seed, threads) for i in range(shards)
        ]
        print(f"  indexed {sum(j.result() for j in jobs):,}", file=sys.stderr, flush=True)


def _build_shard(root: Path, shard: int, docs: int, shards: int, seed: int, threads: int) -> int:
    index = LexicalIndex.open(root / f"shard-{shard}")
    index.writer_threads = threads
    own = len(range(shard, docs, shards))
    batch: list[Article] = []
    for k, article in enumerate(fast_articles(own, seed * 1_009 + shard)):
        batch.append(replace(article, pmid=(k + 1) * shards + shard))
        if len(batch) == BATCH or k == own - 1:
            index.add(batch)
            batch.clear()
        if (k + 1) % COMMIT_EVERY == 0 or k == own - 1:
            index.commit(f"batch-{k + 1}")
    index.close()
    return own


def build(root: Path, docs: int, shards: int, seed: int) -> None:
    index = ShardedLexicalIndex.create(root, shards)
    batch = []
    for done, article in enumerate(fast_articles(docs, seed), 1):
        batch.append(article)
        if done % BATCH == 0 or done == docs:
            index.upsert(batch)
            batch.clear()
        if done % COMMIT_EVERY == 0 or done == docs:
            index.commit(f"batch-{done}")
            print(f"  indexed {done:,}", file=sys.stderr, flush=True)
    index.close()


def merged(results: list[tuple[LexicalHit, ...]], k: int) -> list[int]:
    hits = [h for hits in results for h in hits]
    hits.sort(key=lambda h: (-h.score, h.pmid))
    return [h.pmid for h in hits[:k]]


def stats(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):7.1f} / {p95:7.1f}"


def quality(beir_dir: Path, home: Path | None, counts: list[int]) -> None:
    """Lexical nDCG@10 of a BEIR corpus (real text) split into each of ``counts`` shards:
    what per-shard BM25 statistics cost on a small corpus."""
    import shutil
    import tempfile

    from medsearch.beir import doc_pmid, load_qrels, load_queries
    from medsearch.evaluate import build_collection
    from medsearch.metrics import evaluate_run
    from medsearch.paths import Paths
    from medsearch.progress import NullProgress
    from medsearch.store import Store

    paths = Paths.resolve(home).ensure()
    collection, _, _ = build_collection(
        beir_dir, paths, profile=None, encode=False, progress=NullProgress()
    )
    qrels = load_qrels(beir_dir, "test")
    queries = load_queries(beir_dir)
    judged = {q: {str(doc_pmid(d)): g for d, g in rel.items()} for q, rel in qrels.items()}
    for n in counts:
        root = Path(tempfile.mkdtemp())
        index = ShardedLexicalIndex.create(root / "lexical", n)
        with Store(collection.store, readonly=True) as store:
            for batch in store.iter_articles(batch=2000):
                index.upsert(batch)
        index.commit()
        run = {
            q: [str(h.pmid) for h in index.search(queries[q], k=100, syntax=False).hits]
            for q in qrels
            if q in queries
        }
        docs = index.count()
        index.close()
        shutil.rmtree(root)
        ndcg = evaluate_run(run, judged, k_values=(10,))["ndcg@10"]
        print(f"{n} shard(s) of ~{docs // n:,} documents: nDCG@10 {ndcg:.4f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dir", type=Path)
    parser.add_argument("--single", type=Path, default=None)
    parser.add_argument("--beir", type=Path, help="instead: lexical quality per shard count")
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument(
        "--processes",
        action="store_true",
        help="build the shards at once, one process each (many cores; its own draw of docs)",
    )
    args = parser.parse_args(argv)
    if args.beir:
        quality(args.beir, args.home, [1, 2, 4, 8])
        return
    if args.dir is None:
        parser.error("--dir is needed to time searches (or --beir for quality)")
    if not (args.dir / "shard-0" / "meta.json").exists():
        started = time.perf_counter()
        (build_in_processes if args.processes else build)(
            args.dir, args.docs, args.shards, args.seed
        )
        print(f"built {args.shards} shards in {time.perf_counter() - started:.0f} s")
    if not (args.dir / SHARDS_FILE).exists():  # built by an earlier version of this script
        (args.dir / SHARDS_FILE).write_text(json.dumps({"shards": args.shards}))
    sharded = ShardedLexicalIndex.open_shards(args.dir)
    shards = sharded.shards
    single = LexicalIndex.open(args.single, create=False) if args.single else None
    print(f"{sum(s.count() for s in shards):,} documents in {len(shards)} shards")
    print(f"{'class':8} {'top-1000 p50 / p95 ms':>22}: {'single index':>17} {'shards in turn':>17}"
          f" {'ShardedLexicalIndex':>19}  top-100 kept")  # fmt: skip
    for name, words in _queries(args.seed, args.queries).items():
        texts = [" ".join(q) for q in words]
        for text in texts:  # warm the page cache
            for shard in shards:
                shard.search(text, k=K, snippets=0)
            if single is not None:
                single.search(text, k=K, snippets=0)
        turn, threaded, whole, kept = [], [], [], []
        for text in texts:
            t0 = time.perf_counter()
            [s.search(text, k=K, snippets=0) for s in shards]
            t1 = time.perf_counter()
            parts = [sharded.search(text, k=K, snippets=0).hits]
            t2 = time.perf_counter()
            turn.append(1000 * (t1 - t0))
            threaded.append(1000 * (t2 - t1))
            if single is not None:
                t3 = time.perf_counter()
                reference = single.search(text, k=K, snippets=0).hits
                whole.append(1000 * (time.perf_counter() - t3))
                top = {h.pmid for h in reference[:100]}
                kept.append(len(top & set(merged(parts, 100))) / max(1, len(top)))
        print(
            f"{name:8} {'':>22}: {stats(whole) if whole else '-':>17} {stats(turn):>17}"
            f" {stats(threaded):>19}  {statistics.mean(kept) if kept else float('nan'):.3f}",
            flush=True,
        )
    sharded.close()


if __name__ == "__main__":
    main()
