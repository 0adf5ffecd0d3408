"""Delta reranker speed: 500 candidates for one query, beside the cross-encoder's cost.

``python -m benchmarks.rerank --home HOME [--queries 50] [--docs 500] [--cross]``

HOME is a data home with a trained Delta model (e.g. an eval collection after
``medsearch eval ... --rerank delta``). For each query (titles of the corpus's own
articles), the first stage's top ``--docs`` are scored by Delta; the script prints p50/
p95 of tokenising + features ("featurise"), the network ("forward") and both ("delta"),
with NumPy/BLAS held to one thread (the other is the UI's), and, as the in-run
reference, the time to fetch and decode those 500 records from the store, which every
reranker pays. ``--cross`` adds a BERT-base-shaped int8 cross-encoder's cost per
document at 256 tokens (random weights: the cost is the shape's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
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


if __name__ == "__main__":
    main()
