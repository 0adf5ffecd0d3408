"""Vector index kinds at PubMed-like scale: build time, memory, latency, recall.

Synthetic 768-d vectors clustered like real embeddings (Gaussian centres plus noise),
queries near stored vectors. Each kind is built through :class:`VectorCollection`, so
the numbers include the float16 memmap, the id lookup and exact re-scoring.

    python benchmarks/vectors.py                 # 200K vectors
    nice -n 10 python benchmarks/vectors.py --n 1000000 --kinds flat,ivfpq,ivfpq96 \
        --nprobes 16,32 --rescores 1,8,16

``ivfpq`` is the default large kind (PQ192), ``ivfpq96`` the smaller code, ``ivfsq8``
8-bit scalar quantisation. ``rescore`` 1x still re-orders the top k exactly.

Targets for the large kind: recall@10 >= 0.95 at <= 20 ms p95 (batch 1,
top-100), memory extrapolating to <= 16 GB RAM at 40M vectors.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.layout import index_bytes as index_file_bytes
from medsearch.index.vectors.layout import nlist_for

PUBMED = 40_000_000
DIM = 768


def clustered(n: int, dim: int, centres: int, seed: int, normalise: bool) -> np.ndarray:
    """Rows ``centre + noise`` where centres come in overlapping families.

    ``centres // 10`` family centres, each with ~10 topic centres around it, each with
    points around it: neighbourhoods of varying density that overlap, so the top 10
    of a query are close competitors (uniform noise or well-separated blobs make every
    index look perfect).
    """
    rng = np.random.default_rng(seed)
    families = rng.normal(size=(max(1, centres // 10), dim)).astype(np.float32)
    c = families[rng.integers(0, len(families), centres)]
    c += 0.6 * rng.normal(size=c.shape).astype(np.float32)
    spread = rng.uniform(0.5, 1.0, size=centres).astype(np.float32)
    out = np.empty((n, dim), np.float32)
    for lo in range(0, n, 50_000):
        hi = min(n, lo + 50_000)
        which = rng.integers(0, centres, hi - lo)
        noise = rng.normal(size=(hi - lo, dim)).astype(np.float32)
        out[lo:hi] = c[which] + spread[which, None] * noise
    if normalise:
        out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(
    name: str,
    factory: str,
    x: np.ndarray,
    q: np.ndarray,
    truth: list[list[int]] | None,
    k: int,
    nprobes: list[int | None],
    rescores: list[int],
) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        rss0 = rss_bytes()
        col = VectorCollection.open(Path(tmp) / name, dim=x.shape[1], profile="bench", create=True)
        start = time.perf_counter()
        for lo in range(0, len(x), 50_000):
            col.add(np.arange(lo, min(len(x), lo + 50_000)), x[lo : lo + 50_000])
        col.rebuild(factory=factory)
        build = time.perf_counter() - start
        index_bytes = index_file_bytes(Path(tmp) / name, col.manifest)
        rows = []
        settings: list[tuple[int | None, int]] = [(p, col.manifest.rescore_factor) for p in nprobes]
        if not col.manifest.exact:  # what more (or no) re-scoring buys at the first nprobe
            settings += [(nprobes[0], r) for r in rescores if r != col.manifest.rescore_factor]
        for nprobe, rescore in settings:
            col.manifest = col.manifest.evolve(rescore_factor=rescore)
            col.search(q[:5], k, nprobe=nprobe)  # warm the memmap pages
            lat, got = [], []
            for qi in q:
                t = time.perf_counter()
                res = col.search(qi, k, nprobe=nprobe)[0]
                lat.append(time.perf_counter() - t)
                got.append([i for i, _ in res])
            recall = 1.0
            if truth is not None:
                recall = float(
                    np.mean(
                        [
                            len(set(g[:10]) & set(t[:10])) / 10
                            for g, t in zip(got, truth, strict=True)
                        ]
                    )
                )
            rows.append(
                {
                    "kind": name,
                    "factory": col.manifest.factory,
                    "nprobe": nprobe or col.manifest.nprobe,
                    "rescore": "-" if col.manifest.exact else f"{rescore}x",
                    "build_s": round(build, 1),
                    "index_mb": round(index_bytes / 2**20, 1),
                    "rss_delta_mb": round((rss_bytes() - rss0) / 2**20, 1),
                    "p50_ms": round(1000 * float(np.percentile(lat, 50)), 2),
                    "p95_ms": round(1000 * float(np.percentile(lat, 95)), 2),
                    "recall@10": round(recall, 4),
                    "bytes_per_vector": round(index_bytes / len(x), 1),
                    "ram_at_40M_gb": round(index_bytes / len(x) * PUBMED / 1e9, 1),
                    "truth": got,
                }
            )
        col.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--centres", type=int, default=1_000)
    ap.add_argument("--normalise", action="store_true")
    ap.add_argument("--kinds", default="flat,ivfpq", help="flat,ivfpq,ivfpq96,ivfsq8")
    ap.add_argument("--nprobes", default="16,32,64")
    ap.add_argument("--rescores", default="1", help="extra re-scoring factors to try")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    x = clustered(args.n, DIM, args.centres, 0, args.normalise)
    rng = np.random.default_rng(1)
    picks = x[rng.integers(0, args.n, args.queries)]
    # a query is another member of a stored vector's neighbourhood, not a copy of it
    q = picks + 0.7 * rng.normal(size=picks.shape).astype(np.float32) * picks.std(axis=0)
    nlist = nlist_for(args.n)
    nprobes: list[int | None] = [int(p) for p in args.nprobes.split(",")]
    kinds: dict[str, tuple[str, list[int | None]]] = {
        "flat": ("Flat", [None]),
        "ivfpq96": (f"IVF{nlist},PQ{DIM // 8}", nprobes),
        "ivfpq": (f"IVF{nlist},PQ{DIM // 4}", nprobes),  # the default large kind
        "ivfsq8": (f"IVF{nlist},SQ8", nprobes),
    }
    rows: list[dict[str, Any]] = []
    truth = None
    for name in args.kinds.split(","):
        factory, probes = kinds[name]
        rescores = [int(r) for r in args.rescores.split(",")]
        out = measure(name, factory, x, q, truth, args.k, probes, rescores)
        if name == "flat":
            truth = out[0]["truth"]
        rows.extend(out)
        print(f"# {name} done", flush=True)
    flat = next((r for r in rows if r["kind"] == "flat"), None)
    for r in rows:
        del r["truth"]
        if flat is not None:
            r["p50_vs_flat"] = round(r["p50_ms"] / flat["p50_ms"], 3)
            r["index_vs_flat"] = round(r["index_mb"] / flat["index_mb"], 3)
    if args.json:
        print(json.dumps({"n": args.n, "dim": DIM, "rows": rows}, indent=2))
        return
    print(f"n={args.n:,} dim={DIM} queries={args.queries} k={args.k} centres={args.centres}")
    cols = [
        "kind",
        "factory",
        "nprobe",
        "rescore",
        "build_s",
        "index_mb",
        "rss_delta_mb",
        "p50_ms",
        "p95_ms",
        "recall@10",
        "ram_at_40M_gb",
        "p50_vs_flat",
        "index_vs_flat",
    ]
    print(" | ".join(cols))
    for r in rows:
        print(" | ".join(str(r.get(c, "")) for c in cols))


if __name__ == "__main__":
    main()
