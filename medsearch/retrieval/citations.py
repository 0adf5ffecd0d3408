"""References and cited-by as results, and citation counts on any result's hits.

Both lists answer for any PMID, stored or not: an entry outside the store is a hit with
its PMID (and the DOI its citing record gives), no title, and ``in_corpus`` false. Counts
are "cited by N in this corpus": edges from the stored records' reference lists and an
imported Open Citation Collection, not the world's citations.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from medsearch.index.citations import CitationGraph
from medsearch.records import Article, Filters, Hit
from medsearch.retrieval.results import SearchResult
from medsearch.store.refs import source_names

if TYPE_CHECKING:
    from medsearch.store import Store

CITED_BY = "cited_by"
"""The hit field (``--json``) holding the article's citation count in this corpus."""
CITEDBY_SORTS = ("date", "cited", "relevance")
NO_FILTERS = Filters()


def open_graph(folder: Path, store: Store) -> CitationGraph:
    """The graph of ``store`` (an empty one for a store older than the graph's tables)."""
    try:
        return CitationGraph.open(folder, store.conn)
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        return CitationGraph.empty(store.conn)


def _hit(
    rank: int,
    pmid: int,
    score: float,
    article: Article | None,
    *,
    doi: str | None = None,
    source: str | None = None,
    seed_links: int | None = None,
    cited_by: int | None = None,
) -> Hit:
    if article is None:
        return Hit(
            rank=rank,
            pmid=pmid,
            score=score,
            in_corpus=False,
            doi=doi,
            reference_source=source,
            seed_links=seed_links,
            cited_by=cited_by,
        )
    return Hit(
        rank=rank,
        pmid=pmid,
        score=score,
        title=article.title,
        journal=article.journal_abbrev or article.journal,
        year=article.year,
        authors=tuple(a.display for a in article.authors[:3]),
        in_corpus=True,
        doi=doi,
        reference_source=source,
        seed_links=seed_links,
        cited_by=cited_by,
    )


def _kept(articles: dict[int, Article], pmid: int, filters: Filters) -> bool:
    """Filters keep stored articles that pass them; with any filter set, an article
    outside the store (nothing to test) is left out."""
    article = articles.get(pmid)
    if filters.empty:
        return True
    return article is not None and filters.accepts(article)


def references(
    store: Store, graph: CitationGraph, pmid: int, filters: Filters = NO_FILTERS
) -> SearchResult:
    """What ``pmid`` cites: its record's reference list in order (with DOIs, and the
    references that give only a DOI), then the collection's further edges."""
    edges, in_list, in_occ = graph.references(pmid)
    source = {
        int(p): source_names(bool(a), bool(b))
        for p, a, b in zip(edges, in_list, in_occ, strict=True)
    }
    citing = store.get_many([pmid]).get(pmid)
    entries: list[tuple[int, str | None]] = []
    seen: set[int] = set()
    if citing is not None:
        for ref in citing.references:
            if ref.pmid and ref.pmid in seen:
                continue
            seen.add(ref.pmid)
            entries.append((ref.pmid, ref.doi))
    entries.extend((int(p), None) for p in edges if int(p) not in seen)
    articles = store.get_many([p for p, _ in entries if p])
    counts = graph.counts([p for p, _ in entries])
    hits: list[Hit] = []
    for (ref_pmid, doi), count in zip(entries, counts, strict=True):
        if not _kept(articles, ref_pmid, filters):
            continue
        stored = articles.get(ref_pmid)
        hits.append(
            _hit(
                len(hits) + 1,
                ref_pmid,
                float(len(hits) + 1),
                stored,
                doi=doi if stored is None or not stored.doi else stored.doi,
                source=source.get(ref_pmid, "reference list"),
                cited_by=int(count) if ref_pmid else None,
            )
        )
    return SearchResult(
        hits=tuple(hits),
        mode="references",
        total=len(hits),
        pmid=pmid,
        details=(("in_corpus", citing is not None),),
        filters=filters,
    )


