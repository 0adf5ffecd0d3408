"""End-to-end ingest speed as ratios to plain lxml loops over the same file.

    python -m benchmarks.ingest [speed] [--articles 30000] [--jobs 1] [--shards N]
    python -m benchmarks.ingest --articles 480000 --files 16 --jobs 8 --reference-files 2

All numbers are measured in the same run on the same file (these machines are noisy,
so only ratios are comparable across runs). References: the cheapest loop that still
touches every record (iterparse over ``PubmedArticle`` end events, reading the PMID,
clearing each element); a six-field loop (PMID, title, abstract, year,
authors, MeSH and nothing else); and our parser alone (every field extracted, nothing
written). Ingest is the real pipeline: a parser process parses every field and builds
the store rows (compressed) and the lexical documents, this process writes SQLite and
tantivy, commits, and records the ledger (no encoding). A first file of
``TRAIN_RECORDS`` articles is ingested untimed so the store has its compression
dictionary, as it has for every baseline file after the first. Targets from the
issues: ingest <= 1.5x the parser; the parser <= 2x and ingest <= 2.5x the six-field
loop on 2 cores; >= 10,000 articles/s on 16 cores (``--jobs 8``).

Baseline files hold 30,000 articles each, and how far a parser may run ahead of the
writer depends on it (a bounded queue once held parsers to 8,000 articles ahead), so a
many-core run should use files of that size: ``--files`` = articles / 30,000. Files
are generated in parallel, and ``--reference-files N`` runs the single-threaded
reference loops over the first N files only (their rates are per article, so the
ratios stand), which keeps a 480K-article run within a device call.

Synthetic records parse ~1.65x faster than real ones (ASCII, no affiliations, no Greek
letters): ``--real DIR`` cycles the real records of a folder (../shared/data/pubmed)
into the files instead, each under a new PMID (``benchmarks/real_records.py``).
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from lxml import etree

from benchmarks.real_records import Record, load_records, write_cycled_pubmed
from benchmarks.synth import write_synthetic_pubmed
from medsearch.progress import NullProgress
from medsearch.store.dictionary import TRAIN_RECORDS


def _write_file(
    path: Path, bounds: tuple[int, int], seed: int, records: list[Record] | None = None
) -> None:
    lo, hi = bounds
    if records:
        write_cycled_pubmed(path, hi - lo, records, start_pmid=1 + lo, offset=lo)
    else:
        write_synthetic_pubmed(path, hi - lo, gzip=True, seed=seed, start_pmid=1 + lo)


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


def six_fields(path: Path) -> int:
    """The reference the targets use: a plain lxml loop that takes six fields (PMID, title,
    abstract, year, authors, MeSH) and nothing else."""
    count = 0
    with gzip.open(path, "rb") as fh:
        for _, elem in etree.iterparse(fh, events=("end",), tag="PubmedArticle"):
            citation = elem.find("MedlineCitation")
            article = citation.find("Article") if citation is not None else None
            if citation is not None and article is not None and citation.findtext("PMID"):
                title = article.find("ArticleTitle")
                record = (
                    citation.findtext("PMID"),
                    "".join(title.itertext()) if title is not None else "",
                    " ".join(
                        "".join(t.itertext()) for t in article.iterfind("Abstract/AbstractText")
                    ),
                    article.findtext("Journal/JournalIssue/PubDate/Year"),
                    [
                        (a.findtext("LastName"), a.findtext("ForeName"))
                        for a in article.iterfind("AuthorList/Author")
                    ],
                    [
                        m.findtext("DescriptorName")
                        for m in citation.iterfind("MeshHeadingList/MeshHeading")
                    ],
                )
                count += bool(record[0])
            elem.clear()
            while elem.getprevious() is not None:
                del elem.getparent()[0]
    return count


def parse_only(path: Path) -> int:
    """Our parser alone: every field extracted, nothing written (DESIGN.md's 4,100/s loop)."""
    from ingest.pubmed_xml import parse_file

    return sum(1 for _ in parse_file(path))


WRITER_CPU: list[float] = []  # the writer thread's CPU seconds per run (see main)
PROCESS_CPU: list[float] = []  # the writer process's, all threads (tantivy's indexing too)
PARSER_CPU: list[float | None] = []  # the parser processes', where it can be read
FILE_TIMES: list[list[float]] = []  # per run: seconds from its start to each file written
COMMITS: list[int] = []  # per run: units written (files in one transaction and commit)


class FileClock(NullProgress):
    """Notes when each file has been written, for the rate once the pipeline is full."""

    def __init__(self) -> None:
        super().__init__()
        self.t0 = time.perf_counter()
        self.times: list[float] = []

    def advance(self, key: str, amount: int = 1) -> None:
        if key == "files":
            self.times.extend([time.perf_counter() - self.t0] * amount)


def steady_rate(times: list[float], per_file: float, jobs: int) -> float | None:
    """Articles/s over the files written after the first ``jobs``: at the start the writer
    follows the first file's parser (one core's pace) while the others parse, so a run
    of a few rounds understates what a full baseline of ~1,300 files sees (the model
    and its fit to 16-core runs are in BENCHMARKS.md); None when too few files."""
    skip = max(1, jobs)
    if len(times) < skip + 2:
        return None
    return (len(times) - skip) * per_file / (times[-1] - times[skip - 1])


def parsers_cpu() -> float | None:
    """CPU seconds of the parser processes that have ended: children of multiprocessing's
    forkserver, which reaps them, so their time is its children's time in /proc (Linux);
    None where that cannot be read."""
    from multiprocessing import forkserver

    pid = getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None)
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")  # cutime, cstime


