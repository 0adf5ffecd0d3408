"""IR metrics, computed exactly as trec_eval (and so pytrec_eval and BEIR) computes them.

The published numbers we compare against (BEIR's nDCG@10 on SciFact, MedCPT's papers)
come from pytrec_eval, so each function here reproduces one trec_eval measure to 1e-9
(``tests/test_metrics.py`` checks that against pytrec_eval on random runs):

================  ==================  ==========================================
ours              trec_eval measure   definition
================  ==================  ==========================================
``ndcg_at_k``     ``ndcg_cut_k``      DCG = sum over the top k of rel / log2(rank + 1)
                                      (linear gain, graded; rel <= 0 gains nothing),
                                      divided by the DCG of the judged documents sorted
                                      by rel
``recall_at_k``   ``recall_k``        relevant in the top k / relevant judged
``map_at_k``      ``map_cut_k``       sum of precision@rank at each relevant rank <= k,
                                      divided by the number of relevant judged (not by
                                      min(k, relevant))
``mrr_at_k``      ``recip_rank``      1 / rank of the first relevant document, 0 when
                  cut at k            it is below rank k (BEIR's ``MRR@k``)
================  ==================  ==========================================

"Relevant" means a judgement >= 1 (trec_eval's default ``relevance_level``). A query
whose judgements are all 0 scores 0 on every measure.

Order of a run: our retrievers return ranked lists and the functions take them in that
order (a document repeated in a list counts at its first position). A run given as
scores (``{docid: score}``, the BEIR/pytrec_eval shape) is put in trec_eval's order:
score descending, ties by docid descending (trec_eval compares docids with ``strcmp``,
which orders like Python's ``str`` comparison).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

RELEVANCE_LEVEL = 1

Run = Mapping[str, Mapping[str, float]] | Mapping[str, Sequence[str]]
Qrels = Mapping[str, Mapping[str, int]]


def ndcg_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``ndcg_cut_k``: graded relevance, linear gain, log2(rank + 1) discount."""
    ideal_gains = sorted((rel for rel in qrels.values() if rel > 0), reverse=True)[:k]
    ideal = _dcg(ideal_gains)
    if ideal == 0.0:
        return 0.0
    gains = (max(qrels.get(doc, 0), 0) for doc in _top(ranking, k))
    return _dcg(gains) / ideal


def recall_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 100) -> float:
    """trec_eval ``recall_k``: the share of the relevant documents found in the top k."""
    num_rel = _num_relevant(qrels)
    if num_rel == 0:
        return 0.0
    found = sum(1 for doc in _top(ranking, k) if _relevant(qrels, doc))
    return found / num_rel


def map_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``map_cut_k`` (BEIR's ``MAP@k``): average precision truncated at k.

    The denominator is every relevant judged document, so a query with 20 relevant
    documents cannot reach 1.0 at k=10; that is trec_eval's definition and BEIR's.
    """
    num_rel = _num_relevant(qrels)
    if num_rel == 0:
        return 0.0
    found = 0
    total = 0.0
    for rank, doc in enumerate(_top(ranking, k), start=1):
        if _relevant(qrels, doc):
            found += 1
            total += found / rank
    return total / num_rel


def mrr_at_k(ranking: Sequence[str], qrels: Mapping[str, int], k: int = 10) -> float:
    """trec_eval ``recip_rank`` cut at k (BEIR's ``MRR@k``)."""
    for rank, doc in enumerate(_top(ranking, k), start=1):
        if _relevant(qrels, doc):
            return 1.0 / rank
    return 0.0


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Document ids in trec_eval's order: score descending, ties by docid descending."""
    by_docid = sorted(scores, reverse=True)
    return sorted(by_docid, key=lambda doc: -scores[doc])  # stable: keeps docid order in ties


def evaluate_run(
    run: Run,
    qrels: Qrels,
    *,
    k_values: Sequence[int] = (10, 100),
) -> dict[str, float]:
    """Mean nDCG, recall, MAP and MRR at each k, over the queries in ``qrels``.

    Keys are ``ndcg@K``, ``recall@K``, ``map@K`` and ``mrr@K`` for every K in
    ``k_values``; the defaults give the four BEIR headline numbers ``ndcg@10``,
    ``recall@100``, ``map@10``, ``mrr@10`` (and the other combinations).

    The mean is over every query that has judgements. A judged query the run has no
    entry for (or an empty entry) counts as 0, as ``trec_eval -c`` counts it: a
    retriever must not look better by returning nothing for hard queries. BEIR's own
    ``EvaluateRetrieval.evaluate`` divides by the queries pytrec_eval returned (those in
    both the run and the qrels); the two agree whenever the run answers every query,
    which BEIR's retrievers always do. Run entries for unjudged queries are ignored.
    """
    if any(k < 1 for k in k_values):
        raise ValueError(f"every k must be >= 1, got {tuple(k_values)}")
    totals: dict[str, float] = {}
    for k in k_values:
        for name in ("ndcg", "recall", "map", "mrr"):
            totals[f"{name}@{k}"] = 0.0
    if not qrels:
        return totals
    for qid, judged in qrels.items():
        ranking = _as_ranking(run.get(qid, ()))
        for k in k_values:
            totals[f"ndcg@{k}"] += ndcg_at_k(ranking, judged, k)
            totals[f"recall@{k}"] += recall_at_k(ranking, judged, k)
            totals[f"map@{k}"] += map_at_k(ranking, judged, k)
            totals[f"mrr@{k}"] += mrr_at_k(ranking, judged, k)
    return {name: total / len(qrels) for name, total in totals.items()}


def _as_ranking(entry: Mapping[str, float] | Sequence[str]) -> Sequence[str]:
    if isinstance(entry, Mapping):
        return ranked(entry)
    if isinstance(entry, str):
        raise TypeError("a run entry must be a ranked list of doc ids or a {doc_id: score} map")
    return entry


def _top(ranking: Iterable[str], k: int) -> list[str]:
    """The first k distinct doc ids (a repeated id keeps its first position)."""
    seen: set[str] = set()
    top: list[str] = []
    for doc in ranking:
        if doc in seen:
            continue
        seen.add(doc)
        top.append(doc)
        if len(top) == k:
            break
    return top


def _dcg(gains: Iterable[int]) -> float:
    return math.fsum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def _relevant(qrels: Mapping[str, int], doc: str) -> bool:
    return qrels.get(doc, 0) >= RELEVANCE_LEVEL


def _num_relevant(qrels: Mapping[str, int]) -> int:
    return sum(1 for rel in qrels.values() if rel >= RELEVANCE_LEVEL)
