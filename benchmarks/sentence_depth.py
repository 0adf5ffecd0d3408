"""How many PQ candidates sentence search must re-score: fixed depths vs deepening until
the exact top k is safe, in one run.

    nice -n 5 python -m benchmarks.sentence_depth --sizes 1000000,2000000 --nlist 2048
    python -m benchmarks.sentence_depth --real          # the cached real minilm sentences

Session 21 found the candidates, not the probes, to be what limits sentence search as the
collection grows: on synthetic 768-d sentences 400 re-scored candidates recall 0.97 of
the true top 10 at 250K and 0.93 at 2M, 1,600 stay at 0.975-0.99. Re-scoring 1,600 on
every query costs 4x (on a CPU, seconds of re-encoding), and most queries do not need it.

*Deepening* re-scores ``start`` candidates, then doubles while the answer could still
change: the k-th best exact score so far is below the last re-scored candidate's PQ
score plus the PQ error seen on this query's own re-scored candidates (a high quantile
of exact - PQ). Candidates further down have lower PQ scores, so once the k-th exact
score clears that bound no later candidate is expected to enter the top k.

Same index, queries and candidates for every policy: an IVF-PQ96 (raw-vector codes,
spherical lists) as the sentence collection builds it (``benchmarks.sentence_scale``),
searched with the collection's own probe rule; exact scores from the vectors.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from benchmarks.sentence_data import cached_shuffled, synthetic
from benchmarks.sentence_index import exact_top
from benchmarks.sentence_scale import build, exact_scores, rescored_recall
from medsearch.index import sentence_faiss as sf

FIXED = (100, 200, 400, 800, 1600)
DEEPEN = ((100, 1600), (200, 1600), (400, 1600))  # (start, cap)
QUANTILES = (0.9, 0.99, 1.0)


def settled(pq: np.ndarray, exact: np.ndarray, k: int, quantile: float) -> bool:
    """Whether re-scoring more candidates could no longer change the exact top ``k``.

    ``pq``: every candidate's PQ score, best first; ``exact``: the exact scores of the
    first ``len(exact)`` of them. The next candidate's exact score is expected below its
    PQ score plus the PQ error seen so far (the ``quantile`` of exact - PQ over the
    re-scored ones), and every later candidate's PQ score is lower still.
    """
    n = len(exact)
    if n >= len(pq) or not np.isfinite(pq[n]):
        return True
    if n < k:
        return False
    kth = float(np.partition(exact, n - k)[n - k])
    error = np.asarray(exact, dtype=np.float64) - pq[:n]
    return kth >= float(pq[n]) + float(np.quantile(error[np.isfinite(error)], quantile))


def rescore_depth(
    pq: np.ndarray, exact: np.ndarray, k: int, *, start: int, cap: int, quantile: float
) -> int:
    """Candidates re-scored: ``start``, doubled up to ``cap`` until :func:`settled`."""
    n = min(start, cap, len(pq))
    while n < min(cap, len(pq)) and not settled(pq[:cap], exact[:n], k, quantile):
        n = min(cap, 2 * n)
    return n


def evaluate(
    pq: np.ndarray, exact: np.ndarray, found: np.ndarray, truth: np.ndarray, k: int
) -> dict[str, tuple[float, float]]:
    """policy -> (recall@k, mean candidates re-scored)."""
    out: dict[str, tuple[float, float]] = {}

    def recall_at(depths: list[int]) -> float:
        return rescored_recall(found, exact, truth, depths, k)

    for c in FIXED:
        out[f"fixed {c}"] = (recall_at([c] * len(pq)), float(c))
    for start, cap in DEEPEN:
        for quantile in QUANTILES:
            depths = [
                rescore_depth(pq[i], exact[i], k, start=start, cap=cap, quantile=quantile)
                for i in range(len(pq))
            ]
            out[f"deepen {start}->{cap} q{quantile}"] = (recall_at(depths), float(np.mean(depths)))
    return out


def run(x: np.ndarray, q: np.ndarray, nlist: int, k: int) -> dict[str, tuple[float, float]]:
    truth = exact_top(x, q, k)
    index: Any
    index, _, seconds = build(x, nlist)
    index.nprobe = sf.sentence_nprobe(nlist)
    pq, found = index.search(q, max(FIXED))
    exact = exact_scores(x, q, found)
    pq = np.where(found >= 0, pq, -np.inf)
    print(f"  built IVF{nlist},PQ{x.shape[1] // 8} in {seconds:.0f} s, nprobe {index.nprobe}")
    return evaluate(pq, exact, found, truth, k)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="1000000,2000000")
    ap.add_argument("--nlist", type=int, default=2048)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--real", action="store_true", help="the cached real minilm sentences")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    t0 = time.perf_counter()
    if args.real:  # python -m benchmarks.sentence_data caches them
        every = cached_shuffled()
        sizes = [len(every) - args.queries]
        nlists = [min(args.nlist, 1024)]
    else:
        every = synthetic(max(sizes) + args.queries, 768)
        nlists = [args.nlist]
    q, every = every[-args.queries :], every[: -args.queries]
    print(f"{len(every):,} x {every.shape[1]} in {time.perf_counter() - t0:.0f} s", flush=True)
    for n in sizes:
        for nlist in nlists:
            print(f"{n:,} sentences, {args.queries} queries, recall@{args.k}:", flush=True)
            for policy, (recall, depth) in run(every[:n], q, nlist, args.k).items():
                print(f"  {policy:28s} recall {recall:.4f}  candidates {depth:7.1f}", flush=True)


if __name__ == "__main__":
    main()
