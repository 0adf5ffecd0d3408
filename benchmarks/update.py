"""Daily updates on a large home: applying a file with its watches, and reference-list watches.

    nice -n 10 python -m benchmarks.update [daily] --dir WORK_DIR --large 1000000
    python -m benchmarks.update [daily] --dir WORK_DIR --copy-from A_1M_HOME
    nice -n 5 python -m benchmarks.update references [--small 200000] [--large 2000000]

``daily``: A daily update on a large home: applying a ~30K-record file, then 100 watches.

Two synthetic homes are built (stores and lexical indexes written directly, as
``benchmarks.search scale`` does: no XML to parse for millions of articles): a small
reference of ``--small`` articles and the large one (or a copy of ``--copy-from``'s store
and lexical index, a home of ``benchmarks.search scale``). Each gets the same 100 watches
(50 set queries, 50 ranked plain-word queries over mid-frequency words of the synthetic
vocabulary), then the same daily file through the real pipeline (``Ingestor``: parser
processes, the store with its change rows, the lexical index): ``--new`` new articles,
``--revised`` replacements of existing PMIDs, ``--deleted`` DeleteCitations. Timed: the
file's apply (lexical only, as ``update --no-encode``) and ``run_watches`` over it. The
ratios large / small say how each grows with the home (the CPU figures are the writer's
and the watch run's own, steadier than wall time on a shared machine; the parsers' CPU is
in their processes); the targets are < 2 min for the apply at 40.9M and <= 30 s for the
watches at 10M on 2 cores.

``references``: What a reference-list watch (``check FILE --watch``) costs a run after a
daily update.

A run reads the PMIDs the update files added or replaced (the ``file_changes`` rows,
~30K a day) and looks each up in ``articles`` for a ``notice_for`` naming another
article (:func:`medsearch.watches.references.noticed_by`): a notice record arriving
alone is how most retractions reach a reference. The reference measured in the same
run, on the same table, is what a run that ignored the ledger would do: read every
row's ``notice_for`` (a full scan). Both at two table sizes (synthetic ``articles``
rows, 0.2% of them notices about a random earlier article); times are CPU seconds of
this process (``time.process_time``, best of three: the machine is shared).
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from benchmarks.lexical import VOCAB_SIZE
from benchmarks.modes import run_mode
from benchmarks.synth import pseudo_vocabulary, synthetic_article_xml, synthetic_articles
from medsearch.paths import Paths
from medsearch.watches.references import noticed_by

SEED = 0


def build_home(paths: Paths, docs: int) -> None:
    from benchmarks.search.scale import build_store_and_lexical

    build_store_and_lexical(paths, docs, shards=2 if docs >= 1_000_000 else 1)


def copy_home(source: Path, paths: Paths) -> None:
    """The store through SQLite's backup (consistent while another process writes it)
    and the lexical index's files (tantivy's segments never change once written)."""
    paths.ensure()
    src = sqlite3.connect(f"file:{source / 'store.sqlite'}?mode=ro", uri=True)
    dst = sqlite3.connect(paths.store)
    src.backup(dst)
    dst.close()
    src.close()
    shutil.copytree(source / "lexical", paths.lexical_index)


def daily_file(path: Path, existing: int, new: int, revised: int, deleted: int) -> Path:
    """NCBI's daily mix: new PMIDs past the home's, revised records of random existing
    PMIDs (new text), DeleteCitation of others."""
    rng = random.Random(SEED + 1)
    chosen = rng.sample(range(1, existing + 1), revised + deleted)
    revise, delete = chosen[:revised], chosen[revised:]
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>\n')
        for a in synthetic_articles(new, SEED + 2, start_pmid=existing + 1):
            out.write(synthetic_article_xml(a))
        for a, pmid in zip(synthetic_articles(revised, SEED + 3), revise, strict=True):
            out.write(synthetic_article_xml(dataclasses.replace(a, pmid=pmid)))
        marks = "".join(f'<PMID Version="1">{p}</PMID>' for p in delete)
        out.write(f"<DeleteCitation>{marks}</DeleteCitation>\n</PubmedArticleSet>\n")
    return path


def watch_queries(n: int) -> list[tuple[str, str]]:
    """``n`` (name, query) pairs: half set queries, half ranked plain words."""
    vocab = pseudo_vocabulary(VOCAB_SIZE, SEED)
    rng = random.Random(SEED + 4)
    out: list[tuple[str, str]] = []
    for i in range(n):
        a, b, c = (vocab[rng.randrange(300, 5_000)] for _ in range(3))
        if i % 2:
            out.append((f"ranked-{i}", f"{a} {b} {c}"))
        else:
            stem = (a + "aaaa")[: max(4, min(len(a), 5))]
            forms = (f"{a} AND {b}", f"{a}[ti] OR {b}[ti]", f'"{a} {b}"', f"{stem}* AND {b}")
            form = forms[i // 2 % 4]
            out.append((f"set-{i}", form))
    return out


def add_watches(paths: Paths, n: int) -> float:
    from medsearch.index.lexical.shards import open_lexical
    from medsearch.store import Store
    from medsearch.watches.book import WatchBook
    from medsearch.watches.finder import make_watch

    t0 = time.perf_counter()
    with (
        Store(paths.store, readonly=True) as store,
        open_lexical(paths.lexical_index, create=False) as lexical,
        WatchBook(paths.watches_file) as book,
    ):
        for name, query in watch_queries(n):
            book.add(make_watch(name, query, store=store, lexical=lexical))
    return time.perf_counter() - t0


def apply_daily(paths: Paths, daily: Path, jobs: int) -> tuple[float, float, str]:
    """Wall and this process's CPU seconds of applying ``daily`` (the writer side; the
    parser processes' CPU is their own), and the summary's counts."""
    from ingest.pipeline import Ingestor

    w0, c0 = time.perf_counter(), time.process_time()
    with Ingestor(paths, jobs=jobs) as ingestor:
        summary = ingestor.run([daily])
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    counts = f"{summary.added:,} added, {summary.replaced:,} replaced, {summary.deleted:,} deleted"
    return wall, cpu, counts


def run_watches_timed(paths: Paths) -> tuple[float, float, int, int]:
    """Wall and CPU seconds of one run of every watch, its new hits, its candidates."""
    from medsearch.watches.runner import run_watches

    w0, c0 = time.perf_counter(), time.process_time()
    report = run_watches(paths)
    checked = max((n.checked for n in report.news), default=0)
    return time.perf_counter() - w0, time.process_time() - c0, report.new, checked


def one_home(paths: Paths, daily: Path, watches: int, jobs: int) -> dict[str, float]:
    made = add_watches(paths, watches)
    wall, cpu, counts = apply_daily(paths, daily, jobs)
    run, run_cpu, new, checked = run_watches_timed(paths)
    load = os.getloadavg()[0]
    print(
        f"  {paths.home}: made {watches} watches in {made:.1f} s; applied {daily.name}"
        f" ({counts}) in {wall:.1f} s wall, writer CPU {cpu:.1f} s; {watches} watches ran"
        f" in {run:.2f} s wall, {run_cpu:.2f} s CPU ({run / watches * 1000:.0f} ms each,"
        f" {checked:,} candidates, {new:,} new hits); load average {load:.1f}",
        file=sys.stderr,
    )
    return {"apply": wall, "apply CPU": cpu, "watches": run, "watches CPU": run_cpu}


def daily() -> None:
    """A daily update on a large home: applying a ~30K-record file, then 100 watches."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--dir", type=Path, required=True)
    ap.add_argument("--small", type=int, default=50_000)
    ap.add_argument("--large", type=int, default=1_000_000)
    ap.add_argument("--copy-from", type=Path, default=None, help="a home to copy as the large one")
    ap.add_argument("--new", type=int, default=24_000)
    ap.add_argument("--revised", type=int, default=6_000)
    ap.add_argument("--deleted", type=int, default=300)
    ap.add_argument("--watches", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    if args.dir.exists():
        shutil.rmtree(args.dir)
    args.dir.mkdir(parents=True)
    small, large = Paths(args.dir / "small"), Paths(args.dir / "large")
    t0 = time.perf_counter()
    build_home(small, args.small)
    print(
        f"small home: {args.small:,} articles in {time.perf_counter() - t0:.0f} s", file=sys.stderr
    )
    t0 = time.perf_counter()
    if args.copy_from is not None:
        copy_home(args.copy_from, large)
    else:
        build_home(large, args.large)
    from medsearch.store import Store

    with Store(large.store) as store:  # a writer: brings the copy's schema up to date
        size = store.count()
    print(f"large home: {size:,} articles in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    results = {}
    for label, paths, existing in (("small", small, args.small), ("large", large, size)):
        daily = daily_file(
            args.dir / f"pubmed26n{9000 + existing % 997:04d}.xml.gz",
            existing,
            args.new,
            args.revised,
            args.deleted,
        )
        results[label] = one_home(paths, daily, args.watches, args.jobs)
    records = args.new + args.revised
    for what in ("apply", "apply CPU", "watches", "watches CPU"):
        s, big = results["small"][what], results["large"][what]
        print(
            f"{what:11s} small ({args.small:,}) {s:7.2f} s   large ({size:,}) {big:7.2f} s"
            f"   large/small x{big / s:.2f}   ({records:,}-record file, {args.watches} watches)"
        )


DAILY = 30_000
NEW = 24_000
NOTICE_SHARE = 0.002


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def build(path: Path, rows: int, rng: random.Random) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute(
        "CREATE TABLE articles (pmid INTEGER PRIMARY KEY, title TEXT,"
        " notice_for TEXT NOT NULL DEFAULT '[]')"
    )

    def row(pmid: int) -> tuple[int, str, str]:
        about = "[]"
        if pmid > 1 and rng.random() < NOTICE_SHARE:
            target = rng.randrange(1, pmid)
            about = orjson.dumps(
                [{"status": "retracted", "type": "RetractionOf", "pmid": target}]
            ).decode()
        return pmid, f"title of article {pmid}", about

    conn.executemany("INSERT INTO articles VALUES (?,?,?)", (row(p) for p in range(1, rows + 1)))
    conn.commit()
    return conn


def one(rows: int, folder: Path) -> tuple[float, float, int]:
    rng = random.Random(rows)
    conn = build(folder / f"articles-{rows}.sqlite", rows, rng)
    changed = sorted(
        set(range(rows - NEW + 1, rows + 1)) | set(rng.sample(range(1, rows - NEW), DAILY - NEW))
    )
    found: list[frozenset[int]] = []
    ledger = best(3, lambda: found.append(noticed_by(conn, changed)))

    def scan() -> int:
        return sum(
            1 for _ in conn.execute("SELECT notice_for FROM articles WHERE notice_for != '[]'")
        )

    full = best(3, scan)
    conn.close()
    return ledger, full, len(found[-1])


def references() -> None:
    """What a reference-list watch (``check FILE --watch``) costs a run after a daily update."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: one(n, Path(tmp)) for n in (args.small, args.large)}
    for n, (ledger, full, targets) in results.items():
        print(
            f"{n:>10,} rows: the day's {DAILY:,} changed PMIDs {ledger * 1000:8.1f} ms CPU"
            f" ({targets} articles named by their notices); full scan {full * 1000:8.1f} ms;"
            f" ledger / scan {ledger / full:.3f}"
        )
    (l_s, f_s, _), (l_l, f_l, _) = results[args.small], results[args.large]
    scale = 40_900_000 / args.large
    print(
        f"large / small: ledger x{l_l / l_s:.2f}, full scan x{f_l / f_s:.2f};"
        f" at 40.9M the scan extrapolates (linearly) to {f_l * scale:.1f} s,"
        f" the ledger stays near {l_l * 1000:.0f} ms"
    )


if __name__ == "__main__":
    run_mode("benchmarks.update", {"daily": daily, "references": references}, default="daily")
