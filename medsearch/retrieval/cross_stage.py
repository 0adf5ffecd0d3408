"""The cross-encoder's step: reorder a result's head by its scores.

It runs after the first stage has been shown (the TUI reranks in the background) or
straight after it (the CLI, ``cite``, ``eval``); :meth:`~medsearch.retrieval.searcher.
Searcher.rerank` decides the head and finds the model, this does the reordering.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from medsearch.models.batching import Cancelled
from medsearch.records import Hit
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.models.cross import CrossEncoder
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
    query = result.query or result.citance or ""
    if size == 0:
        return result
    top = list(result.hits[:size])
    records = store.get_many([h.pmid for h in top])
    docs = [
        (records[h.pmid].title, records[h.pmid].abstract_text)
        if h.pmid in records
        else (h.title, "")
        for h in top
    ]
    t0 = time.perf_counter()
    try:
        scores = cross.score_pairs(query, docs, is_cancelled=is_cancelled).tolist()
    except Cancelled:
        return result
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
