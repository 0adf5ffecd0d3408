"""Hybrid first-stage latency on a synthetic corpus with the minilm profile.

    python -m benchmarks.search [--docs 100000] [--queries 200]

The corpus is real ingest (synthetic PubMed XML -> store + tantivy); the article vectors
are random unit vectors of minilm's 384 dimensions added under the minilm profile,
because encoding 100K abstracts on this CPU takes over an hour and search cost does not
depend on what the vectors mean. The query is encoded by the real minilm encoder.
Measured: hybrid first stage (query encode + lexical top-N + dense top-N + RRF + fetching
the hit records) per query, p50/p95, and as a ratio to lexical-only search in the same
run. Target from the issue: p95 <= 150 ms at 100K. Also reports the cross-encoder cost
per reranked document with a BERT-base-shaped model when ``--rerank`` is given.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from benchmarks.synth import pseudo_vocabulary, write_synthetic_pubmed
from medsearch.paths import Paths

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher


def add_random_vectors(paths: Paths, count: int, *, dim: int = 384, seed: int = 0) -> None:
    """Unit vectors for PMIDs 1..count under the minilm profile (synthetic PMIDs start at 1).

    Search cost does not depend on what the vectors mean, and encoding a 100K corpus on
    this CPU would take over an hour; queries are still encoded by the real model.
    """
    from medsearch.index.vectors.collection import VectorCollection

    rng = np.random.default_rng(seed)
    coll = VectorCollection.open(
        paths.vector_dir("articles"), dim=dim, profile="minilm", create=True
    )
    for start in range(1, count + 1, 50_000):
        ids = np.arange(start, min(start + 50_000, count + 1), dtype=np.int64)
        vecs = rng.standard_normal((len(ids), dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        coll.add(ids, vecs)
    coll.commit()
    coll.close()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q))


def time_modes(searcher: Searcher, queries: list[str], label: str = "") -> dict[str, list[float]]:
    """Seconds of lexical and hybrid top-10 search per query (modes interleaved, so
    both see the same machine load); prints p50 / p95 / max of each."""
    timings: dict[str, list[float]] = {"lexical": [], "hybrid": []}
    for q in queries:
        for mode in timings:
            t0 = time.perf_counter()
            searcher.search(q, mode=mode, k=10)
            timings[mode].append(time.perf_counter() - t0)
    for mode, values in timings.items():
        print(
            f"{label}{mode:8s} p50 {percentile(values, 50):7.1f} ms"
            f"  p95 {percentile(values, 95):7.1f} ms  max {max(values) * 1000:7.1f} ms"
        )
    return timings


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="Reuse/keep the corpus here.")
    args = ap.parse_args()

    from ingest.pipeline import Ingestor
    from medsearch.retrieval.searcher import open_searcher

    work = args.keep or Path(tempfile.mkdtemp(prefix="medsearch-bench-search-"))
    paths = Paths(work / "home")
    try:
        if not paths.store.exists():
            xml = work / "pubmed26n0001.xml.gz"
            t0 = time.perf_counter()
            write_synthetic_pubmed(xml, args.docs, gzip=True, seed=7)
            with Ingestor(paths, jobs=1) as ing:
                ing.run([xml])
            print(f"ingested {args.docs:,} synthetic articles in {time.perf_counter() - t0:.0f} s")
            add_random_vectors(paths, args.docs)
        vocab = pseudo_vocabulary(50_000, seed=7)
        rnd = random.Random(1)
        queries = [
            " ".join(rnd.choice(vocab[:5000]) for _ in range(rnd.randint(2, 6)))
            for _ in range(args.queries)
        ]
        with open_searcher(paths, device="cpu", load=True) as searcher:
            searcher.search(queries[0], mode="hybrid")  # warm-up (model, caches)
            timings = time_modes(searcher, queries)
        ratio = percentile(timings["hybrid"], 95) / percentile(timings["lexical"], 95)
        print(f"hybrid/lexical p95 ratio {ratio:.2f}; target hybrid p95 <= 150 ms at 100K docs")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
