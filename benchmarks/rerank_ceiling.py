"""How much any CPU-side signal could add to the hybrid first stage, tuned on the test set.

``python -m benchmarks.rerank_ceiling BEIR_DIR [--models minilm] [--home H]``

The Delta reranker is a learned combination of word-level matching and the Lex3
features. Before asking whether training finds a good combination, this asks whether
one exists: each signal alone, and the first-stage order plus w x (the signal,
standardised per query) for a grid of w, with the best w picked *on the test queries
themselves* (so the figure is an optimistic ceiling, not a result). Signals: the
collection's trained Delta score, its Lex3 features (BM25 over the whole abstract, title
Jaccard and coverage), the profile's article cosine and the best abstract-sentence
cosine (every sentence of every candidate encoded, as LitSense-style evidence). The
collection needs a trained Delta model (``medsearch eval DIR --mode hybrid --rerank
delta`` trains one).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from medsearch.beir import doc_pmid, load_qrels, load_queries
from medsearch.metrics import evaluate_run
from medsearch.paths import Paths
from medsearch.progress import NullProgress

WEIGHTS = (0.0001, 0.0002, 0.0005, 0.001, 0.002, 0.004)
DEPTH = 500


def _z(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (x - x.mean()) / (x.std() + 1e-9)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--models", default="minilm")
    parser.add_argument("--home", type=Path, default=None)
    args = parser.parse_args(argv)

    from medsearch.evaluate import build_collection
    from medsearch.rerank.scorer import DeltaScorer, featurise
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.sentences import article_sentences

    paths = Paths.resolve(args.home).ensure()
    home, _, _ = build_collection(
        args.beir_dir, paths, profile=args.models, encode=True, progress=NullProgress()
    )
    qrels = load_qrels(args.beir_dir, "test")
    queries = load_queries(args.beir_dir)
    judged = {q: {str(doc_pmid(d)): g for d, g in rel.items()} for q, rel in qrels.items()}
    rows: dict[str, tuple[list[int], dict[str, np.ndarray]]] = {}
    started = time.monotonic()
    with open_searcher(home) as searcher:
        searcher.load_models()
        model = home.rerank_dir / "delta"
        if not (model / "meta.json").exists():
            raise SystemExit(f"no trained Delta model in {model}: train one first")
        scorer = DeltaScorer.load(model)  # whatever blend it chose: its scores are asked
        dense = searcher.dense_side("the ceiling")
        for qid in (q for q in qrels if q in queries):
            text = queries[qid]
            result = searcher.search(text, k=DEPTH, syntax=False, rerank="none", snippets=False)
            records = searcher.articles([h.pmid for h in result.hits])
            pmids = [h.pmid for h in result.hits if h.pmid in records]
            docs = [(records[p].title, records[p].abstract_text) for p in pmids]
            feats = featurise(text, docs, scorer.vocab, scorer.idf, scorer.config)
            query = dense.encode_query(text).reshape(-1)
            rows[qid] = (
                pmids,
                {
                    "delta": scorer.forward(feats),
                    "bm25 (abstract)": feats.lex[:, 0],
                    "title jaccard": feats.lex[:, 1],
                    "title coverage": feats.lex[:, 2],
                    "article cosine": dense.articles.get(np.array(pmids)) @ query,
                    "_query": query,
                },
            )
        union = sorted({p for pmids, _ in rows.values() for p in pmids})
        records = searcher.articles(union)
        owner, texts = [], []
        for p in union:
            for sentence in article_sentences(records[p]):
                owner.append(p)
                texts.append(sentence.text)
        t0 = time.monotonic()
        vectors = dense.encoder.encode_sentences(texts)
        print(f"encoded {len(texts):,} sentences in {time.monotonic() - t0:.0f} s", flush=True)
    owner_arr = np.array(owner)
    order = np.argsort(owner_arr, kind="stable")
    owner_arr, vectors = owner_arr[order], vectors[order]
    firsts, starts = np.unique(owner_arr, return_index=True)
    where = {int(p): i for i, p in enumerate(firsts)}
    for pmids, signals in rows.values():
        best = np.maximum.reduceat(vectors @ signals.pop("_query"), starts)
        signals["best sentence cosine"] = np.array(
            [best[where[p]] if p in where else -1.0 for p in pmids], dtype=np.float32
        )

    def ndcg(score: Callable[[int, dict[str, np.ndarray]], np.ndarray]) -> float:
        run = {}
        for qid, (pmids, signals) in rows.items():
            top = np.argsort(-score(len(pmids), signals), kind="stable")[:100]
            run[qid] = [str(pmids[i]) for i in top]
        return evaluate_run(run, judged, k_values=(10,))["ndcg@10"]

    def first(n: int) -> np.ndarray:
        out: np.ndarray = 1.0 / (60.0 + np.arange(1, n + 1))
        return out

    reference = ndcg(lambda n, s: first(n))
    print(f"first stage (hybrid {args.models}) nDCG@10 {reference:.4f}; {len(rows)} queries")
    print("| signal | alone | first stage + w * z(signal), w = " + ", ".join(map(str, WEIGHTS)))
    print("|---|---|---|")
    for name in rows[next(iter(rows))][1]:
        alone = ndcg(lambda n, s, name=name: s[name])
        grid = [ndcg(lambda n, s, w=w, name=name: first(n) + w * _z(s[name])) for w in WEIGHTS]
        print(
            f"| {name} | {alone:.4f} | "
            + " / ".join(f"{g:.4f}" for g in grid)
            + f" (best x{max(grid) / reference:.4f}) |",
            flush=True,
        )
    print(f"total {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
