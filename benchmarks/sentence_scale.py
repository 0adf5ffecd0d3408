"""How sentence search's probes and candidates must grow with the collection.

    nice -n 5 python -m benchmarks.sentence_scale --sizes 250000,500000,1000000,2000000 \
        --nlists 256,1024,4096

The sentence index (IVF-PQ96 over codes of raw vectors, the top ``C`` PQ candidates
re-scored exactly; see ``benchmarks/sentence_index.py``) was measured to recall@10 0.956
at 1M synthetic sentences with ``nprobe = nlist / 32``. PubMed has ~350M sentences, and
the sample caps the lists at 16,384, so that rule scans ~11M codes a query there. Whether
fewer probes would do, and whether 400 candidates still hold the true top 10 when 350x
more sentences crowd them, cannot be measured at 350M on one workstation; this measures
both effects apart, as the collection grows at a fixed number of lists and as the lists
grow at a fixed size, so the trend can be extrapolated:

* coarse recall: the share of each query's exact top 10 whose inverted list is among
  the ``nprobe`` lists the query visits (exact, no PQ involved), and the probes needed
  for 0.97 of it;
* end to end: recall@10 after re-scoring the top ``C`` PQ candidates of a real Faiss
  ``IndexIVFPQ`` built as the sentence collection builds it (k-means quantizer with
  inner-product assignment, PQ96 codes of raw vectors).

Vectors come from :func:`benchmarks.sentence_data.synthetic` (768-d, its neighbour
structure checked against real sentences); the queries are held-out rows of the same
generator, the same queries for every size, and each size is a prefix of one draw.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import faiss
import numpy as np

from benchmarks.sentence_data import cached_shuffled, synthetic
from benchmarks.sentence_index import exact_top
from medsearch.index import coarse as cq

_faiss: Any = faiss
PROBES = (8, 16, 32, 64, 128, 256, 512)
CANDIDATES = (100, 400, 1600)
COARSE_TARGET = 0.97
TARGET = 0.95


def build(
    x: np.ndarray, nlist: int, seed: int = 1234, *, spherical: bool = True, residual: bool = False
) -> tuple[Any, np.ndarray, float]:
    """(index, list of every row, seconds): the sentence collection's IVF-PQ96 over ``x``.
    ``spherical=False``: lists trained as the growth retrain of earlier versions did;
    ``residual``: codes of each vector's difference to its list centroid (as the
    article index encodes) instead of the vector itself."""
    start = time.perf_counter()
    d = x.shape[1]
    rng = np.random.default_rng(seed)
    sample = x[np.sort(rng.choice(len(x), size=min(len(x), 32 * nlist), replace=False))]
    quantizer = _faiss.IndexFlatIP(d)
    quantizer.add(cq.CPU.kmeans(sample, nlist, niter=10, seed=seed, spherical=spherical))
    index = _faiss.IndexIVFPQ(quantizer, d, nlist, d // 8, 8, _faiss.METRIC_INNER_PRODUCT)
    index.by_residual = residual
    index.do_polysemous_training = False
    index.train(sample[: max(256 * 39, min(len(sample), 65_536))])
    index.add(x)
    lists = np.empty(len(x), np.int64)
    inv = index.invlists
    for lst in range(nlist):
        n = inv.list_size(lst)
        if n:
            lists[_faiss.rev_swig_ptr(inv.get_ids(lst), n)] = lst
    return index, lists, time.perf_counter() - start


def coarse_recall(index: Any, lists: np.ndarray, q: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(queries, 10): the rank of each true neighbour's list in the query's list order."""
    nlist = index.nlist
    _, order = index.quantizer.search(q, nlist)
    rank = np.empty(order.shape, np.int64)
    rows = np.arange(len(q))[:, None]
    rank[rows, order] = np.arange(nlist)[None, :]
    out: np.ndarray = rank[rows, lists[truth[:, :10]]]
    return out


