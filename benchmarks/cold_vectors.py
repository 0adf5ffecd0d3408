"""Dense search when the float16 copy is not in the page cache: bytes read and time.

    python -m benchmarks.cold_vectors --home /work/h10m/home --queries 20
    python -m benchmarks.cold_vectors --synthetic 2000000       # no home: a 3 GB file
    python -m benchmarks.cold_vectors --home /work/h10m/home --searcher --queries 4

At 40.9M articles the article vectors' float16 copy is 61 GB at 768-d, more than most
workstations cache, so the ~4,000 PQ candidates a dense query re-scores (top 1000 x
``rescore_factor`` 4) are read from the disk. This measures one such query cold (the
file evicted from the page cache with ``POSIX_FADV_DONTNEED`` first) and warm, with the
scattered rows prefetched (``medsearch.index.rows``, the default) and through the plain
memory map it replaced (``rows.PREFETCH = False``), alternating in the same run. Bytes
read are the process's ``read_bytes`` from ``/proc/self/io``: what the block device
delivered, which is what an SSD would have to serve.

``--home``: the real ``VectorCollection.search`` on a data home's article collection
(one built by ``benchmarks.hybrid_scale``: 10M articles as IVF-PQ parts); random unit
queries. ``--synthetic N``: N random float16 rows of 768 dimensions in a file under
``--dir``, 4,000 scattered rows gathered the way ``SlotStore._read_rows`` does.
``--searcher``: the first search after a reboot, as a ``medsearch search`` command
would meet it: every file of the home evicted, then a fresh process opens the real
Searcher (minilm query encoder, loaded before the clock starts) and runs one hybrid
query of the common class of ``benchmarks.lexical``; its search time and the bytes it
read.

Caveat for VMs: the host may cache the guest's disk, so cold *times* can be far below an
SSD's; the bytes are what a real disk would read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from medsearch.index import rows

CANDIDATES = 4000


def read_bytes() -> int:
    with open("/proc/self/io") as fh:
        for line in fh:
            if line.startswith("read_bytes"):
                return int(line.split()[1])
    return 0


def evict(*paths: Path) -> None:
    for path in paths:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def measure(
    run: Callable[[int], object], reset: Callable[[], None], files: list[Path], queries: int
) -> dict[str, dict[str, list[float]]]:
    """Per mode: cold ms, MB read cold, warm ms; modes alternate query by query.
    ``reset`` drops the memory maps first: the kernel keeps a page that is mapped."""
    out: dict[str, dict[str, list[float]]] = {
        mode: {"cold_ms": [], "cold_mb": [], "warm_ms": []} for mode in ("memmap", "prefetch")
    }
    for q in range(queries):
        for mode in ("memmap", "prefetch") if q % 2 else ("prefetch", "memmap"):
            rows.PREFETCH = mode == "prefetch"
            reset()
            evict(*files)
            b0, t0 = read_bytes(), time.perf_counter()
            run(q)
            t1, b1 = time.perf_counter(), read_bytes()
            run(q)
            t2 = time.perf_counter()
            out[mode]["cold_ms"].append(1e3 * (t1 - t0))
            out[mode]["cold_mb"].append((b1 - b0) / 1e6)
            out[mode]["warm_ms"].append(1e3 * (t2 - t1))
    rows.PREFETCH = True
    return out


def report(out: dict[str, dict[str, list[float]]]) -> None:
    def p(xs: list[float], q: float) -> float:
        return float(np.percentile(xs, q))

    for mode, m in out.items():
        print(
            f"{mode:9s} cold p50 {p(m['cold_ms'], 50):8.1f} ms  p95 {p(m['cold_ms'], 95):8.1f} ms"
            f"  read {statistics.median(m['cold_mb']):8.1f} MB/query"
            f"  | warm p50 {p(m['warm_ms'], 50):6.2f} ms"
        )
    old, new = out["memmap"], out["prefetch"]
    fewer = statistics.median(old["cold_mb"]) / max(1e-9, statistics.median(new["cold_mb"]))
    print(
        f"prefetch vs memmap: cold time x{p(old['cold_ms'], 50) / p(new['cold_ms'], 50):.1f}"
        f" faster, bytes read x{fewer:.0f} fewer,"
        f" warm time x{p(new['warm_ms'], 50) / p(old['warm_ms'], 50):.2f}"
    )


def on_home(home: Path, queries: int, k: int) -> None:
    from medsearch.index.vector import VectorCollection
    from medsearch.paths import Paths

    col = VectorCollection.open(Paths(home).vector_dir("articles"), readonly=True)
    files = [col.path / col.manifest.vectors_file, col.path / col.manifest.ids_file]
    size = sum(f.stat().st_size for f in files)
    print(
        f"{col.manifest.live:,} article vectors, {col.dim}-d; float16 copy + ids"
        f" {size / 1e9:.1f} GB; top {k} (re-scoring {k * col.manifest.rescore_factor:,})"
    )
    rng = np.random.default_rng(0)
    q = rng.standard_normal((queries, col.dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    col.search(q[:1], k)  # the parts, lookup and quantizer: cached like a warm process's
    report(measure(lambda i: col.search(q[i : i + 1], k), col.close, files, queries))


def on_file(n: int, work: Path, queries: int) -> None:
    dim = 768
    path = work / f"cold-{n}x{dim}.f16"
    if not path.exists() or path.stat().st_size != n * dim * 2:
        block = np.random.default_rng(0).standard_normal((50_000, dim)).astype(np.float16)
        with open(path, "wb") as fh:
            for lo in range(0, n, len(block)):
                fh.write(block[: min(len(block), n - lo)].tobytes())
    views: list[np.ndarray] = []

    def reset() -> None:
        views[:] = [np.memmap(path, dtype=np.float16, mode="r", shape=(n, dim))]

    reset()
    print(f"{n:,} rows x {dim} float16 ({path.stat().st_size / 1e9:.1f} GB), {CANDIDATES} rows")
    picks = [
        np.sort(np.random.default_rng(i).choice(n, CANDIDATES, replace=False))
        for i in range(queries)
    ]

    def run(i: int) -> object:
        return rows.to_float32(rows.gather(views[0], picks[i], path))

    report(measure(run, reset, [path], queries))


def one_search(home: Path, query: str) -> None:
    """In a fresh process: open the Searcher, then time one hybrid search (cold)."""
    import json

    from medsearch.paths import Paths
    from medsearch.retrieval.searcher import open_searcher

    with open_searcher(Paths(home), device="cpu") as searcher:
        # The model is not part of the data home: loaded and run once before the clock.
        searcher.encoder("hybrid search").encode_queries(["warm up the model"])
        b0, t0 = read_bytes(), time.perf_counter()
        searcher.search(query, mode="hybrid", k=10)
        seconds, read = time.perf_counter() - t0, read_bytes() - b0
        t1 = time.perf_counter()
        searcher.search(query, mode="hybrid", k=10)
        warm = time.perf_counter() - t1
    print(json.dumps({"ms": 1e3 * seconds, "mb": read / 1e6, "warm_ms": 1e3 * warm}))


def searcher_runs(home: Path, queries: int) -> None:
    import json
    import subprocess
    import sys

    from benchmarks.lexical import _queries

    files = [p for p in home.rglob("*") if p.is_file() and p.stat().st_size > 0]
    print(f"{home}: {len(files)} files, {sum(p.stat().st_size for p in files) / 1e9:.1f} GB")
    out: dict[str, dict[str, list[float]]] = {
        mode: {"cold_ms": [], "cold_mb": [], "warm_ms": []} for mode in ("memmap", "prefetch")
    }
    for i, words in enumerate(_queries(0, queries)["common"]):
        for mode in ("memmap", "prefetch") if i % 2 else ("prefetch", "memmap"):
            evict(*files)
            args = ["--home", str(home), "--one-search", " ".join(words)]
            env = {**os.environ, "MEDSEARCH_BENCH_PREFETCH": str(int(mode == "prefetch"))}
            run = subprocess.run(
                [sys.executable, "-m", "benchmarks.cold_vectors", *args],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
            got = json.loads(run.stdout.strip().splitlines()[-1])
            out[mode]["cold_ms"].append(got["ms"])
            out[mode]["cold_mb"].append(got["mb"])
            out[mode]["warm_ms"].append(got["warm_ms"])
            print(f"  {mode:9s} {' '.join(words)!r}: {got['ms']:.0f} ms, {got['mb']:.0f} MB")
    report(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--home", type=Path, help="a data home with an article collection")
    ap.add_argument("--synthetic", type=int, help="rows of a synthetic file instead")
    ap.add_argument("--dir", type=Path, default=Path("/tmp"), help="where the file goes")
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("--k", type=int, default=1000)
    ap.add_argument("--searcher", action="store_true", help="first hybrid search, cold")
    ap.add_argument("--one-search", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows.PREFETCH = os.environ.get("MEDSEARCH_BENCH_PREFETCH", "1") == "1" and rows.PREFETCH
    if args.one_search:
        one_search(args.home, args.one_search)
        return
    if not hasattr(os, "posix_fadvise"):
        raise SystemExit("needs Linux (posix_fadvise, /proc/self/io)")
    if args.home and args.searcher:
        searcher_runs(args.home, args.queries)
    elif args.home:
        on_home(args.home, args.queries, args.k)
    elif args.synthetic:
        on_file(args.synthetic, args.dir, args.queries)
    else:
        ap.error("give --home or --synthetic")


if __name__ == "__main__":
    main()
