"""The cross-encoder's step: reorder a result's head by its scores.

It runs after the first stage has been shown (the TUI reranks in the background) or
straight after it (the CLI, ``cite``, ``eval``); :meth:`~medsearch.retrieval.searcher.
Searcher.rerank` decides the head and finds the model, this does the reordering.

On a CPU the CLI gives it a deadline (``[search] rerank_budget_cpu``, issue 42): a
BERT-base cross-encoder scores a few pairs a second there, and a command that waited for
the whole head took 40 s. Under a deadline the head is scored in consecutive batches
sized by the rate the first batch measured, until the next batch would not fit; the
pairs scored are reordered among themselves and the rest keep their first-stage order
after them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from medsearch.models.batching import Cancelled
from medsearch.records import Hit
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.models.cross import CrossEncoder
    from medsearch.retrieval.resources import Resources
    from medsearch.store import Store


def cross_rerank(
    cross: CrossEncoder,
    store: Store,
    result: SearchResult,
    size: int,
    *,
    is_cancelled: Callable[[], bool] | None = None,
) -> SearchResult:
    """Cross-encoder scores for the first ``size`` hits; the order follows them, the tail
    keeps its own. Each reordered hit keeps its rank before reranking (the Delta
    reranker's, when it ran first). A cancelled rerank returns the result unchanged."""
    if size == 0:
        return result
    t0 = time.perf_counter()
    try:
        scores = cross.score_pairs(
            _query(result), head_docs(store, result, size), is_cancelled=is_cancelled
        ).tolist()
    except Cancelled:
        return result
    return reordered(result, scores, t0)


def _query(result: SearchResult) -> str:
    return result.query or result.citance or ""


def head_docs(store: Store, result: SearchResult, size: int) -> list[tuple[str, str]]:
    """(title, abstract) of the first ``size`` hits, as the cross-encoder reads them."""
    top = result.hits[:size]
    records = store.get_many([h.pmid for h in top])
    return [
        (records[h.pmid].title, records[h.pmid].abstract_text)
        if h.pmid in records
        else (h.title, "")
        for h in top
    ]


def reordered(result: SearchResult, scores: Sequence[float], t0: float) -> SearchResult:
    """The head's first ``len(scores)`` hits in the scores' order, then the rest in theirs."""
    size = len(scores)
    if size == 0:
        return result
    top = result.hits[:size]
    order = sorted(range(size), key=lambda i: -scores[i])
    hits: list[Hit] = []
    for i in order:
        first = top[i].first_stage_rank
        hits.append(
            replace(
                top[i],
                rank=len(hits) + 1,
                score=scores[i],
                first_stage_rank=top[i].rank if first is None else first,
            )
        )
    for h in result.hits[size:]:
        hits.append(replace(h, rank=len(hits) + 1))
    return replace(
        result,
        hits=tuple(hits),
        reranked=True,
        rerankers=(*result.rerankers, "cross"),
        timings=(*result.timings, ("rerank", time.perf_counter() - t0)),
    )


BUDGET_SETTING = "[search] rerank_budget_cpu"


def budgeted_rerank(
    resources: Resources,
    result: SearchResult,
    size: int,
    budget: float,
    *,
    is_cancelled: Callable[[], bool] | None = None,
) -> SearchResult:
    """:func:`cross_rerank` within ``budget`` seconds, the cross-encoder's load included.

    The load is not started when it would not fit: it is judged by how long the query
    encoder took to load in this process (MedCPT's three models are one size), so a
    2-core machine skips a load it would wait on and says so. What was reranked, when
    not the whole head, is said in a note.
    """
    t0 = time.perf_counter()
    deadline = t0 + budget
    if size == 0:
        return result
    if resources.cross is None:
        expected = resources.cross_load_estimate()
        if budget <= 0 or expected >= budget:
            why = (
                f"loading it takes ~{expected:.1f} s here, past its {budget:g} s budget"
                f" ({BUDGET_SETTING})"
                if budget > 0
                else f"{BUDGET_SETTING} is 0"
            )
            note = f"cross-encoder not run on the CPU: {why}; --rerank cross runs it"
            return replace(result, notes=(*result.notes, note))
    cross = resources.cross_encoder()
    if cross is None:
        note = "no cross-encoder in this model profile: first-stage order kept"
        return replace(result, notes=(*result.notes, note))
    docs = head_docs(resources.store, result, size)
    try:
        scores = scores_within(cross, _query(result), docs, deadline, is_cancelled=is_cancelled)
    except Cancelled:
        return result
    out = reordered(result, scores, t0)
    if len(scores) < size:
        note = (
            f"cross-encoder reranked the top {len(scores)} of {size} on the CPU within its"
            f" {budget:g} s budget ({BUDGET_SETTING}); --rerank cross reranks all {size}"
        )
        out = replace(out, notes=(*out.notes, note))
    return out


FIRST_BATCH = 2
"""Pairs in a deadline's first batch: it measures this machine's rate for the rest."""


def scores_within(
    cross: CrossEncoder,
    query: str,
    docs: Sequence[tuple[str, str]],
    deadline: float,
    *,
    is_cancelled: Callable[[], bool] | None = None,
) -> list[float]:
    """Scores of ``docs``'s first pairs, as many as fit before ``deadline``.

    Consecutive batches, in the head's order (never regrouped: int8 scales each batch by
    its own range, see :meth:`CrossEncoder.score_pairs`); each sized by the seconds per
    pair measured so far, at most the device's batch; none once the next would end
    past the deadline. The first batch runs if any time is left at all.
    """
    scores: list[float] = []
    per_pair: float | None = None
    while len(scores) < len(docs):
        left = deadline - time.perf_counter()
        if left <= 0:
            break
        remaining = len(docs) - len(scores)
        if per_pair is None:
            n = min(FIRST_BATCH, remaining)
        else:
            n = min(int(left / per_pair), cross.batch_size, remaining)
        if n <= 0:
            break
        t0 = time.perf_counter()
        batch = docs[len(scores) : len(scores) + n]
        scores.extend(cross.score_pairs(query, batch, is_cancelled=is_cancelled).tolist())
        per_pair = (time.perf_counter() - t0) / n
    return scores
