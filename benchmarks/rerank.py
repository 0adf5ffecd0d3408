"""The Delta reranker: its speed on 500 candidates, and its quality on a BEIR collection.

    python -m benchmarks.rerank [speed] --home HOME [--queries 50] [--docs 500] [--cross]
    python -m benchmarks.rerank quality BEIR_DIR [--models minilm] [--mode hybrid]
        [--signals titles,sentences --signals titles] [--queries 5000] [--epochs 6]
        [--marks-from-train]

Speed: HOME is a data home with a trained Delta model (e.g. an eval collection after
``medsearch eval ... --rerank delta``). For each query (titles of the corpus's own
articles), the first stage's top ``--docs`` are scored by Delta; the script prints p50/
p95 of tokenising + features ("featurise"), the network ("forward") and both ("delta"),
with NumPy/BLAS held to one thread (the other is the UI's), and, as the in-run
reference, the time to fetch and decode those 500 records from the store, which every
reranker pays. ``--cross`` adds a BERT-base-shaped int8 cross-encoder's cost per
document at 256 tokens (random weights: the cost is the shape's).

Quality: for each ``--signals`` set the collection's Delta model is trained from its
corpus alone (never its queries or judgements), then the test queries are searched
through the same ``Searcher`` as ``medsearch eval``. Printed per set: nDCG@10 of the
first stage (the in-run reference), of Delta at the blend it chose on held-out
pseudo-queries, and at every blend (so the choice can be judged), plus the held-out
figures it saw. Nothing here imports NumPy before a mode starts, so ``speed`` can hold
BLAS to one thread.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.modes import run_mode

if TYPE_CHECKING:
    from medsearch.paths import Paths


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def speed(argv: list[str] | None = None) -> None:
    """Delta's speed on one query's candidates, beside fetching them (and a cross-encoder)."""
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, "1")  # before NumPy loads: one thread, the other is the UI's
    parser = argparse.ArgumentParser(description=speed.__doc__)
    parser.add_argument("--home", required=True)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--docs", type=int, default=500)
    parser.add_argument("--cross", action="store_true")
    args = parser.parse_args(argv)

    from medsearch.paths import Paths
    from medsearch.rerank.scorer import DeltaScorer, featurise
    from medsearch.retrieval.searcher import open_searcher

    paths = Paths.resolve(args.home)
    with open_searcher(paths) as searcher:
        # the trained model as it is, whatever blend it chose: speed does not depend on it
        scorer = DeltaScorer.load(paths.rerank_dir / "delta")
        titles = [
            a.title for batch in searcher.store.iter_articles(batch=args.queries) for a in batch
        ]
        titles = [t for t in titles if t][: args.queries]
        times: dict[str, list[float]] = {"fetch": [], "featurise": [], "forward": [], "delta": []}
        cpu: dict[str, list[float]] = {k: [] for k in times}
        for title in titles:
            first = searcher.search(
                title, mode="lexical", k=args.docs, rerank="none", snippets=False
            )
            pmids = [h.pmid for h in first.hits]
            c0, t0 = time.thread_time(), time.perf_counter()
            records = searcher.store.get_many(pmids)
            c1, t1 = time.thread_time(), time.perf_counter()
            docs = [(records[p].title, records[p].abstract_text) for p in pmids if p in records]
            c2, t2 = time.thread_time(), time.perf_counter()
            batch = featurise(title, docs, scorer.vocab, scorer.idf, scorer.config)
            c3, t3 = time.thread_time(), time.perf_counter()
            scorer.forward(batch)
            c4, t4 = time.thread_time(), time.perf_counter()
            for store, (a, b_, c, d, e) in (
                (times, (t0, t1, t2, t3, t4)),
                (cpu, (c0, c1, c2, c3, c4)),
            ):
                store["fetch"].append(b_ - a)
                store["featurise"].append(d - c)
                store["forward"].append(e - d)
                store["delta"].append(e - c)
        docs_seen = statistics.mean(
            len(searcher.search(t, mode="lexical", k=args.docs, rerank="none", snippets=False).hits)
            for t in titles[:5]
        )
    print(f"{len(titles)} queries, ~{docs_seen:.0f} candidates each, 1 thread")
    print(
        "  (wall clock; in brackets this thread's CPU time, which a loaded machine inflates less)"
    )
    for name, values in times.items():
        ms = [v * 1000 for v in values]
        cms = [v * 1000 for v in cpu[name]]
        print(
            f"  {name:<10} p50 {statistics.median(ms):7.1f} ms   p95 {percentile(ms, 0.95):7.1f} ms"
            f"   [cpu p50 {statistics.median(cms):6.1f}  p95 {percentile(cms, 0.95):6.1f}]"
        )
    ratio = statistics.median(times["delta"]) / statistics.median(times["fetch"])
    print(f"  delta / fetching the same records: x{ratio:.2f}")
    if args.cross:
        _cross(args.docs)


def _cross(docs: int) -> None:
    """int8 BERT-base cross-encoder per document at 256 tokens, for scale."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.set_num_threads(1)
    model = BertForSequenceClassification(BertConfig(num_labels=1)).eval()
    model = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    ids = torch.randint(1000, 20000, (4, 256))
    with torch.no_grad():
        model(input_ids=ids)
        t0 = time.perf_counter()
        model(input_ids=ids)
        per_doc = (time.perf_counter() - t0) / 4
    print(
        f"  cross-encoder (BERT-base int8, 256 tokens): {per_doc * 1000:.0f} ms per document;"
        f" {docs} documents would take {per_doc * docs:.0f} s"
    )


BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)


def ndcg_by_blend(home: Paths, directory: Path, mode: str, pmids: object) -> dict[float, float]:
    from medsearch.beir import load_qrels, load_queries
    from medsearch.metrics import evaluate_run
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
    from medsearch.beir import doc_pmid, load_qrels, load_queries
    from medsearch.rerank import marks

    home.signals_file.unlink(missing_ok=True)
    queries = load_queries(directory)
    written = 0
    for qid, judged in load_qrels(directory, "train").items():
        if qid in queries:
            relevant = [doc_pmid(d) for d, grade in judged.items() if grade > 0]
            written += marks.record(home.signals_file, queries[qid], relevant, "cited")
    return written


def quality(argv: list[str] | None = None) -> None:
    """Delta's nDCG@10 on a BEIR collection, one line per training-signal set."""
    parser = argparse.ArgumentParser(description=quality.__doc__)
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
    from medsearch.paths import Paths
    from medsearch.progress import NullProgress
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
    run_mode("benchmarks.rerank", {"speed": speed, "quality": quality}, default="speed")
