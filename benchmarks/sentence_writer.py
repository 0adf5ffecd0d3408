"""The sentence writer's own work per sentence, young collection vs PubMed-sized one,
with lists and codes made for free (as the GPU makes them), in one run.

    python -m benchmarks.sentence_writer                       # 1.4M sentences each way
    python -m benchmarks.sentence_writer --sentences 700000 --seen 50000000

Issue 9's H200 run found the sentence pass slower than the bare forward and the writer
busy for half of it, at 1.03M sentences. This asks whether that lasts: everything the
vector stage's writer thread does with a chunk of sentence vectors
(``SentenceCollection.add``: ids, the reservoir sample, the pending lookup, Faiss's
append of the codes) and with a commit (``commit`` plus ``record_hashes``, the
``encoded`` rows of the chunk's articles), timed on this CPU with a coarse quantizer
whose lists and codes cost nothing, so what is left is host work a GPU does not take.

- *young*: an empty collection, as the first ~1M sentences of an ingest meet it: the
  exact index, its conversion to IVF-PQ at 100K, and the sample filling then being
  replaced into (Algorithm R replaces ``cap / seen`` of the adds).
- *old*: the same adds to a collection whose sample is full and has seen ``--seen``
  sentences and is compressed already (its first commit, untimed), as for all but the
  first few million of PubMed's ~350M (at 50M seen, 1% of the adds enter the sample).

Reference in the same run: Faiss's bare append of the same lists and codes
(``add_sa_codes`` into an in-memory IVF-PQ), the floor any writer pays. Commits every
20K articles' worth (8.6 sentences each, ``COMMIT_ARTICLES``); at PubMed scale the
stage spaces them to <= 10% of its time (``benchmarks.commit_cost``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import torch  # noqa: F401  (loaded, as in the vector stage: float16 rows go through torch)

from ingest.encode_stage import COMMIT_ARTICLES
from ingest.encoded import record_hashes
from medsearch.index import coarse
from medsearch.index.coarse import Coarse
from medsearch.index.sentence_index import SentenceCollection
from medsearch.store import Store

SENTENCES_PER_ARTICLE = 8.6  # PubMed: ~350M sentences over 40.9M citations


class FreeDevice(Coarse):
    """Lists, codes and training at no host cost: what is timed is the writer's own work
    (on the vector stage's GPU, placement and PQ encoding are matrix products there).
    Random lists and codes are drawn once per shape and handed out again (drawing them
    for every chunk cost ~0.13 us a sentence, a sixth of the writer's own add)."""

    name = "free"

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self._drawn: dict[tuple[int, int, int], tuple[np.ndarray, np.ndarray]] = {}

    def kmeans(self, x: np.ndarray, k: int, *, niter: int, seed: int, spherical: bool) -> Any:
        rows = np.array(x[self.rng.choice(len(x), k, replace=False)], dtype=np.float32)
        if spherical:
            rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        return rows

    def train_pq(self, pq: Any, x: np.ndarray, *, niter: int, seed: int) -> None:
        size = int(pq.M) * int(pq.ksub) * int(pq.dsub)
        faiss.copy_array_to_vector(self.rng.standard_normal(size, dtype=np.float32), pq.centroids)

    def assign(self, quantizer: Any, x: np.ndarray) -> np.ndarray:
        return self.rng.integers(0, int(quantizer.ntotal), len(x), dtype=np.int64)

    def encode(self, ivf: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        key = (len(x), int(ivf.nlist), int(ivf.pq.M))
        if key not in self._drawn:
            lists = self.rng.integers(0, key[1], key[0], dtype=np.int64)
            self._drawn[key] = lists, self.rng.integers(0, 256, key[::2], dtype=np.uint8)
        return self._drawn[key]


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return rows


def writer(root: Path, chunk: np.ndarray, total: int, seen: int) -> dict[str, float]:
    """Seconds in ``add`` and in commits for ``total`` sentences, ``chunk`` at a time."""
    col = SentenceCollection.open(root / "sentences", dim=chunk.shape[1], profile="b", create=True)
    store = Store(root / "store.sqlite")
    col.coarse = FreeDevice()
    if seen:  # a sample that is full and has seen `seen` adds (any rows: only for training)
        rows = np.resize(chunk, (col.sample_max, chunk.shape[1])).astype(np.float16)
        (root / "sentences" / col.manifest.sample_file).write_bytes(rows.tobytes())
        col._sample_rows, col._seen = col.sample_max, seen
        while col._rows <= col.flat_max:  # untimed: already compressed, as such a one is
            col.add(np.arange(col._rows, col._rows + len(chunk)) + 10**12, chunk)
        col.commit()
        # ... and past its last retrain (lists stop growing at 16,384, ~17M sentences)
        col.manifest = col.manifest.evolve(trained_on=seen)
    every = int(COMMIT_ARTICLES * SENTENCES_PER_ARTICLE)
    per_article = round(SENTENCES_PER_ARTICLE)
    adds = commits = 0.0
    done = since = 0
    pmid = 1
    try:
        while done < total:
            ids = np.arange(done, done + len(chunk), dtype=np.int64) * 1000 // per_article
            start = time.perf_counter()
            col.add(ids, chunk)
            adds += time.perf_counter() - start
            done += len(chunk)
            since += len(chunk)
            if since >= every or done >= total:
                articles = since // per_article
                hashes = [(pmid + i, "0" * 32, per_article) for i in range(articles)]
                pmid += articles
                start = time.perf_counter()
                col.commit()
                record_hashes(store, "sentences", "b", hashes)
                commits += time.perf_counter() - start
                since = 0
    finally:
        col.close()
        store.close()
    return {"add": adds, "commit": commits, "sentences": done}


def bare_append(chunk: np.ndarray, total: int, nlist: int) -> float:
    """Faiss appending the same number of (list, code) pairs to an in-memory IVF-PQ, by
    the same call the collection's add makes (``coarse.add_with_ids``)."""
    dim = chunk.shape[1]
    index = faiss.index_factory(dim, f"IVF{nlist},PQ{dim // 8}", faiss.METRIC_INNER_PRODUCT)
    device = FreeDevice()
    ivf: Any = faiss.downcast_index(faiss.extract_index_ivf(index))
    ivf.quantizer.add(unit_rows(nlist, dim, 3))
    ivf.is_trained = True
    index.is_trained = True
    device.encode(ivf, chunk)  # drawn before the clock, as for the collections
    spent, done = 0.0, 0
    while done < total:
        ids = np.arange(done, done + len(chunk), dtype=np.int64)
        start = time.perf_counter()
        coarse.add_with_ids(index, chunk, ids, device)  # what the collection's add calls
        spent += time.perf_counter() - start
        done += len(chunk)
    return spent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sentences", type=int, default=1_400_000, help="added each way")
    parser.add_argument("--chunk", type=int, default=70_000, help="8,192 articles' worth")
    parser.add_argument("--seen", type=int, default=50_000_000, help="the old collection's")
    parser.add_argument("--dim", type=int, default=768)
    args = parser.parse_args()
    chunk = unit_rows(args.chunk, args.dim, 1)
    print(
        f"{args.sentences:,} sentences of {args.dim}-d in chunks of {args.chunk:,},"
        f" committed every {int(COMMIT_ARTICLES * SENTENCES_PER_ARTICLE):,}; lists and"
        " codes free (as on a GPU)"
    )
    floor = bare_append(chunk, args.sentences, 1024)
    per = 1e6 * floor / args.sentences
    print(f"  reference, Faiss's bare append: {floor:.2f} s, {per:.2f} us a sentence")
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent.parent) as tmp:
        for name, seen in (("young (empty)", 0), (f"old ({args.seen:,} seen)", args.seen)):
            t = writer(Path(tmp) / name.split()[0], chunk, args.sentences, seen)
            n = t["sentences"]
            total = t["add"] + t["commit"]
            print(
                f"  {name}: add {1e6 * t['add'] / n:.2f} + commit {1e6 * t['commit'] / n:.2f}"
                f" = {1e6 * total / n:.2f} us a sentence (x{total / floor:.1f} the bare"
                f" append): one writer keeps up with {n / total:,.0f} sentences/s"
            )


if __name__ == "__main__":
    main()
