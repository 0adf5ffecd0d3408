"""Sentence vectors for benchmarks/sentence_index.py: real ones, and a synthetic generator.

Real: every abstract sentence of the SciFact corpus and of the PubMed XML files under
``../shared/data/pubmed``, split with our splitter (:func:`medsearch.sentences.article_sentences`)
and encoded with the query encoder of a real profile (minilm offline). Encoding ~55K
sentences on two shared cores takes many minutes, so the vectors are cached as ``.npy``
outside the repository and re-used.

    nice -n 5 python -m benchmarks.sentence_data --limit 20000   # cache real vectors

Synthetic: :func:`synthetic` draws sentence-like vectors whose neighbour structure is
checked against the real ones by :func:`neighbour_profile` (the gaps between the top-10
inner products and the spread of scores), because recall measured on vectors with the
wrong structure (uniform noise, well-separated blobs) says nothing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from medsearch.records import Article

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
CACHE = Path("/tmp/medsearch-bench/sentences")


def real_articles(shared: Path = SHARED) -> Iterator[Article]:
    """SciFact abstracts (as BEIR articles), then every article of the PubMed files."""
    from ingest.pubmed_xml import parse_file
    from medsearch.beir import beir_doc_to_article, load_corpus
    from medsearch.errors import ParseError

    scifact = shared / "beir" / "scifact"
    if scifact.exists():
        for number, doc in enumerate(load_corpus(scifact), start=1):
            yield beir_doc_to_article(doc, number)
    for path in sorted((shared / "pubmed").rglob("*.xml*")):
        try:
            for record in parse_file(path):
                if isinstance(record, Article) and record.abstract:
                    yield record
        except ParseError as exc:  # a fixture file may be deliberately broken
            print(f"skipped {path.name}: {type(exc).__name__}")


def real_sentences(shared: Path = SHARED) -> tuple[np.ndarray, list[str]]:
    """(sentence ids, texts) of every abstract sentence, deduplicated by text."""
    from medsearch.sentences import article_sentences

    ids: list[int] = []
    texts: list[str] = []
    seen: set[str] = set()
    for article in real_articles(shared):
        for sentence in article_sentences(article):
            if sentence.text in seen:
                continue
            seen.add(sentence.text)
            ids.append(sentence.sentence_id)
            texts.append(sentence.text)
    return np.array(ids, dtype=np.int64), texts


def cached_real(limit: int | None, profile: str = "minilm") -> tuple[np.ndarray, list[str]]:
    """Cached (vectors, texts) of the first ``limit`` real sentences (encoding if needed)."""
    _, texts = real_sentences()
    if limit is not None:
        rng = np.random.default_rng(0)
        keep = np.sort(rng.choice(len(texts), size=min(limit, len(texts)), replace=False))
        texts = [texts[i] for i in keep]
    file = CACHE / f"{profile}-{len(texts)}.npy"
    if file.exists():
        return np.load(file), texts
    from medsearch.models.encoders import load_encoder
    from medsearch.models.profiles import get_profile
    from medsearch.paths import Paths

    paths = Paths.resolve()
    encoder = load_encoder(get_profile(profile, paths), device="cpu", paths=paths)
    start = time.perf_counter()
    done = [0]

    def report(n: int) -> None:
        done[0] += n
        if done[0] % 2048 < n:
            rate = done[0] / (time.perf_counter() - start)
            print(f"  encoded {done[0]:,}/{len(texts):,} ({rate:.0f}/s)", flush=True)

    vectors = encoder.encode_sentences(texts, progress=report)
    seconds = time.perf_counter() - start
    print(f"encoded {len(texts):,} sentences in {seconds:.0f} s ({len(texts) / seconds:.0f}/s)")
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(file, vectors.astype(np.float32))
    return vectors, texts


def cached_shuffled(profile: str = "minilm", seed: int = 1) -> np.ndarray:
    """The largest cached set of real sentence vectors (``python -m
    benchmarks.sentence_data`` makes it), rows shuffled: held-out queries are its tail."""
    every = np.load(max(CACHE.glob(f"{profile}-*.npy"), key=lambda p: p.stat().st_size))
    out: np.ndarray = every[np.random.default_rng(seed).permutation(len(every))]
    return out


def synthetic(n: int, dim: int, *, seed: int = 0, topics: int = 4096) -> np.ndarray:
    """Unit vectors ``normalise(topic + spread * noise)`` with a power-law topic size.

    Real sentence embeddings are anisotropic (they share a common direction) and form
    topics of very unequal size: a shared mean direction, topic centres around it, and
    per-topic noise reproduce the real top-10 score gaps (checked by
    :func:`neighbour_profile`, see BENCHMARKS.md).
    """
    rng = np.random.default_rng(seed)
    mean = rng.normal(size=dim).astype(np.float32)
    mean /= np.linalg.norm(mean)
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    centres = 0.75 * mean + centres
    weights = 1.0 / np.arange(1, topics + 1) ** 0.8
    weights /= weights.sum()
    spread = rng.uniform(1.6, 2.4, size=topics).astype(np.float32)
    out = np.empty((n, dim), np.float32)
    for lo in range(0, n, 65_536):
        hi = min(n, lo + 65_536)
        which = rng.choice(topics, size=hi - lo, p=weights)
        noise = rng.normal(size=(hi - lo, dim)).astype(np.float32) / np.sqrt(dim)
        out[lo:hi] = centres[which] + spread[which, None] * noise
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def neighbour_profile(x: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    """Shape of the exact top-10 per query: the numbers a generator must reproduce.

    Scores are divided by the spread of each query's scores over the collection, so
    models with different scales (normalised minilm, raw MedCPT) compare.
    """
    scores = queries @ x.T
    top = -np.sort(-scores, axis=1)[:, 1:12]  # drop the query itself (top-1 = 1.0)
    spread = scores.std(axis=1, keepdims=True)
    gaps = (top[:, 0:1] - top[:, 1:]) / spread
    z = (top - scores.mean(axis=1, keepdims=True)) / spread
    return {
        "z_top1": round(float(np.median(z[:, 0])), 2),
        "z_top10": round(float(np.median(z[:, 9])), 2),
        "gap_1_10": round(float(np.median(gaps[:, 8])), 3),
        "gap_10_11": round(float(np.median(top[:, 9] - top[:, 10]) / np.median(spread)), 4),
        "mean_cos": round(float(np.mean(scores)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--limit", type=int, default=None, help="sentences to encode")
    args = parser.parse_args()
    _, texts = real_sentences()
    print(f"{len(texts):,} distinct real abstract sentences")
    vectors, _ = cached_real(args.limit)
    print(f"cached {vectors.shape} under {CACHE}")


if __name__ == "__main__":
    main()
