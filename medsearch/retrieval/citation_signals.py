"""Citation neighbourhoods, and fusing them into ``similar`` and ``cite``'s candidates.

An article's neighbourhood is the two classic relatedness signals of a citation graph:

- **co-citation** (Small, 1973): articles cited together with it;
- **bibliographic coupling** (Kessler, 1963): articles citing the same references.

Each shared neighbour counts ``1 / log(2 + its degree)`` (Adamic and Adar, 2003): a review
citing 400 articles, or a reference everyone cites, says less about two articles than a
short list or a rare reference both share.

Fusion is reciprocal rank fusion (Cormack et al., 2009) of the text order with the
neighbourhood's order. It is off by default: ``python -m benchmarks.citations signals``
measures it, and docs/citations.md gives the figures and why they do not justify
turning it on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from medsearch.index.citations import CitationGraph
from medsearch.retrieval.fusion import RRF_K, reciprocal_rank_fusion

if TYPE_CHECKING:
    from medsearch.records import Article, Filters
    from medsearch.retrieval.cite import CiteResult
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher

RELATED_CITING_CAP = 2_000
"""Co-citation reads the references of at most this many (the newest) citing articles:
a classic cited 300,000 times would otherwise read 300,000 rows for one answer."""
FUSE_DEPTH = 50
"""How deep each side is read before fusion: the text side's candidates and the
neighbourhood's best."""
NO_HIDDEN: Mapping[int, int] = {}


def _references(graph: CitationGraph, pmid: int, hidden: Mapping[int, int]) -> list[int]:
    refs = graph.references(pmid)[0].tolist()
    gone = hidden.get(pmid)
    return [r for r in refs if r != gone] if gone is not None else refs


def neighbourhood(
    graph: CitationGraph, pmid: int, hidden: Mapping[int, int] = NO_HIDDEN
) -> dict[int, float]:
    """Co-citation and coupling scores of every article related to ``pmid`` (itself
    left out). ``hidden``: a citing PMID -> a cited PMID whose edge is read as absent
    (a held-out evaluation hides the edge it asks about)."""
    scores: dict[int, float] = {}
    own_refs = _references(graph, pmid, hidden)
    if own_refs:
        degrees = graph.counts(own_refs)
        for ref, degree in zip(own_refs, degrees.tolist(), strict=True):
            weight = 1.0 / math.log(2.0 + degree)
            for other in graph.cited_by(ref).tolist():
                if hidden.get(other) != ref:
                    scores[other] = scores.get(other, 0.0) + weight
    citing = graph.cited_by(pmid)[-RELATED_CITING_CAP:]
    for source in citing.tolist():
        if hidden.get(source) == pmid:
            continue
        refs = _references(graph, source, hidden)
        weight = 1.0 / math.log(2.0 + len(refs))
        for other in refs:
            scores[other] = scores.get(other, 0.0) + weight
    scores.pop(pmid, None)
    return scores


def neighbourhood_of_set(
    graph: CitationGraph, pmids: Iterable[int], hidden: Mapping[int, int] = NO_HIDDEN
) -> dict[int, float]:
    """The summed neighbourhoods of ``pmids`` (a manuscript's references so far), the
    set's own members left out."""
    members = set(pmids)
    total: dict[int, float] = {}
    for pmid in members:
        for other, score in neighbourhood(graph, pmid, hidden).items():
            total[other] = total.get(other, 0.0) + score
    for pmid in members:
        total.pop(pmid, None)
    return total


def ranked(scores: Mapping[int, float], limit: int | None = None) -> list[int]:
    """PMIDs best first (ties by PMID)."""
    order = sorted(scores, key=lambda p: (-scores[p], p))
    return order if limit is None else order[:limit]


def fuse(
    text_order: Sequence[int],
    signal: Mapping[int, float],
    *,
    within: bool,
    rrf_k: int = RRF_K,
) -> list[tuple[int, float]]:
    """The text order fused with the neighbourhood's order (RRF). ``within``: the
    neighbourhood only reorders the text's candidates (``cite``); else its best
    :data:`FUSE_DEPTH` may join them (``similar``). Returns (PMID, fused score), best
    first."""
    pool = set(text_order)
    graph_order = [p for p in ranked(signal) if p in pool] if within else ranked(signal)
    fused = reciprocal_rank_fusion(
        {"text": list(text_order), "citations": graph_order[:FUSE_DEPTH]}, k=rrf_k
    )
    return [(f.pmid, f.score) for f in fused]


def filtered_in(articles: dict[int, Article], pmid: int, filters: Filters) -> bool:
    """Filters keep stored articles that pass them; with any filter set, an article
    outside the store (nothing to test) is left out."""
    article = articles.get(pmid)
    if filters.empty:
        return True
    return article is not None and filters.accepts(article)


def similar_fused(
    searcher: Searcher, graph: CitationGraph, pmid: int, *, k: int, filters: Filters
) -> SearchResult:
    """``similar --by text+citations``: the nearest article vectors fused with the
    citation neighbourhood of ``pmid``; a hit's ``sources`` say which side found it."""
    from dataclasses import replace

    from medsearch.retrieval.neighbours import similar
    from medsearch.retrieval.results import Candidate, make_hits

    text = similar(searcher, pmid, k=max(k, FUSE_DEPTH), filters=filters)
    signal = neighbourhood(graph, pmid)
    fused = dict(fuse([h.pmid for h in text.hits], signal, within=False))
    articles = searcher.store.get_many(list(fused))
    kept = [p for p in fused if p in articles and filtered_in(articles, p, filters)][:k]
    by_text = {h.pmid for h in text.hits}
    counts = graph.counts(kept).tolist() if kept else []
    candidates = [
        Candidate(
            pmid=p,
            score=fused[p],
            sources=tuple(
                name for name, held in (("dense", p in by_text), ("citations", p in signal)) if held
            ),
        )
        for p in kept
    ]
    hits = tuple(
        replace(h, cited_by=n) for h, n in zip(make_hits(candidates, articles), counts, strict=True)
    )
    return text.with_hits(hits, total=len(hits), mode="text+citations")


def cite_fused(
    result: CiteResult, graph: CitationGraph, cited: Iterable[int], k: int
) -> CiteResult:
    """``cite --cited PMIDS``: each citance's candidates reordered by RRF with the
    neighbourhood of the references the manuscript already cites, then cut to ``k``."""
    from dataclasses import replace

    signal = neighbourhood_of_set(graph, cited)
    out = []
    for item in result.citances:
        hits = {h.pmid: h for h in item.result.hits}
        order = fuse(list(hits), signal, within=True)[:k]
        new_hits = tuple(
            replace(hits[p], rank=i, score=score) for i, (p, score) in enumerate(order, 1)
        )
        out.append(replace(item, result=item.result.with_hits(new_hits)))
    return replace(result, citances=tuple(out))
