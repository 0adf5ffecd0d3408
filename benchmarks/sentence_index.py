"""Sentence search: recall, latency and bytes after compression, and how probes must grow.

    nice -n 5 python -m benchmarks.sentence_index [recall] --real 20000          # cached minilm
    nice -n 5 python -m benchmarks.sentence_index [recall] --synthetic 1000000   # 768-d
    nice -n 5 python -m benchmarks.sentence_index scale --sizes 250000,500000,1000000,2000000 \\
        --nlists 256,1024,4096

``recall``: Sentence search after compression: recall@10 against exact inner product,
latency, bytes.

Every collection is a real :class:`SentenceCollection` (IVF-PQ codes, no float copy);
the top ``N`` PQ candidates are then re-scored exactly. Re-scoring re-encodes the
candidates' text in the product; here it multiplies by the vectors the text encodes to
(tests/test_sentence_index.py checks that re-encoding gives that same order), and the
re-encoding cost is measured on its own with the real minilm encoder.

The reference printed with each run is exact flat search (float16, batch 1) over the
same vectors: latency ratios are against it, measured in the same run.

``scale``: How sentence search's probes and candidates must grow with the collection.

The sentence index (IVF-PQ96 over codes of raw vectors, the top ``C`` PQ candidates
re-scored exactly; the ``recall`` mode) was measured to recall@10 0.956
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
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from benchmarks.modes import run_mode
from benchmarks.sentence_data import (
    CACHE,
    cached_real,
    cached_shuffled,
    neighbour_profile,
    synthetic,
)
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors import sentence_faiss as sf
from medsearch.index.vectors.faiss_index import omp_threads
from medsearch.index.vectors.layout import index_bytes
from medsearch.index.vectors.sentence_index import SentenceCollection

PUBMED_SENTENCES = 350_000_000
CANDIDATES = (10, 20, 50, 100, 200, 400)  # 10: the PQ order alone, no re-scoring
PROBE_FACTORS = (1, 2, 4, 8)  # multiples of the collection's default nprobe


def exact_top(x: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    out = np.empty((len(q), k), np.int64)
    for lo in range(0, len(q), 50):
        s = q[lo : lo + 50] @ x.T
        part = np.argpartition(-s, k, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(s, part, 1), axis=1)
        out[lo : lo + 50] = np.take_along_axis(part, order, 1)
    return out


def build(x: np.ndarray, path: Path, every: int | None = None) -> tuple[SentenceCollection, float]:
    """The collection of ``x``, committed once or every ``every`` vectors (as ingest
    commits: the lists are then trained early and retrained as the collection grows)."""
    start = time.perf_counter()
    col = SentenceCollection.open(path, dim=x.shape[1], profile="bench", create=True)
    step = min(65_536, every or 65_536)
    for lo in range(0, len(x), step):
        col.add(np.arange(lo, min(len(x), lo + step)), x[lo : lo + step])
        if every and (lo + step) % every < step:
            col.commit()
    col.commit()
    col.close()
    seconds = time.perf_counter() - start
    return SentenceCollection.open(path), seconds  # reopened: a reader's memory map


def evaluate(
    col: SentenceCollection, x: np.ndarray, q: np.ndarray, truth: np.ndarray
) -> list[dict[str, Any]]:
    rows = []
    nprobe = col.manifest.nprobe or 0
    for probe in (f * nprobe for f in PROBE_FACTORS):
        col.search(q[:5], max(CANDIDATES), nprobe=probe)  # warm the mapped lists
        lat: list[float] = []
        found: list[np.ndarray] = []
        for qi in q:
            t = time.perf_counter()
            hits = col.search(qi, max(CANDIDATES), nprobe=probe)[0]
            lat.append(time.perf_counter() - t)
            found.append(np.array([i for i, _ in hits], dtype=np.int64))
        for n in CANDIDATES:
            t = time.perf_counter()
            rec = []
            for qi, cand, true in zip(q, found, truth, strict=True):
                c = cand[:n]
                top = c[np.argsort(-(x[c] @ qi), kind="stable")[:10]]
                rec.append(len(set(top.tolist()) & set(true[:10].tolist())) / 10)
            rescore_ms = 1000 * (time.perf_counter() - t) / len(q)
            rows.append(
                {
                    "nprobe": probe,
                    "candidates": n,
                    "recall@10": round(float(np.mean(rec)), 4),
                    "pq_search_p50_ms": round(1000 * float(np.percentile(lat, 50)), 2),
                    "pq_search_p95_ms": round(1000 * float(np.percentile(lat, 95)), 2),
                    "rescore_math_ms": round(rescore_ms, 2),
                }
            )
    return rows


def flat_reference(x: np.ndarray, q: np.ndarray, limit: int = 100_000) -> dict[str, Any]:
    """Exact float16 flat search (the small-collection kind) over ``limit`` vectors."""
    index = sf.new_flat(x.shape[1])
    n = min(limit, len(x))
    index.add_with_ids(x[:n], np.arange(n))
    lat = []
    with omp_threads(1):
        for qi in q[:50]:
            t = time.perf_counter()
            index.search(qi[None], 10)
            lat.append(time.perf_counter() - t)
    return {"flat_n": n, "flat_p50_ms": round(1000 * float(np.median(lat)), 2)}


def sizes(path: Path, col: SentenceCollection, n: int) -> dict[str, Any]:
    m = col.manifest
    index_b = index_bytes(path, m)
    ids_b = (path / m.ids_file).stat().st_size
    lookup_b = (path / str(m.lookup_file)).stat().st_size
    sample_b = (path / m.sample_file).stat().st_size
    # Fixed part of the index (coarse centroids, PQ codebooks) vs per-sentence entries.
    nlist = int(m.factory.split(",")[0].removeprefix("IVF")) if m.kind == "ivfpq" else 0
    fixed = 4 * m.dim * (nlist + 256)
    per = (index_b - fixed + ids_b + lookup_b) / n
    return {
        "factory": m.factory,
        "n": n,
        "index_bytes_per_sentence": round((index_b - fixed) / n, 1),
        "index_fixed_mb": round(fixed / 2**20, 1),
        "ids_lookup_bytes_per_sentence": round((ids_b + lookup_b) / n, 1),
        "sample_mb": round(sample_b / 2**20, 1),
        "extrapolated_350M_gb": round((per * PUBMED_SENTENCES + fixed + sample_b) / 1e9, 1),
    }


def rescore_cost(texts: list[str], counts: tuple[int, ...] = (20, 50, 100, 200)) -> dict[str, Any]:
    """Seconds to re-encode N real sentences with the minilm query encoder on this CPU."""
    from medsearch.models.encoders import load_encoder
    from medsearch.models.profiles import get_profile
    from medsearch.paths import Paths

    paths = Paths.resolve()
    encoder = load_encoder(get_profile("minilm", paths), device="cpu", paths=paths)
    encoder.encode_sentences(texts[:8])
    out = {}
    for n in counts:
        t = time.perf_counter()
        encoder.encode_sentences(texts[1000 : 1000 + n])
        out[f"reencode_{n}_ms"] = round(1000 * (time.perf_counter() - t), 0)
    return out


def run(
    name: str, x: np.ndarray, q: np.ndarray, real: np.ndarray | None, every: int | None = None
) -> dict[str, Any]:
    print(f"[{name}] {len(x):,} x {x.shape[1]}: exact truth ...", flush=True)
    truth = exact_top(x, q, 10)
    report: dict[str, Any] = {"set": name, "profile": neighbour_profile(x[:20000], x[:200])}
    if real is not None:
        report["real_profile"] = neighbour_profile(real[:20000], real[:200])
    report.update(flat_reference(x, q))
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        path = Path(tmp) / "sentences"
        col, seconds = build(x, path, every)
        report["build_s"] = round(seconds, 1)
        report["trained_on"] = col.manifest.trained_on
        report.update(sizes(path, col, len(x)))
        report["rows"] = evaluate(col, x, q, truth)
        col.close()
    print(json.dumps(report, indent=1), flush=True)
    return report


def recall() -> None:
    """Sentence search after compression: recall@10 against exact inner product, latency, bytes."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--real", type=int, default=None, help="cached real sentences")
    parser.add_argument("--synthetic", type=int, default=None, help="synthetic 768-d vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--flat-max", type=int, default=None, help="override FLAT_MAX")
    parser.add_argument(
        "--commit-every", type=int, default=None, help="commit every N vectors (retrains)"
    )
    args = parser.parse_args()
    SentenceCollection.flat_max = args.flat_max if args.flat_max is not None else 5_000
    real, texts = cached_real(args.real) if args.real else (None, [])
    if real is not None:
        rng = np.random.default_rng(1)
        held = rng.choice(len(real), size=args.queries, replace=False)
        mask = np.ones(len(real), bool)
        mask[held] = False
        run("real minilm 384-d", real[mask], real[held], None, args.commit_every)
        print(json.dumps(rescore_cost(texts)), flush=True)
    if args.synthetic:
        x = synthetic(args.synthetic + args.queries, 768)
        q, x = x[-args.queries :], x[: -args.queries]
        cached = sorted(CACHE.glob("minilm-*.npy"))
        run("synthetic 768-d", x, q, np.load(cached[-1]) if cached else None, args.commit_every)


_faiss: Any = faiss
PROBES = (8, 16, 32, 64, 128, 256, 512)
SCALE_CANDIDATES = (100, 400, 1600)
COARSE_TARGET = 0.97
TARGET = 0.95


def build_ivfpq(
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
    _, found = index.search(q, max(SCALE_CANDIDATES))
    exact = exact_scores(x, q, found)
    return {c: rescored_recall(found, exact, truth, [c] * len(q)) for c in SCALE_CANDIDATES}


def needed(curve: dict[int, float], target: float) -> int | None:
    """The fewest probes in ``curve`` reaching ``target``, None if none does."""
    return next((p for p, r in sorted(curve.items()) if r >= target), None)


def scale() -> None:
    """How sentence search's probes and candidates must grow with the collection."""
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
            index, lists, seconds = build_ivfpq(
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
            for c in SCALE_CANDIDATES:
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
            *(r[f"probes_for_0.95_at_{c}"] for c in SCALE_CANDIDATES),
        )


if __name__ == "__main__":
    run_mode("benchmarks.sentence_index", {"recall": recall, "scale": scale}, default="recall")
