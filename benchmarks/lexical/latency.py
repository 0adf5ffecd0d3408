"""Lexical index speed: build time, size, search-process memory and query latency.

Builds an index of synthetic PubMed-like articles (``benchmarks.synth``: ~220 words per
abstract, Zipf vocabulary of 50K pseudo-words, authors, journals, MeSH), then measures
search in a fresh process (so its resident memory is a searcher's, not the builder's):
latency p50/p95/max of top-100 and top-1000 ranked queries of 2-3 words drawn from
common, mid-frequency and rare vocabulary, with exact counting (the default) and without
it (``count=False`` lets tantivy skip documents). Snippets are made from the article
store's text and are timed by ``benchmarks.search`` (inside its lexical stage). The
reference measured in the same run is a bare tantivy term query for the first word of
each query on the abstract field; ratios are ours / reference at p50.

Targets at 1M documents: top-1000 p95 <= 50 ms, RSS <= 200 MB.

    python -m benchmarks.lexical [latency] [--docs 100000] [--queries 50] [--dir DIR]
        [--corpus fast]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import tantivy

from benchmarks.synth import fast_articles as _fast_articles
from benchmarks.synth import pseudo_vocabulary, synthetic_articles, to_article
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex
from medsearch.records import Article

VOCAB_SIZE = 50_000
BATCH = 10_000
COMMIT_EVERY = 50_000  # about one and a half PubMed baseline files
KS = (100, 300, 1000)
"""Depths timed: the top-100 a user sees, and candidate depths hybrid search might ask for."""
CLASSES = {"common": (0, 100), "mid": (1_000, 5_000), "rare": (20_000, VOCAB_SIZE)}


def fast_articles(n: int, seed: int) -> Iterator[Article]:
    """The bulk corpus of the large lexical and search runs (``synth.fast_articles``)."""
    return _fast_articles(n, seed, vocab_size=VOCAB_SIZE, batch=BATCH)


def build(path: Path, docs: int, seed: int, corpus: str) -> dict[str, float]:
    """Index ``docs`` synthetic articles; time only the index calls, not generation."""
    index = LexicalIndex.open(path)
    indexing = generating = 0.0
    articles: Iterator[Article] = (
        fast_articles(docs, seed)
        if corpus == "fast"
        else map(to_article, synthetic_articles(docs, seed, vocab_size=VOCAB_SIZE))
    )
    done = 0
    while done < docs:
        started = time.perf_counter()
        batch = [a for _, a in zip(range(BATCH), articles, strict=False)]
        generating += time.perf_counter() - started
        started = time.perf_counter()
        index.upsert(batch)
        done += len(batch)
        if done % COMMIT_EVERY == 0 or done >= docs:
            index.commit(f"batch-{done}")
        indexing += time.perf_counter() - started
        print(f"  indexed {done:,} ({indexing:.0f} s indexing)", file=sys.stderr, flush=True)
    started = time.perf_counter()
    index.close()  # waits for merges
    indexing += time.perf_counter() - started
    return {"build_s": indexing, "generate_s": generating, "size_bytes": index.size_bytes()}


def _queries(seed: int, n: int) -> dict[str, list[list[str]]]:
    vocab = pseudo_vocabulary(VOCAB_SIZE, seed)
    rng = random.Random(seed)
    return {
        name: [[vocab[rng.randrange(lo, hi)] for _ in range(rng.randint(2, 3))] for _ in range(n)]
        for name, (lo, hi) in CLASSES.items()
    }


def _time(fn: Callable[[], object], repeat: int = 1) -> float:
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) * 1000 / repeat


def _stats(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "max": ordered[-1],
    }


def _rss_mb() -> dict[str, float]:
    """Resident memory: total, peak, and its split into private (anon) and mapped files."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
            fields[key.lower() + "_mb"] = int(value.split()[0]) / 1024
    return fields


