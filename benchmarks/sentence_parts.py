"""A compressed sentence collection in parts: what a writer's commit costs in time and
memory as the collection grows, against the single-index layout it replaces, and what
stacking the parts costs a search.

    nice -n 5 python -m benchmarks.sentence_parts --sizes 300000,1000000 --dim 768

For each size a real :class:`SentenceCollection` is built from synthetic 768-d vectors
(:func:`benchmarks.sentence_data.synthetic`) in commits of ~20K articles' worth of
sentences (ingest's cadence on a small collection), so it holds the parts ingest would
leave. Then, each in a fresh process so that its peak RSS is its own:

- ``parts``: open the writer, add one more commit's sentences, commit (this code);
- ``whole`` (the reference, the format-2 writer): load every code into one in-memory
  index, add the same sentences, write the whole index and the id lookup.

Memory is the child's peak RSS minus its RSS before the commit (imports and the new
vectors already loaded).

And in this process: 200 held-out queries searched through the parts and through one
index holding the same codes (memory-mapped both), PQ search only; then a scan as long
as a query's at PubMed scale (a quarter of the lists) on one thread and on every core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.sentence_data import synthetic
from medsearch.index import ivf_parts as ip
from medsearch.index import vector_faiss as vf
from medsearch.index.sentence_index import SentenceCollection
from medsearch.index.vector_layout import save_npy

PUBMED_SENTENCES = 350_000_000
PER_COMMIT = 171_000  # 20K articles x ~8.6 sentences (ingest.encode_stage.COMMIT_ARTICLES)
SEED = 1
ADD_BATCH = 8_192


def vectors_for(n: int, dim: int) -> np.ndarray:
    return synthetic(n + PER_COMMIT + 200, dim, seed=SEED)


def build(path: Path, n: int, dim: int) -> None:
    x = vectors_for(n, dim)
    with SentenceCollection.open(path, dim=dim, profile="bench", create=True) as col:
        for lo in range(0, n, PER_COMMIT):
            hi = min(n, lo + PER_COMMIT)
            col.add(np.arange(lo, hi), x[lo:hi])
            col.commit()
            print(f"  built {hi:,}: parts {[p.entries for p in col.parts]}", flush=True)


def peak_rss() -> int:
    """This process's high-water RSS (VmHWM). Not ``ru_maxrss``: Linux carries that
    over from the parent through fork and exec, and the parent holds the test vectors."""
    with open("/proc/self/status") as fh:
        line = next(x for x in fh if x.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def rss_now() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def memory() -> dict[str, int]:
    """This process's resident memory by kind (/proc/self/status), in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("RssAnon", "RssFile", "VmHWM"):
                out[key] = int(line.split()[1]) * 1024
    return out


def search_child(path: Path) -> dict[str, Any]:
    """A search process: open the parts for reading, run 200 queries, report memory.

    Private memory (RssAnon) is what a search process costs; mapped pages (RssFile) are
    the page cache's, shared and dropped under pressure.
    """
    queries = np.load(path.parent / "new.npy")[:200]
    base = memory()
    col = SentenceCollection.open(path, readonly=True)
    opened = memory()
    for q in queries:
        col.search(q, 400)
    done = memory()
    return {
        "anon_open": opened["RssAnon"] - base["RssAnon"],
        "anon_after": done["RssAnon"] - base["RssAnon"],
        "file_after": done["RssFile"] - base["RssFile"],
        "parts": len(col.parts),
    }


def child(mode: str, path: Path, n: int) -> dict[str, Any]:
    """One commit of PER_COMMIT new sentences, the new way or the old, by phase."""
    if mode == "search":
        return search_child(path)
    x = np.load(path.parent / "new.npy")
    ids = np.arange(n, n + len(x))
    before = {f.name: f.stat().st_ino for f in path.iterdir()}
    base = rss_now()
    batches = range(0, len(x), ADD_BATCH)  # ingest adds a chunk of articles at a time
    t0 = time.perf_counter()
    if mode == "parts":
        col = SentenceCollection.open(path)
        t1 = time.perf_counter()
        for lo in batches:
            col.add(ids[lo : lo + ADD_BATCH], x[lo : lo + ADD_BATCH])
        t2 = time.perf_counter()
        col.commit()
    else:
        col = SentenceCollection.open(path, readonly=True)
        indexes = [col._part_index(p) for p in col.parts]
        whole = ip.empty_like(indexes[0])
        ip.gather(indexes, whole, reassign=False)  # the format-2 writer loaded all of it
        t1 = time.perf_counter()
        for lo in batches:
            whole.add_with_ids(x[lo : lo + ADD_BATCH], ids[lo : lo + ADD_BATCH])
        t2 = time.perf_counter()
        vf.write_index(whole, path / "whole.faiss.bench")
        table = np.stack(col._live_lookup())  # ... and rewrote the lookup, as parts do
        save_npy(path / "lookup.bench.npy", table)
    t3 = time.perf_counter()
    written = sum(
        f.stat().st_size
        for f in path.iterdir()
        if f.is_file() and before.get(f.name) != f.stat().st_ino and f.suffix != ".i64"
    )
    return {
        "open": t1 - t0,
        "add": t2 - t1,
        "commit": t3 - t2,
        "written": written,
        "peak_rss": peak_rss() - base,
    }


