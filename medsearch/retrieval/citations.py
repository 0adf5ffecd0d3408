"""References and cited-by as results, and citation counts on any result's hits.

Both lists answer for any PMID, stored or not: an entry outside the store is a hit with
its PMID (and the DOI its citing record gives), no title, and ``in_corpus`` false. Counts
are "cited by N in this corpus": edges from the stored records' reference lists and an
imported Open Citation Collection, not the world's citations.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from medsearch.index.citations import CitationGraph
from medsearch.records import Article, Filters, Hit
from medsearch.retrieval.citation_signals import filtered_in, neighbourhood
from medsearch.retrieval.results import SearchResult
from medsearch.store.ref_dois import normal_doi
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
    citation: str | None = None,
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
            citation=citation,
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
    texts: dict[tuple[int, str | None], str] = {}
    seen: set[int] = set()
    if citing is not None:
        for ref in citing.references:
            if ref.pmid and ref.pmid in seen:
                continue
            seen.add(ref.pmid)
            entries.append((ref.pmid, ref.doi))
            if ref.citation:
                texts.setdefault((ref.pmid, ref.doi), ref.citation)
    further = [int(p) for p in edges if int(p) not in seen]
    entries, further = _doi_resolved(store, entries, further)
    entries.extend((p, None) for p in further)
    articles = store.get_many([p for p, _ in entries if p])
    outside = [p for p, doi in entries if p and p not in articles and (p, doi) not in texts]
    texts.update(((p, None), text) for p, text in citation_texts(store, graph, outside).items())
    counts = graph.counts([p for p, _ in entries])
    hits: list[Hit] = []
    for (ref_pmid, doi), count in zip(entries, counts, strict=True):
        if not filtered_in(articles, ref_pmid, filters):
            continue
        stored = articles.get(ref_pmid)
        hits.append(
            _hit(
                len(hits) + 1,
                ref_pmid,
                float(len(hits) + 1),
                stored,
                doi=doi if stored is None or not stored.doi else stored.doi,
                citation=texts.get((ref_pmid, doi)) or texts.get((ref_pmid, None)),
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


def _doi_resolved(
    store: Store, entries: list[tuple[int, str | None]], further: list[int]
) -> tuple[list[tuple[int, str | None]], list[int]]:
    """The reference list's DOI-only entries that became edges (their DOI is a stored
    article's) named by that article's PMID, in their place in the list."""
    if not further or not any(p == 0 for p, _ in entries):
        return entries, further
    by_doi = {normal_doi(a.doi): p for p, a in store.get_many(further).items() if a.doi is not None}
    placed: set[int] = set()
    out: list[tuple[int, str | None]] = []
    for pmid, doi in entries:
        found = by_doi.get(normal_doi(doi)) if pmid == 0 and doi else None
        if found is not None and found not in placed:
            placed.add(found)
            out.append((found, doi))
        else:
            out.append((pmid, doi))
    return out, [p for p in further if p not in placed]


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
    citing = [p for p in citing if filtered_in(articles, p, filters)]
    counts = dict(zip(citing, graph.counts(citing).tolist(), strict=True))
    if sort == "relevance":
        own = graph.references(pmid)[0]
        score = {p: float(len(np.intersect1d(graph.references(p)[0], own))) for p in citing}
    elif sort == "cited":
        score = {p: float(counts[p]) for p in citing}
    else:
        score = {p: float(_date_rank(articles.get(p))) for p in citing}
    ordered = sorted(citing, key=lambda p: (-score[p], -counts[p], -p))
    texts = citation_texts(store, graph, [p for p in ordered if p not in articles])
    hits = tuple(
        _hit(i, p, score[p], articles.get(p), citation=texts.get(p), cited_by=counts[p])
        for i, p in enumerate(ordered, 1)
    )
    return SearchResult(
        hits=hits,
        mode="cited_by",
        total=len(hits),
        pmid=pmid,
        sort=sort,
        filters=filters,
    )


CITATION_LOOKUPS = 500
"""The most articles outside the store whose citation text one answer looks up (each
costs a stored record read); the rest are listed by PMID alone."""


def citation_texts(
    store: Store,
    graph: CitationGraph,
    pmids: Sequence[int],
    known: Sequence[Article] = (),
) -> dict[int, str]:
    """The citation text of each PMID (articles not stored here) that a stored record's
    reference list gives: first from ``known`` records (read already), then from up to
    three stored articles citing it, for the first :data:`CITATION_LOOKUPS` PMIDs."""
    wanted = set(pmids)
    found: dict[int, str] = {}
    for article in known:
        for ref in article.references:
            if ref.citation and ref.pmid in wanted:
                found.setdefault(ref.pmid, ref.citation)
    rest = [p for p in dict.fromkeys(pmids) if p not in found][:CITATION_LOOKUPS]
    citers = {p: [int(c) for c in graph.cited_by(p)[:3]] for p in rest}
    records = store.get_many(sorted({c for cs in citers.values() for c in cs}))
    for pmid, cs in citers.items():
        for c in cs:
            text = next(
                (r.citation for r in getattr(records.get(c), "references", ()) if r.pmid == pmid),
                None,
            )
            if text:
                found[pmid] = text
                break
    return found


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


def related(
    store: Store,
    graph: CitationGraph,
    pmid: int,
    k: int = 10,
    filters: Filters = NO_FILTERS,
) -> SearchResult:
    """Articles related to ``pmid`` by citations: co-cited with it (cited by the same
    articles) and bibliographically coupled to it (citing the same references), scored
    by :func:`~medsearch.retrieval.citation_signals.neighbourhood`."""

    scores = neighbourhood(graph, pmid)
    ranked = sorted(scores, key=lambda p: (-scores[p], p))
    articles: dict[int, Article] = {}
    chosen: list[int] = []
    for start in range(0, len(ranked), 200):  # read records only as far as the k needs
        batch = ranked[start : start + 200]
        articles.update(store.get_many(batch))
        chosen.extend(p for p in batch if p in articles and filtered_in(articles, p, filters))
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
        notes=() if hits else (why_unrelated(graph, pmid, len(scores)),),
    )


def why_unrelated(graph: CitationGraph, pmid: int, related: int) -> str:
    """Why ``similar --by citations`` found nothing: no citation data in this corpus at
    all, none about ``pmid``, nothing sharing its links, or filters that left none."""
    if related:
        return f"{related:,} article(s) share citations with PMID {pmid}; none passes the filters"
    cites, cited_by = len(graph.references(pmid)[0]), len(graph.cited_by(pmid))
    if cites or cited_by:
        return (
            f"no other article shares a reference or a citing article with PMID {pmid}"
            f" here (it cites {cites:,} and is cited by {cited_by:,} in this corpus)"
        )
    if (graph.base_edges or 0) + len(graph.overlay.new_cited) == 0:
        return (
            "this corpus has no citation data: its records carry no reference lists"
            " (`medsearch ingest --citations FILE` imports NCBI's Open Citation Collection)"
        )
    return f"PMID {pmid} neither cites nor is cited by any article in this corpus"