def _thread_scaling(index: LexicalIndex, texts: list[str]) -> dict[str, float]:
    """Seconds for the queries twice over on one thread, and split across two: tantivy-py
    releases the GIL while searching, so a sharded index could search its shards at once."""
    import threading

    def work() -> None:
        for text in texts:
            index.search(text, k=1000, snippets=0)

    started = time.perf_counter()
    work()
    work()
    one = time.perf_counter() - started
    threads = [threading.Thread(target=work) for _ in range(2)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    two = time.perf_counter() - started
    return {"one_thread_s": one, "two_threads_s": two}


def search_benchmark(path: Path, seed: int, n_queries: int) -> dict[str, Any]:
    """Runs in its own process: open, query, report latencies and memory.

    Our queries run first and memory is read before the reference index is opened, so
    the RSS is that of a searcher holding one index.
    """
    index = LexicalIndex.open(path, create=False)
    analyzers = ls.analyzers()
    results: dict[str, Any] = {"rss_open_mb": _rss_mb()["vmrss_mb"], "docs": index.count()}
    classes: dict[str, dict[str, Any]] = {}
    queries = _queries(seed, n_queries)
    for name, words in queries.items():
        texts = [" ".join(q) for q in words]
        row: dict[str, Any] = {"example": texts[0]}
        for text in texts:  # warm the page cache and tantivy's caches
            index.search(text, k=1000, snippets=0)
        for k in KS:
            for count in (True, False):
                label = f"ours@{k}" + ("" if count else " no-count")
                row[label] = _stats(
                    [
                        _time(lambda q=q, k=k, c=count: index.search(q, k=k, snippets=0, count=c))  # type: ignore[misc]
                        for q in texts
                    ]
                )
        classes[name] = row
    results["threads"] = _thread_scaling(index, [" ".join(q) for q in queries["common"]])
    results.update(_rss_mb())
    index.close()
    bare = tantivy.Index.open(str(path))
    schema, searcher = bare.schema, bare.searcher()
    for name, words in queries.items():
        firsts = [analyzers.tokens(q[0])[0][1] for q in words]
        row = classes[name]
        row["mean_df"] = statistics.mean(searcher.doc_freq(ls.ABSTRACT, t) for t in firsts)
        for k in KS:
            row[f"bare@{k}"] = _stats(
                [
                    _time(
                        lambda t=t, k=k: searcher.search(  # type: ignore[misc]
                            tantivy.Query.term_query(schema, ls.ABSTRACT, t), k, count=False
                        )
                    )
                    for t in firsts
                ]
            )
    results["classes"] = classes
    return results


def report(build_stats: dict[str, float], search: dict[str, Any]) -> None:
    docs = search["docs"]
    print(f"\nlexical index, {docs:,} synthetic articles")
    print(f"  build (index calls + merges): {build_stats['build_s']:.1f} s"
          f"  ({docs / build_stats['build_s']:,.0f} docs/s; generating took"
          f" {build_stats['generate_s']:.1f} s more)")  # fmt: skip
    print(f"  size on disk: {build_stats['size_bytes'] / 1e6:.0f} MB")
    print(f"  search process RSS: {search['rss_open_mb']:.0f} MB after open,"
          f" {search['vmrss_mb']:.0f} MB after all queries (peak {search['vmhwm_mb']:.0f} MB;"
          f" private {search['rssanon_mb']:.0f} MB + mapped index files"
          f" {search['rssfile_mb']:.0f} MB)")  # fmt: skip
    threads = search["threads"]
    print(f"  common-term queries twice over: one thread {threads['one_thread_s']:.2f} s,"
          f" two threads {threads['two_threads_s']:.2f} s"
          f" (x{threads['one_thread_s'] / threads['two_threads_s']:.2f})")  # fmt: skip
    header = f"  {'class':8} {'measure':20} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'x bare':>7}"
    print(header)
    for name, row in search["classes"].items():
        print(f"  {name:8} mean df of first word {row['mean_df']:,.0f}; e.g. {row['example']!r}")
        for label, stats in row.items():
            if not isinstance(stats, dict):
                continue
            k = label.split("@")[1].split()[0]
            ratio = stats["p50"] / row[f"bare@{k}"]["p50"] if f"bare@{k}" in row else float("nan")
            print(f"  {'':8} {label:20} {stats['p50']:8.2f} {stats['p95']:8.2f}"
                  f" {stats['max']:8.2f} {ratio:7.1f}")  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=50, help="per frequency class")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--corpus",
        choices=("synth", "fast"),
        default="synth",
        help="synth: benchmarks.synth articles with metadata; fast: bulk title+abstract",
    )
    parser.add_argument("--dir", type=Path, help="keep the index here (default: temp dir)")
    parser.add_argument("--search-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.search_only:
        print(json.dumps(search_benchmark(args.search_only, args.seed, args.queries)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.dir or Path(tmp) / "lexical"
        if (path / "meta.json").exists():
            index = LexicalIndex.open(path, create=False)
            build_stats = {
                "build_s": float("nan"),
                "generate_s": 0.0,
                "size_bytes": index.size_bytes(),
            }
            index.close()
        else:
            build_stats = build(path, args.docs, args.seed, args.corpus)
        child = [sys.executable, "-m", "benchmarks.lexical", "--search-only", str(path),
                 "--seed", str(args.seed), "--queries", str(args.queries)]  # fmt: skip
        out = subprocess.run(child, check=True, capture_output=True, text=True).stdout
        report(build_stats, json.loads(out))


if __name__ == "__main__":
    main()
