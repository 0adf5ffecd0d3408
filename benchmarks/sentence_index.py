"""Sentence search after compression: recall@10 against exact inner product, latency, bytes.

Every collection is a real :class:`SentenceCollection` (IVF-PQ codes, no float copy);
the top ``N`` PQ candidates are then re-scored exactly. Re-scoring re-encodes the
candidates' text in the product; here it multiplies by the vectors the text encodes to
(tests/test_sentence_index.py checks that re-encoding gives that same order), and the
re-encoding cost is measured on its own with the real minilm encoder.

    nice -n 5 python -m benchmarks.sentence_index --real 20000          # cached minilm
    nice -n 5 python -m benchmarks.sentence_index --synthetic 1000000   # 768-d

The reference printed with each run is exact flat search (float16, batch 1) over the
same vectors: latency ratios are against it, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.sentence_data import CACHE, cached_real, neighbour_profile, synthetic
from medsearch.index import sentence_faiss as sf
from medsearch.index.sentence_index import SentenceCollection
from medsearch.index.vector_faiss import omp_threads
from medsearch.index.vector_layout import index_bytes

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


def main() -> None:
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


if __name__ == "__main__":
    main()
