"""Sort orders a PubMed user knows: relevance, date, publication date, author, journal.

PubMed offers "Best match", "Most recent", "Publication date", "First author" and
"Journal" (https://pubmed.ncbi.nlm.nih.gov/help/, "Sort by"). The first stage
ranks; another order is applied to the ranked set afterwards, read from the stored
records. A sort other than relevance therefore asks the searcher for a deeper list
(:data:`SORT_DEPTH` hits) so that, say, the newest ten come from the whole set and not
from the best-matching ten; a set larger than that is sorted over its
:data:`SORT_DEPTH` best matches and the search says so.

At 40.9M articles the cost is bounded by the depth, not the set: :data:`SORT_DEPTH`
records read in batches of :data:`READ_BATCH`, one small key kept per record.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from medsearch.query.nodes import ParsedQuery
from medsearch.records import Article, Hit
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.index.citations import CitationGraph
    from medsearch.index.lexical.index import LexicalIndex
    from medsearch.store import Store

SORTS = ("relevance", "date", "pubdate", "author", "journal", "cited")
SORT_DEPTH = 10_000
"""How many best matches a non-relevance sort orders (the searcher's largest -k)."""
READ_BATCH = 1_000

Key = tuple[Any, ...]
Fields = dict[str, Any]
"""A record's sort fields, as ``Store.sort_fields_many`` reads them."""


def _date_key(fields: Fields) -> Key:
    """Newest first. "Most recent" in PubMed orders by the date the record was added
    (EDAT), which the store does not keep: both date sorts use the publication date,
    missing parts counting as earliest (a year alone sorts after its dated months)."""
    date = fields["pub_date"]
    return (-(date.get("year") or 0), -(date.get("month") or 0), -(date.get("day") or 0))


def _author_key(fields: Fields) -> Key:
    """First author's last name (or collective name) A-Z; articles without one last."""
    first = fields["first_author"]
    name = first and (first.get("last_name") or first.get("collective_name"))
    if not name:
        return (1, "")
    initials = first.get("initials") or first.get("fore_name") or ""
    return (0, name.casefold(), initials.casefold())


def _journal_key(fields: Fields) -> Key:
    name = fields["journal_abbrev"] or fields["journal"]
    return (0 if name else 1, name.casefold())


def _cited_key(fields: Fields) -> Key:
    """Most cited in this corpus first (``cited_by``, from the citation graph)."""
    return (-int(fields["cited_by"]),)


KEYS: dict[str, Callable[[Fields], Key]] = {
    "cited": _cited_key,
    "date": _date_key,
    "pubdate": _date_key,
    "author": _author_key,
    "journal": _journal_key,
}


def check_sort(sort: str) -> str:
    from medsearch.errors import UsageError

    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; choose one of {', '.join(SORTS)}")
    return sort


def depth_for(sort: str, k: int) -> int:
    """How many hits to ask the first stage for, to show ``k`` in ``sort`` order."""
    return k if sort == "relevance" else max(k, SORT_DEPTH)


def sorted_hits(
    hits: Sequence[Hit], sort: str, read: Callable[[Sequence[int]], dict[int, Fields]]
) -> list[Hit]:
    """``hits`` in ``sort`` order (relevance: as they are), ranks renumbered.

    ``read`` returns the records' sort fields (``Store.sort_fields_many``: no
    :class:`Article` is built); it is called per batch so only
    the keys stay in memory. Python's sort is stable: equal keys keep the relevance order.
    """
    check_sort(sort)
    if sort == "relevance":
        return list(hits)
    key = KEYS[sort]
    keys: dict[int, Key] = {}
    pmids = [h.pmid for h in hits]
    for start in range(0, len(pmids), READ_BATCH):
        for pmid, fields in read(pmids[start : start + READ_BATCH]).items():
            keys[pmid] = key(fields)
    missing: Key = (2,)
    ordered = sorted(hits, key=lambda h: keys.get(h.pmid, missing))
    return [_renumber(h, i) for i, h in enumerate(ordered, 1)]


def _renumber(hit: Hit, rank: int) -> Hit:
    return replace(hit, rank=rank)


def _citation_counts(graph: CitationGraph) -> Callable[[Sequence[int]], dict[int, Fields]]:
    def read(pmids: Sequence[int]) -> dict[int, Fields]:
        counts = graph.counts(list(pmids)).tolist()
        return {p: {"cited_by": n} for p, n in zip(pmids, counts, strict=True)}

    return read


def with_snippets(
    hits: Sequence[Hit],
    query: str | ParsedQuery,
    lexical: LexicalIndex,
    read: Callable[[Sequence[int]], dict[int, Article]],
) -> list[Hit]:
    """Snippets for the hits a sort brought to the head: the first stage made them for
    its own head only (making 10,000 would cost seconds). The query's terms come from a
    one-hit lexical ranking, milliseconds. ``query``: the search's plan (the query as
    run, ``#N`` expanded and MeSH applied), or text for a result without one."""
    from medsearch.errors import QuerySyntaxError
    from medsearch.index.lexical.snippets import make_snippet

    try:
        terms = lexical.rank(query, k=1, count=False).terms
    except QuerySyntaxError:  # pasted prose the search read as plain words
        terms = lexical.rank(query, k=1, count=False, syntax=False).terms
    bare = [h.pmid for h in hits if not h.snippet]
    if not terms or not bare:
        return list(hits)
    articles = read(bare)
    out: list[Hit] = []
    for hit in hits:
        article = articles.get(hit.pmid)
        if not hit.snippet and article is not None:
            abstract = article.abstract_text
            hit = replace(hit, snippet=make_snippet(abstract, lexical.highlight(abstract, terms)))
        out.append(hit)
    return out


def sort_result(
    result: SearchResult,
    sort: str,
    k: int,
    store: Store,
    lexical: LexicalIndex | None = None,
    graph: CitationGraph | None = None,
) -> SearchResult:
    """``result`` (searched :func:`depth_for` deep) in ``sort`` order, cut to ``k``, with a
    note when the set was larger than what was sorted; with ``lexical``, the new head
    gets its snippets. ``graph``: the citation graph ``cited`` sorts by."""
    if sort == "relevance":
        return result
    read: Callable[[Sequence[int]], dict[int, Fields]] = store.sort_fields_many
    if sort == "cited":
        if graph is None:
            raise ValueError("sorting by citations needs the citation graph")
        read = _citation_counts(graph)
    hits = sorted_hits(result.hits, sort, read)[:k]
    if lexical is not None:
        query = result.plan.parsed if result.plan is not None else result.query or ""
        hits = with_snippets(hits, query, lexical, store.get_many)
    notes = result.notes
    if result.total > len(result.hits):
        notes = (
            *notes,
            f"sorted by {sort} over the {len(result.hits):,} best matches of"
            f" {result.total:,}; narrow the query to sort the whole set",
        )
    return result.with_hits(hits, notes=notes, sort=sort)