def run_child(mode: str, path: Path, n: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "benchmarks.sentence_parts", "--child", mode, str(path), str(n)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def search_compare(path: Path, n: int, dim: int) -> tuple[list[float], list[float], int]:
    x = vectors_for(n, dim)
    queries = x[n + PER_COMMIT :]
    col = SentenceCollection.open(path, readonly=True)
    indexes = [col._part_index(p) for p in col.parts]
    whole = ip.empty_like(indexes[0])
    ip.gather(indexes, whole, reassign=False)
    vf.write_index(whole, path / "merged.faiss.bench")
    del whole
    merged = ip.read_part(path / "merged.faiss.bench")
    nprobe = col.manifest.nprobe or 1
    assert col._ivf is not None
    parts = col._ivf.indexes()
    none = vf.Selector(None, None, 0)
    times: dict[str, list[float]] = defaultdict(list)
    for q in queries:  # alternate, so load changes hit both alike
        start = time.perf_counter()
        ip.search_parts(parts, q[None, :], 400, None, nprobe)
        times["stacked"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        vf.search_index(merged, q[None, :], 400, none, nprobe)
        times["merged"].append((time.perf_counter() - start) * 1000)
    nlist = int(merged.nlist)
    wide = max(1, nlist // 4)  # a quarter of the lists: a PubMed-sized scan
    default_scan = vf.PARALLEL_SCAN
    for name, threshold in (("scan, 1 thread", 1 << 62), ("scan, every core", 0)):
        vf.PARALLEL_SCAN = threshold
        for q in queries[:50]:
            start = time.perf_counter()
            ip.search_parts(parts, q[None, :], 400, None, wide)
            times[name].append((time.perf_counter() - start) * 1000)
    vf.PARALLEL_SCAN = default_scan
    scanned = int(merged.ntotal) * wide // nlist
    one, every = (
        float(np.percentile(times[k], 50)) for k in ("scan, 1 thread", "scan, every core")
    )
    print(
        f"  a long scan ({scanned:,} codes, nprobe {wide}), p50: 1 thread {one:.1f} ms,"
        f" every core ({os.cpu_count()}) {every:.1f} ms (x{one / every:.2f})",
        flush=True,
    )
    return times["stacked"], times["merged"], len(col.parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="300000,1000000")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--child", nargs=3, metavar=("MODE", "PATH", "N"))
    args = parser.parse_args(argv)
    if args.child:
        mode, path, n = args.child
        print(json.dumps(child(mode, Path(path), int(n))))
        return
    for n in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
            path = Path(tmp) / "s"
            start = time.perf_counter()
            build(path, n, dim=args.dim)
            print(f"{n:,} sentences built in {time.perf_counter() - start:.0f} s", flush=True)
            codes = sum(f.stat().st_size for f in path.glob("seg.*.faiss"))
            stacked, merged, parts = search_compare(path, n, args.dim)
            (path / "merged.faiss.bench").unlink()
            np.save(Path(tmp) / "new.npy", vectors_for(n, args.dim)[n : n + PER_COMMIT])
            old = run_child("whole", path, n)
            for bench in path.glob("*.bench*"):
                bench.unlink()
            new = run_child("parts", path, n)
            reader = run_child("search", path, n)
        print(f"{n:,} sentences, {parts} parts, codes {codes / 1e6:,.0f} MB:")
        print(
            f"  a search process over {reader['parts']} parts, 200 queries: private memory"
            f" +{reader['anon_open'] / 1e6:,.0f} MB to open, +{reader['anon_after'] / 1e6:,.0f}"
            f" MB after the queries; mapped index pages {reader['file_after'] / 1e6:,.0f} MB"
        )
        for name, r in (("whole index (format 2)", old), ("parts (format 3)", new)):
            print(
                f"  {PER_COMMIT:,} new sentences, {name}: open {r['open']:.1f} s, add"
                f" {r['add']:.1f} s, commit {r['commit']:.1f} s writing"
                f" {r['written'] / 1e6:,.0f} MB; writer's peak RSS growth"
                f" {r['peak_rss'] / 1e6:,.0f} MB"
            )
        print(
            f"  parts / whole: commit x{new['commit'] / old['commit']:.2f}, bytes written"
            f" x{new['written'] / old['written']:.2f}, peak RSS growth"
            f" x{new['peak_rss'] / old['peak_rss']:.2f}"
        )
        p = [float(np.percentile(t, q)) for t in (stacked, merged) for q in (50, 95)]
        print(
            f"  PQ search, top 400: the parts p50/p95 {p[0]:.1f}/{p[1]:.1f} ms,"
            f" one index of the same codes {p[2]:.1f}/{p[3]:.1f} ms"
            f" (x{p[0] / p[2]:.2f} at p50)",
            flush=True,
        )


if __name__ == "__main__":
    main()
