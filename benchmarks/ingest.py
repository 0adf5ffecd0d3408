"""End-to-end ingest speed as a ratio to a bare lxml iterparse loop over the same file.

    python -m benchmarks.ingest [--articles 30000] [--jobs 1]

All numbers are measured in the same run on the same file (these machines are noisy,
so only ratios are comparable across runs). Two references: the cheapest loop that
still touches every record (iterparse over ``PubmedArticle`` end events, reading the
PMID, clearing each element), and our parser alone (every field extracted, nothing
written; the loop DESIGN.md measured at ~4,100 articles/s). Ingest is the real
pipeline: parse every field and build rows/documents in a parser process, write SQLite
and tantivy in this one, commit, ledger (no encoding). Target from the issue: <= 1.5.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from pathlib import Path

from lxml import etree

from benchmarks.synth import write_synthetic_pubmed


def bare_iterparse(path: Path) -> int:
    count = 0
    with gzip.open(path, "rb") as fh:
        for _, elem in etree.iterparse(fh, events=("end",), tag="PubmedArticle"):
            if elem.findtext("MedlineCitation/PMID"):
                count += 1
            elem.clear()
            while elem.getprevious() is not None:
                del elem.getparent()[0]
    return count


def parse_only(path: Path) -> int:
    """Our parser alone: every field extracted, nothing written (DESIGN.md's 4,100/s loop)."""
    from ingest.pubmed_xml import parse_file

    return sum(1 for _ in parse_file(path))


WRITER_CPU: list[float] = []  # the writer thread's CPU seconds per run (see main)


def run_ingest(path: Path, home: Path, jobs: int, shards: int = 1) -> tuple[int, float]:
    from ingest.pipeline import Ingestor
    from medsearch.index.lexical_shards import ShardedLexicalIndex
    from medsearch.paths import Paths

    if shards > 1:  # as a corpus past SHARD_DOCS is kept: the writer feeds every shard
        ShardedLexicalIndex.create(Paths(home).lexical_index, shards).close()
    t0 = time.perf_counter()
    cpu = time.thread_time()
    with Ingestor(Paths(home), jobs=jobs) as ing:
        summary = ing.run([path])
    WRITER_CPU.append(time.thread_time() - cpu)
    return summary.articles, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=30_000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1, help="also time a lexical index of N shards")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="medsearch-bench-ingest-"))
    try:
        path = work / "pubmed26n0001.xml.gz"
        t0 = time.perf_counter()
        write_synthetic_pubmed(path, args.articles, gzip=True, seed=1)
        print(
            f"generated {args.articles:,} articles in {time.perf_counter() - t0:.1f} s "
            f"({path.stat().st_size / 1e6:.1f} MB gzipped)"
        )
        bare_times, parse_times, ingest_times, sharded_times = [], [], [], []
        for r in range(args.repeat):
            t0 = time.perf_counter()
            n = bare_iterparse(path)
            bare_times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            assert parse_only(path) == n
            parse_times.append(time.perf_counter() - t0)
            home = work / f"home{r}"
            m, seconds = run_ingest(path, home, args.jobs)
            ingest_times.append(seconds)
            assert n == m == args.articles, (n, m)
            shutil.rmtree(home)
            if args.shards > 1:
                m, seconds = run_ingest(path, home, args.jobs, args.shards)
                sharded_times.append(seconds)
                shutil.rmtree(home)
        bare, parse, full = min(bare_times), min(parse_times), min(ingest_times)
        print(f"bare iterparse loop    : {bare:6.2f} s  {args.articles / bare:9,.0f} articles/s")
        print(f"parser, all fields     : {parse:6.2f} s  {args.articles / parse:9,.0f} articles/s")
        print(
            f"ingest (jobs={args.jobs})  : {full:6.2f} s  {args.articles / full:9,.0f} articles/s"
        )
        if sharded_times:
            best = min(sharded_times)
            print(
                f"ingest, {args.shards} shards   : {best:6.2f} s  {args.articles / best:9,.0f}"
                f" articles/s (x{full / best:.2f} the whole index's rate)"
            )
        print(f"ratio ingest / parser-only loop = {full / parse:.2f}  (target <= 1.5)")
        print(f"ratio ingest / bare iterparse   = {full / bare:.2f}")
        writer_us = 1e6 * min(WRITER_CPU) / args.articles
        print(
            f"writer thread CPU per article: {writer_us:.0f} us (SQLite, records, tantivy"
            f" documents; parsing is in --jobs processes, indexing in tantivy's threads):"
            f" one writer caps ingest near {1e6 / writer_us:,.0f} articles/s on any core count"
        )
        rate = args.articles / full
        print(
            f"extrapolated 2026 baseline (40.9M citations): {40.9e6 / rate / 3600:.1f} h "
            "at this rate (parse parallelises across files with --jobs on more cores)"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
