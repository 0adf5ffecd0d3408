"""Choose the lexical field boosts on BEIR SciFact: nDCG@10 for a few settings.

Indexes the 5,183 SciFact abstracts as Articles (title, abstract), runs the 300 test
claims as plain ranked words (``syntax=False``: claims are prose, not queries) and
scores each setting with pytrec_eval. The published BM25 baselines are 0.665 (BEIR,
Elasticsearch) and 0.679 (Pyserini flat). The chosen boosts are the constants in
``medsearch/index/lexical/query.py``.

    python -m benchmarks.lexical weights [--data ../shared/data/beir/scifact]
        [--no-abstract 0.28]

``--no-abstract F`` drops the abstract of a seeded fraction F of the documents before
indexing. SciFact has an abstract for every document; 11.6M of PubMed's 40.9M citations
have none (0.28), so this is how a boost choice is checked against title-only records,
which a sum of field scores weighs differently from dis_max.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.lexical.query import LEGACY_RANKING, Ranking
from medsearch.records import AbstractSection, Article

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "beir" / "scifact"


def _ta(title: float, abstract: float = 1.0, tie: float | None = None) -> Ranking:
    return Ranking(fields=((ls.TITLE, title), (ls.ABSTRACT, abstract)), tie_breaker=tie)


SETTINGS: dict[str, Ranking] = {
    **{f"sum: title {t}, abstract 1.0": _ta(t) for t in (0.5, 1.0, 1.5, 2.0)},
    **{f"dis_max tie {tie}: title 1.0": _ta(1.0, tie=tie) for tie in (0.0, 0.3, 0.5, 0.7)},
    "dis_max tie 0.3: title 1.5": _ta(1.5, tie=0.3),
    "abstract only": Ranking(fields=((ls.ABSTRACT, 1.0),)),
    "dis_max tie 0.3 (format 2's ranking)": LEGACY_RANKING,
    "defaults, stop words kept": Ranking(drop_stop_words=False),
    "defaults (lexical_query constants)": Ranking(),
}


def load_corpus(data: Path, no_abstract: float = 0.0, seed: int = 0) -> list[Article]:
    rng = random.Random(seed)
    articles = []
    with (data / "corpus.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            articles.append(
                Article(
                    pmid=int(row["_id"]),
                    title=row.get("title", ""),
                    abstract=()
                    if rng.random() < no_abstract
                    else (AbstractSection(row.get("text", "")),),
                )
            )
    return articles


def load_queries(data: Path) -> tuple[dict[str, str], dict[str, dict[str, int]]]:
    qrels: dict[str, dict[str, int]] = {}
    with (data / "qrels" / "test.tsv").open() as handle:
        next(handle)
        for line in handle:
            qid, doc, score = line.split()
            qrels.setdefault(qid, {})[doc] = int(score)
    queries = {}
    with (data / "queries.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries[row["_id"]] = row["text"]
    return queries, qrels


def evaluate(
    index: LexicalIndex,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    ranking: Ranking,
) -> dict[str, float]:
    run: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        result = index.search(text, k=100, syntax=False, snippets=0, ranking=ranking)
        run[qid] = {str(h.pmid): h.score for h in result.hits}
    import pytrec_eval  # here: a machine that only times queries need not have it

    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    scores = evaluator.evaluate(run)
    n = len(scores)
    return {
        "ndcg@10": sum(s["ndcg_cut_10"] for s in scores.values()) / n,
        "recall@100": sum(s["recall_100"] for s in scores.values()) / n,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--no-abstract", type=float, default=0.0, help="fraction of documents without abstract"
    )
    args = parser.parse_args(argv)
    articles = load_corpus(args.data, args.no_abstract)
    queries, qrels = load_queries(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex.open(Path(tmp) / "lexical")
        started = time.perf_counter()
        index.upsert(articles)
        index.commit()
        print(f"indexed {index.count()} docs in {time.perf_counter() - started:.1f} s")
        print(f"{'setting':40} {'nDCG@10':>8} {'R@100':>8}")
        for name, ranking in SETTINGS.items():
            got = evaluate(index, queries, qrels, ranking)
            print(f"{name:40} {got['ndcg@10']:8.4f} {got['recall@100']:8.4f}")
        index.close()


if __name__ == "__main__":
    main()