def exact_scores(x: np.ndarray, q: np.ndarray, found: np.ndarray) -> np.ndarray:
    """(queries, candidates): each candidate's exact inner product with its query, -inf
    where the search found fewer (id -1)."""
    valid = found >= 0
    scores: np.ndarray = np.einsum("qcd,qd->qc", x[np.where(valid, found, 0)], q)
    return np.where(valid, scores, -np.inf)


def rescored_recall(
    found: np.ndarray, exact: np.ndarray, truth: np.ndarray, depths: list[int], k: int = 10
) -> float:
    """recall@k when query i re-scores its first ``depths[i]`` candidates exactly."""
    hits = []
    for qi, depth in enumerate(depths):
        top = found[qi, :depth][np.argsort(-exact[qi, :depth], kind="stable")[:k]]
        hits.append(len(set(top.tolist()) & set(truth[qi, :k].tolist())) / k)
    return round(float(np.mean(hits)), 4)


def end_to_end(
    index: Any, x: np.ndarray, q: np.ndarray, truth: np.ndarray, nprobe: int
) -> dict[int, float]:
    """recall@10 after re-scoring the top C PQ candidates, for each C."""
    index.nprobe = nprobe
    _, found = index.search(q, max(CANDIDATES))
    exact = exact_scores(x, q, found)
    return {c: rescored_recall(found, exact, truth, [c] * len(q)) for c in CANDIDATES}


def needed(curve: dict[int, float], target: float) -> int | None:
    """The fewest probes in ``curve`` reaching ``target``, None if none does."""
    return next((p for p, r in sorted(curve.items()) if r >= target), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="250000,500000,1000000,2000000")
    ap.add_argument("--nlists", default="256,1024,4096")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument(
        "--real", action="store_true", help="the cached real minilm sentences instead (384-d)"
    )
    ap.add_argument(
        "--l2-lists", action="store_true", help="lists trained by L2 k-means (the old retrain)"
    )
    ap.add_argument("--residual", action="store_true", help="PQ codes of residuals")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    nlists = [int(s) for s in args.nlists.split(",")]
    t0 = time.perf_counter()
    if args.real:  # benchmarks.sentence_data caches them (python -m benchmarks.sentence_data)
        every = cached_shuffled()
        sizes = [min(n, len(every) - args.queries) for n in sizes]
    else:
        every = synthetic(max(sizes) + args.queries, 768)
    q, every = every[-args.queries :], every[: -args.queries]
    print(f"{len(every):,} x {every.shape[1]} in {time.perf_counter() - t0:.0f} s", flush=True)
    results = []
    for n in sizes:
        x = every[:n]
        truth = exact_top(x, q, 10)
        for nlist in nlists:
            if n < 39 * nlist:
                continue
            index, lists, seconds = build(
                x, nlist, spherical=not args.l2_lists, residual=args.residual
            )
            ranks = coarse_recall(index, lists, q, truth)
            coarse = {p: round(float(np.mean(ranks < p)), 4) for p in PROBES if p <= nlist}
            row: dict[str, Any] = {
                "n": n,
                "nlist": nlist,
                "per_list": n // nlist,
                "build_s": round(seconds, 1),
                "coarse": coarse,
                "coarse_probes_for_0.97": needed(coarse, COARSE_TARGET),
            }
            full = {p: end_to_end(index, x, q, truth, p) for p in PROBES if p <= nlist}
            row["recall"] = full
            for c in CANDIDATES:
                curve = {p: r[c] for p, r in full.items()}
                row[f"probes_for_0.95_at_{c}"] = needed(curve, TARGET)
            print(json.dumps(row), flush=True)
            results.append(row)
            del index
    print("n, nlist, per list, coarse probes for 0.97, probes for 0.95 at 100/400/1600")
    for r in results:
        print(
            r["n"],
            r["nlist"],
            r["per_list"],
            r["coarse_probes_for_0.97"],
            *(r[f"probes_for_0.95_at_{c}"] for c in CANDIDATES),
        )


if __name__ == "__main__":
    main()