def cited_by(
    store: Store,
    graph: CitationGraph,
    pmid: int,
    filters: Filters = NO_FILTERS,
    sort: str = "date",
) -> SearchResult:
    """Who cites ``pmid`` (stored or not). ``sort``: date (newest first), cited (most
    cited first), relevance (most references shared with ``pmid``: bibliographic
    coupling, the citing articles closest to it in what they build on)."""
    if sort not in CITEDBY_SORTS:
        from medsearch.errors import UsageError

        raise UsageError(f"unknown sort {sort!r}; choose one of {', '.join(CITEDBY_SORTS)}")
    citing = [int(p) for p in graph.cited_by(pmid)]
    articles = store.get_many(citing)
    citing = [p for p in citing if _kept(articles, p, filters)]
    counts = dict(zip(citing, graph.counts(citing).tolist(), strict=True))
    if sort == "relevance":
        own = graph.references(pmid)[0]
        score = {p: float(len(np.intersect1d(graph.references(p)[0], own))) for p in citing}
    elif sort == "cited":
        score = {p: float(counts[p]) for p in citing}
    else:
        score = {p: float(_date_rank(articles.get(p))) for p in citing}
    ordered = sorted(citing, key=lambda p: (-score[p], -counts[p], -p))
    hits = tuple(
        _hit(i, p, score[p], articles.get(p), cited_by=counts[p]) for i, p in enumerate(ordered, 1)
    )
    return SearchResult(
        hits=hits,
        mode="cited_by",
        total=len(hits),
        pmid=pmid,
        sort=sort,
        filters=filters,
    )


def _date_rank(article: Article | None) -> int:
    if article is None or article.year is None:
        return 0
    d = article.pub_date
    return article.year * 10_000 + (d.month or 0) * 100 + (d.day or 0)


def with_counts(result: SearchResult, graph: CitationGraph) -> SearchResult:
    """Each hit with its citation count in this corpus (``cited_by``)."""
    return result.with_hits(add_counts(result.hits, graph))


def add_counts(hits: Sequence[Hit], graph: CitationGraph) -> list[Hit]:
    counts = graph.counts([h.pmid for h in hits]).tolist() if hits else []
    return [
        h if h.cited_by is not None else replace(h, cited_by=n)
        for h, n in zip(hits, counts, strict=True)
    ]


def sorted_by_cited(hits: Sequence[Hit], graph: CitationGraph) -> list[Hit]:
    """Most cited first (ties keep their order), ranks renumbered, counts attached."""
    counted = add_counts(hits, graph)
    ordered = sorted(counted, key=lambda h: -(h.cited_by or 0))
    return [replace(h, rank=i) for i, h in enumerate(ordered, 1)]


RELATED_CITING_CAP = 2_000
"""Co-citation reads the references of at most this many (the newest) citing articles:
a classic cited 300,000 times would otherwise read 300,000 rows for one answer."""


def related(
    store: Store,
    graph: CitationGraph,
    pmid: int,
    k: int = 10,
    filters: Filters = NO_FILTERS,
) -> SearchResult:
    """Articles related to ``pmid`` by citations: co-cited with it (cited by the same
    articles) and bibliographically coupled to it (citing the same references).

    Each shared neighbour counts ``1 / log(2 + its degree)`` (Adamic and Adar, 2003): a
    review citing 400 articles, or a reference everyone cites, says less about two
    articles than a short list or a rare reference both share."""
    scores: dict[int, float] = {}
    own_refs = graph.references(pmid)[0]
    if len(own_refs):
        degrees = graph.counts(own_refs)
        for ref, degree in zip(own_refs.tolist(), degrees.tolist(), strict=True):
            weight = 1.0 / math.log(2.0 + degree)
            for other in graph.cited_by(ref).tolist():
                scores[other] = scores.get(other, 0.0) + weight
    citing = graph.cited_by(pmid)[-RELATED_CITING_CAP:]
    for source in citing.tolist():
        refs = graph.references(source)[0]
        weight = 1.0 / math.log(2.0 + len(refs))
        for other in refs.tolist():
            scores[other] = scores.get(other, 0.0) + weight
    scores.pop(pmid, None)
    ranked = sorted(scores, key=lambda p: (-scores[p], p))
    articles: dict[int, Article] = {}
    chosen: list[int] = []
    for start in range(0, len(ranked), 200):  # read records only as far as the k needs
        batch = ranked[start : start + 200]
        articles.update(store.get_many(batch))
        chosen.extend(p for p in batch if p in articles and _kept(articles, p, filters))
        if len(chosen) >= k:
            break
    chosen = chosen[:k]
    counts = graph.counts(chosen).tolist() if chosen else []
    hits = tuple(
        _hit(i, p, round(scores[p], 6), articles[p], cited_by=n)
        for i, (p, n) in enumerate(zip(chosen, counts, strict=True), 1)
    )
    return SearchResult(
        hits=hits,
        mode="citations",
        total=len(scores),
        pmid=pmid,
        details=(("by", "citations"),),
        filters=filters,
    )