def process_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_ingest(
    paths: list[Path], home: Path, jobs: int, shards: int = 1, warm: Path | None = None
) -> tuple[int, float]:
    """Ingest ``paths`` into a fresh home, timed; ``warm`` is ingested first, untimed, so
    the store has trained its compression dictionary as it has for every baseline file
    after the first (the parsers then compress)."""
    from ingest.pipeline import Ingestor
    from medsearch.index.lexical.shards import ShardedLexicalIndex
    from medsearch.paths import Paths

    if shards > 1:  # as a corpus past SHARD_DOCS is kept: the writer feeds every shard
        ShardedLexicalIndex.create(Paths(home).lexical_index, shards).close()
    clock = FileClock()
    with Ingestor(Paths(home), jobs=jobs, progress=clock) as ing:
        if warm is not None:
            ing.run([warm])
        t0 = time.perf_counter()
        clock.t0, clock.times = t0, []
        cpu, whole, parsers = time.thread_time(), process_cpu(), parsers_cpu()
        summary = ing.run(paths)
        FILE_TIMES.append(clock.times)
        COMMITS.append(summary.commits)
        WRITER_CPU.append(time.thread_time() - cpu)
        PROCESS_CPU.append(process_cpu() - whole)
        after = parsers_cpu()
        PARSER_CPU.append(None if after is None or parsers is None else after - parsers)
        return summary.articles, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=30_000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--shards", type=int, default=1, help="also time a lexical index of N shards")
    ap.add_argument(
        "--files", type=int, help="split the articles over N files (default: --jobs, at least 1)"
    )
    ap.add_argument(
        "--writer-threads",
        type=int,
        default=None,
        help="tantivy indexing threads (default: medsearch's own choice for this machine)",
    )
    ap.add_argument(
        "--real",
        type=Path,
        default=None,
        help="cycle the real PubMed records of this folder instead of synthetic ones"
        " (e.g. ../shared/data/pubmed; see benchmarks/real_records.py)",
    )
    ap.add_argument(
        "--reference-files",
        type=int,
        default=None,
        help="run the reference loops over the first N files only (default: all)",
    )
    args = ap.parse_args()
    if args.writer_threads:  # every index this process opens, shards split them as usual
        from medsearch.index.lexical import index as lexical

        threads = args.writer_threads
        lexical.writer_threads = lambda cores: threads
    work = Path(tempfile.mkdtemp(prefix="medsearch-bench-ingest-"))
    try:
        warm = work / "pubmed26n0001.xml.gz"
        records = load_records(args.real) if args.real else None
        _write_file(warm, (10**8 - 1, 10**8 - 1 + TRAIN_RECORDS), 2, records)
        t0 = time.perf_counter()
        n_files = args.files or max(1, args.jobs)
        paths = [work / f"pubmed26n{i + 2:04d}.xml.gz" for i in range(n_files)]
        bounds = [
            (i * args.articles // n_files, (i + 1) * args.articles // n_files)
            for i in range(n_files)
        ]
        with ProcessPoolExecutor(min(n_files, os.cpu_count() or 1)) as pool:
            list(pool.map(_write_file, paths, bounds, range(1, n_files + 1), [records] * n_files))
        kind = f"real records cycled ({len(records)} from {args.real})" if records else "synthetic"
        print(
            f"generated {args.articles:,} articles ({kind}) in {n_files} file(s) in"
            f" {time.perf_counter() - t0:.1f} s"
            f" ({sum(p.stat().st_size for p in paths) / 1e6:.1f} MB gzipped)"
        )
        bare_times, six_times, parse_times, ingest_times, sharded_times = [], [], [], [], []
        refs = paths[: args.reference_files] if args.reference_files else paths
        if len(refs) < len(paths):
            print(f"reference loops over the first {len(refs)} file(s), scaled to all articles")
        for r in range(args.repeat):
            t0 = time.perf_counter()
            n = sum(bare_iterparse(p) for p in refs)
            scale = args.articles / n  # the loops' seconds as if over every file
            bare_times.append((time.perf_counter() - t0) * scale)
            t0 = time.perf_counter()
            assert sum(six_fields(p) for p in refs) == n
            six_times.append((time.perf_counter() - t0) * scale)
            t0 = time.perf_counter()
            assert sum(parse_only(p) for p in refs) == n
            parse_times.append((time.perf_counter() - t0) * scale)
            home = work / f"home{r}"
            m, seconds = run_ingest(paths, home, args.jobs, warm=warm)
            ingest_times.append(seconds)
            assert m == args.articles, (m, args.articles)
            shutil.rmtree(home)
            if args.shards > 1:
                m, seconds = run_ingest(paths, home, args.jobs, args.shards, warm)
                sharded_times.append(seconds)
                shutil.rmtree(home)
        bare, parse, full = min(bare_times), min(parse_times), min(ingest_times)
        six = min(six_times)
        print(f"bare iterparse loop    : {bare:6.2f} s  {args.articles / bare:9,.0f} articles/s")
        print(f"six-field lxml loop    : {six:6.2f} s  {args.articles / six:9,.0f} articles/s")
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
        print(f"ratio parser / six-field loop   = {parse / six:.2f}  (target <= 2)")
        print(f"ratio ingest / six-field loop   = {full / six:.2f}  (target <= 2.5)")
        writer_us = 1e6 * min(WRITER_CPU) / args.articles
        print(
            f"writer thread CPU per article: {writer_us:.0f} us (SQLite, records, tantivy"
            f" documents; parsing is in --jobs processes, indexing in tantivy's threads):"
            f" one writer caps ingest near {1e6 / writer_us:,.0f} articles/s on any core count"
        )
        best = ingest_times.index(full)
        parsers = PARSER_CPU[best]
        if parsers is not None:
            parser_us = 1e6 * parsers / args.articles
            thread_us = 1e6 * WRITER_CPU[best] / args.articles
            process_us = 1e6 * PROCESS_CPU[best] / args.articles
            total_us = parser_us + process_us
            print(
                f"CPU per article (fastest run): parsers {parser_us:.0f} us, writer thread"
                f" {thread_us:.0f} us, tantivy's and other threads {process_us - thread_us:.0f}"
                f" us; {total_us:.0f} us in all, i.e."
                f" {total_us * args.articles / 1e6 / full:.1f} cores busy on average"
                f" of {os.cpu_count()}"
            )
        steady = steady_rate(FILE_TIMES[best], args.articles / n_files, args.jobs)
        if steady is not None:
            print(
                f"steady rate, files after the first {max(1, args.jobs)}: {steady:,.0f}"
                f" articles/s; {len(FILE_TIMES[best])} files in {COMMITS[best]} commits"
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
