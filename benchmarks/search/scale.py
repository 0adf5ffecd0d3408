"""The hybrid first stage end to end at 10M articles: a real data home, the real Searcher.

    nice -n 10 python -m benchmarks.search scale --docs 10000000 --dir DIR
    python -m benchmarks.search scale --dir DIR --queries 100     # search only
    python -m benchmarks.search scale --dir DIR --filters --queries 30

Builds (or reuses, stage by stage) a data home of ``--docs`` synthetic articles: the
store and a lexical index of ``--shards`` shards (what ingest makes past ``SHARD_DOCS``)
written straight from ``benchmarks.lexical.fast_articles`` (the corpus of the 10M
lexical runs; no XML, which would take hours to write and parse here), then random unit
vectors of minilm's 384 dimensions for every article under the minilm profile (IVF-PQ
parts at this size; search cost does not depend on what the vectors mean). Then, in
this process, the Searcher over that home with the real minilm query encoder times, for
the common / mid / rare query classes of ``benchmarks.lexical``: lexical search and the
hybrid first stage (query encoding + lexical and dense candidates + fusion + the hit
records and snippets), top 10, no rerank; p50 / p95 / max. The target: hybrid
p95 <= 300 ms at 10M on this machine. ``--filters``: instead, the hybrid first stage
under year filters of every width (one year, a decade, sixty years: ~1%, ~10% and
~80% of the synthetic corpus, years 1950-2025) against the same queries unfiltered,
interleaved; the ratio of p50s is the filter's cost.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.lexical import BATCH, CLASSES, _queries, _rss_mb, fast_articles
from benchmarks.search.latency import add_random_vectors, percentile, time_modes
from medsearch.paths import Paths

SEED = 0
COMMIT_EVERY = 500_000


def build_store_and_lexical(paths: Paths, docs: int, shards: int) -> None:
    """Store rows and lexical documents for PMIDs 1..docs, committed every 500K
    (a re-run continues after the last commit of both)."""
    from medsearch.index.lexical.shards import ShardedLexicalIndex, open_lexical
    from medsearch.store import Store

    paths.ensure()
    if not paths.lexical_index.exists() and shards > 1:
        ShardedLexicalIndex.create(paths.lexical_index, shards).close()
    store = Store(paths.store)
    lexical = open_lexical(paths.lexical_index, writer=True)
    done = store.count()
    done -= done % COMMIT_EVERY  # the lexical index commits with the store's round counts
    started = time.perf_counter()
    batch = []
    try:
        for article in fast_articles(docs, SEED):
            if article.pmid <= done:
                continue
            batch.append(article)
            if len(batch) == BATCH or article.pmid == docs:
                with store.transaction():
                    store.upsert(batch)
                lexical.upsert(batch)
                batch = []
                if article.pmid % COMMIT_EVERY == 0 or article.pmid == docs:
                    lexical.commit(f"bench-{article.pmid}")
                    rate = (article.pmid - done) / (time.perf_counter() - started)
                    print(f"  {article.pmid:,} articles ({rate:,.0f}/s)", file=sys.stderr)
    finally:
        lexical.close()
        store.close()


def time_filters(searcher: Any, texts: list[str]) -> None:
    """Hybrid top 10 under year filters of every width vs unfiltered, interleaved."""
    from medsearch.records import Filters

    cases = {
        "no filter": Filters(),
        "2000 (one year)": Filters(year_from=2000, year_to=2000),
        "2010-2019 (a decade)": Filters(year_from=2010, year_to=2019),
        "1960-2020": Filters(year_from=1960, year_to=2020),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for text in texts:
        for name, filters in cases.items():
            t0 = time.perf_counter()
            searcher.search(text, mode="hybrid", k=10, filters=filters)
            times[name].append(time.perf_counter() - t0)
    base = percentile(times["no filter"], 50)
    for name, values in times.items():
        p50 = percentile(values, 50)
        print(
            f"{name:22s} hybrid p50 {p50:7.1f} ms  p95 {percentile(values, 95):7.1f} ms"
            f"  (x{p50 / base:.2f} unfiltered)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, required=True, help="the data home's parent (kept)")
    ap.add_argument("--shards", type=int, default=2)
    ap.add_argument("--queries", type=int, default=100, help="per query class")
    ap.add_argument("--filters", action="store_true", help="time year filters instead")
    args = ap.parse_args()
    paths = Paths(args.dir / "home")
    built = args.dir / "built"
    if not built.exists():
        t0 = time.perf_counter()
        build_store_and_lexical(paths, args.docs, args.shards)
        print(f"store + lexical: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        t0 = time.perf_counter()
        add_random_vectors(paths, args.docs)
        print(f"vectors: {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        built.write_text(str(args.docs))
    docs = int(built.read_text())

    from medsearch.retrieval.searcher import open_searcher

    queries = _queries(SEED, args.queries)
    before = _rss_mb()
    with open_searcher(paths, device="cpu", load=True) as searcher:
        searcher.search("warm up the model", mode="hybrid")
        print(f"{docs:,} articles, {args.shards} lexical shards, minilm query encoder, top 10")
        if args.filters:
            time_filters(searcher, [" ".join(w) for c in CLASSES for w in queries[c]])
            return
        for name in CLASSES:
            time_modes(searcher, [" ".join(words) for words in queries[name]], f"{name:6s} ")
        after = _rss_mb()  # while the searcher is open: its private memory and mapped pages
    private = f"{before['rssanon_mb']:,.0f} -> {after['rssanon_mb']:,.0f} MB"
    print(f"search process: private memory (RssAnon) {private}")
    print(f"  mapped index pages resident (RssFile): {after['rssfile_mb']:,.0f} MB")
    print(f"  peak RSS (VmHWM): {after['vmhwm_mb']:,.0f} MB")
    print("target: hybrid p95 <= 300 ms at 10M articles on this machine")


if __name__ == "__main__":
    main()
