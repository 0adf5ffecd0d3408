"""Delta reranker quality on a BEIR collection, one line per training-signal set.

``python -m benchmarks.rerank_quality BEIR_DIR [--models minilm] [--mode hybrid]
[--signals titles,sentences --signals titles] [--queries 5000] [--epochs 6]
[--marks-from-train]``

For each ``--signals`` set the collection's Delta model is trained from its corpus
alone (never its queries or judgements), then the test queries are searched through
the same ``Searcher`` as ``medsearch eval``. Printed per set: nDCG@10 of the first
stage (the in-run reference), of Delta at the blend it chose on held-out pseudo-queries,
and at every blend (so the choice can be judged), plus the held-out figures it saw.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from medsearch.beir import load_qrels, load_queries
from medsearch.metrics import evaluate_run
from medsearch.paths import Paths
from medsearch.progress import NullProgress

BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)


def ndcg_by_blend(home: Paths, directory: Path, mode: str, pmids: object) -> dict[float, float]:
    from medsearch.retrieval.searcher import open_searcher

    qrels = load_qrels(directory, "test")
    queries = load_queries(directory)
    wanted = [q for q in qrels if q in queries]
    out: dict[float, float] = {}
    with open_searcher(home) as searcher:
        scorer = searcher.delta_model().scorer
        assert scorer is not None, searcher.delta_model().problem
        for blend in BLENDS:
            scorer.meta["blend"] = blend
            run = {}
            for qid in wanted:
                result = searcher.search(
                    queries[qid], mode=mode, k=100, syntax=False, rerank="delta"
                )
                run[qid] = [pmids.doc_id(h.pmid) for h in result.hits]  # type: ignore[attr-defined]
            out[blend] = evaluate_run(run, qrels, k_values=(10, 100))["ndcg@10"]
    return out


def simulate_marks(home: Paths, directory: Path) -> int:
    """A user who cited every judged-relevant article of each *train* query."""
    from medsearch.beir import doc_pmid
    from medsearch.rerank import marks

    home.signals_file.unlink(missing_ok=True)
    queries = load_queries(directory)
    written = 0
    for qid, judged in load_qrels(directory, "train").items():
        if qid in queries:
            relevant = [doc_pmid(d) for d, grade in judged.items() if grade > 0]
            written += marks.record(home.signals_file, queries[qid], relevant, "cited")
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--models", default=None)
    parser.add_argument("--mode", default="hybrid")
    parser.add_argument("--signals", action="append", default=None)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument(
        "--marks-from-train",
        action="store_true",
        help="Simulate a user's marks with the collection's *train* judgements (queries"
        " disjoint from the test split), for the signal set's `marks`.",
    )
    args = parser.parse_args(argv)

    from medsearch.evaluate import build_collection
    from medsearch.training.train import train_corpus

    paths = Paths.resolve(args.home).ensure()
    home, pmids, _ = build_collection(
        args.beir_dir,
        paths,
        profile=args.models,
        encode=args.mode != "lexical",
        progress=NullProgress(),
    )
    if args.marks_from_train:
        print(f"{simulate_marks(home, args.beir_dir):,} marks from the train judgements")
    rows = []
    for signals in args.signals or ["titles,sentences"]:
        shutil.rmtree(home.rerank_dir, ignore_errors=True)
        started = time.monotonic()
        report = train_corpus(
            home,
            queries=args.queries,
            epochs=args.epochs,
            signals=tuple(signals.split(",")),
        )
        trained = time.monotonic() - started
        scores = ndcg_by_blend(home, args.beir_dir, args.mode, pmids)
        row = {
            "signals": signals,
            "queries": report.queries,
            "train_seconds": round(trained),
            "chosen_blend": report.blend,
            "held_out": {k: round(v, 4) for k, v in report.validation.items()},
            "test_ndcg@10": {str(b): round(v, 4) for b, v in scores.items()},
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.marks_from_train:  # the simulated user must not train later eval models
        home.signals_file.unlink(missing_ok=True)
    first = rows[0]["test_ndcg@10"]["0.0"]
    print(f"first stage ({args.mode}) nDCG@10 {first}")
    for row in rows:
        chosen = row["test_ndcg@10"][str(row["chosen_blend"])]
        print(
            f"{row['signals']:<28} chosen blend {row['chosen_blend']}: {chosen}"
            f" (x{chosen / first:.3f} the first stage); Delta alone {row['test_ndcg@10']['1.0']}"
        )


if __name__ == "__main__":
    main()
