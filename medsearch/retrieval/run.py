"""One search as ``search`` runs it, for every caller: the first stage, the cross-encoder
within its budget, the order asked for, the citation counts and did-you-mean.

The CLI (``medsearch search``) and the service (``GET /search``) both call
:func:`run_search`, so a served answer cannot drift from the command's: the sequence
once lived in each of them and the service's copy had lost the counted set of a sort.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from medsearch.records import Filters

if TYPE_CHECKING:
    from medsearch.index.citations import CitationGraph
    from medsearch.index.lexical.spelling import Suggestion
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher

EXPORT_LIMIT = 10_000
"""The most records an export of a search lists (the searcher's deepest list)."""


@dataclass(frozen=True, slots=True)
class SearchRun:
    """A search's answer: the result as ``--json`` prints it, and did-you-mean (only
    when hits are listed: a count and an export show none)."""

    result: SearchResult
    suggestion: Suggestion | None = None


def run_search(
    searcher: Searcher,
    query: str,
    *,
    mode: str | None,
    k: int,
    filters: Filters | None = None,
    rerank: str | None = None,
    sort: str = "relevance",
    count_only: bool = False,
    export_limit: int | None = None,
    graph: CitationGraph,
    history: Callable[[int], str] | None = None,
) -> SearchRun:
    """``search``'s sequence. ``count_only``: only the total (no model, no vector).
    ``export_limit``: the hits are the counted set's first ``export_limit`` in ``sort``
    order, for an export. Otherwise the best ``k``: reranked when relevance is asked
    (the cross-encoder within :meth:`Searcher.rerank_budget`), else the counted set
    sorted, with citation counts and a spelling suggestion."""
    from medsearch.index.lexical.spelling import did_you_mean
    from medsearch.retrieval.citations import with_counts
    from medsearch.retrieval.sorting import depth_for, sort_result

    export = export_limit is not None
    first_stage_only = count_only or export or sort != "relevance"
    if count_only:
        depth = 1
    elif export_limit is not None:
        depth = export_limit
    else:
        depth = depth_for(sort, k)
    result = searcher.search(
        query,
        mode=mode,
        k=depth,
        filters=filters or Filters(),
        rerank="none" if first_stage_only else rerank,
        snippets=not first_stage_only,
        history=history,
        within_count=export or sort != "relevance",  # an order covers the counted set
        count_only=count_only,  # a count loads no model and no vector
    )
    if count_only:
        return SearchRun(result)
    if not first_stage_only and searcher.wants_cross(result, rerank):
        result = searcher.rerank(result, budget=searcher.rerank_budget(rerank))
    if export:
        return SearchRun(sort_result(result, sort, len(result.hits), searcher.store, graph=graph))
    result = sort_result(result, sort, k, searcher.store, searcher.lexical, graph)
    result = with_counts(result.with_hits(result.hits[:k]), graph)
    return SearchRun(result, did_you_mean(searcher.lexical, query))
