"""The work behind each screen, as plain functions of a ``Searcher`` (no textual).

Workers call these on the backend's lane and post what they return. Each answer carries
the full records of its hits, fetched in the same call, so the detail pane and the
basket never go back to the store while the user scrolls.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from medsearch.errors import MedsearchError, UsageError
from medsearch.paths import Paths
from medsearch.records import Article, Filters, pmid_from
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.history.store import HistoryStore
    from medsearch.index.citations import CitationGraph
    from medsearch.retrieval.cite import CiteResult
    from medsearch.retrieval.searcher import Searcher

MODES = ("search", "similar", "sentences", "cite", "refs", "citedby")
RESULTS_K = 50
CITE_K = 5


@dataclass(frozen=True, slots=True)
class Request:
    """One query from the search bar: which mode, what text, which restrictions."""

    mode: str
    text: str
    filters: Filters = field(default_factory=Filters)
    k: int = RESULTS_K
    search_mode: str | None = None  # "lexical" forces lexical-only (models failed to load)
    sort: str = "relevance"  # see medsearch.retrieval.sorting.SORTS


@dataclass(frozen=True, slots=True)
class Answer:
    result: SearchResult
    articles: Mapping[int, Article]
    can_rerank: bool
    did_you_mean: str | None = None
    citations: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    """Per hit: (references, cited by) in this corpus's citation graph."""


@dataclass(frozen=True, slots=True)
class CiteAnswer:
    cite: CiteResult
    articles: Mapping[int, Article]


@dataclass(frozen=True, slots=True)
class CorpusInfo:
    """What the status bar says about the corpus before any model is loaded."""

    articles: int
    profile: str | None = None
    index_kind: str | None = None
    vectors: int = 0

    @property
    def lexical_only(self) -> bool:
        return self.profile is None


def corpus_info(paths: Paths) -> CorpusInfo | None:
    """Counts from the store and vector manifests; None when there is nothing to search."""
    if not paths.store.exists() or not paths.lexical_index.exists():
        return None
    from medsearch.status import corpus_status

    status = corpus_status(paths)
    if not status["articles"]:
        return None
    vectors = status.get("articles_vectors") or {}
    return CorpusInfo(
        articles=int(status["articles"]),
        profile=vectors.get("profile"),
        index_kind=vectors.get("kind") or _index_kind(paths),
        vectors=int(vectors.get("count") or 0),
    )


def _index_kind(paths: Paths) -> str | None:
    """The article index's kind as its manifest records it (``flat``, ``ivfpq``...).

    Read with the vector layer's own reader because ``corpus_status`` (and the
    ``Searcher``) look the kind up under a key the manifest does not have.
    """
    from medsearch.index.vectors.layout import read_manifest

    try:
        manifest = read_manifest(paths.vector_dir("articles"))
    except (MedsearchError, OSError, ValueError, TypeError):
        return None
    return manifest.kind if manifest is not None else None


def pmid_of(text: str) -> int:
    """The PMID typed in Similar mode (``PMID 123``, ``123``)."""
    pmid = pmid_from(text.strip().upper().removeprefix("PMID").strip(" :"))
    if pmid is None:
        raise UsageError("Similar mode takes a PMID: type one, or press ctrl+n on a result")
    return pmid


def answer(searcher: Searcher, request: Request, paths: Paths | None = None) -> Answer:
    """First-stage results for ``request`` plus their records and citation counts; a
    search may name earlier ones of ``paths``'s history as ``#N``."""
    from dataclasses import replace

    found = _answer(searcher, request, paths)
    return replace(found, citations=citation_counts(searcher, list(found.articles)))


def _graph(searcher: Searcher) -> CitationGraph:
    from medsearch.retrieval.citations import open_graph

    return open_graph(Paths(searcher.store.path.parent).citations, searcher.store)


def citation_counts(searcher: Searcher, pmids: list[int]) -> dict[int, tuple[int, int]]:
    """(references, cited by) of each of ``pmids``, for the detail pane."""
    if not pmids:
        return {}
    graph = _graph(searcher)
    cited = graph.counts(pmids).tolist()
    return {p: (len(graph.references(p)[0]), int(n)) for p, n in zip(pmids, cited, strict=True)}


def _answer(searcher: Searcher, request: Request, paths: Paths | None) -> Answer:
    if request.mode in ("refs", "citedby"):
        from medsearch.retrieval.citations import cited_by, references

        graph = _graph(searcher)
        pmid = pmid_of(request.text)
        if request.mode == "refs":
            result = references(searcher.store, graph, pmid, request.filters)
        else:
            sort = request.sort if request.sort in ("date", "cited") else "date"
            result = cited_by(searcher.store, graph, pmid, request.filters, sort)
    elif request.mode == "similar":
        from medsearch.retrieval import neighbours
        from medsearch.retrieval.sorting import sort_result

        result = neighbours.similar(
            searcher, pmid_of(request.text), k=request.k, filters=request.filters
        )
        result = sort_result(result, request.sort, request.k, searcher.store)  # its k nearest
    elif request.mode == "sentences":
        from medsearch.retrieval import neighbours

        result = neighbours.sentences(searcher, request.text, k=request.k)
    elif request.mode == "search":
        return _search(searcher, request, paths)
    else:
        raise UsageError(f"unknown mode {request.mode!r}")
    articles = searcher.articles([h.pmid for h in result.hits])
    return Answer(result=result, articles=articles, can_rerank=False)


def _search(searcher: Searcher, request: Request, paths: Paths | None) -> Answer:
    """A search in the request's sort order, with its "did you mean" (as the CLI's).

    A sort other than relevance orders the deeper list :func:`depth_for` asks for, in
    the first stage's order (no reranker: the order shown is the sort's).
    """
    from medsearch.history.recording import resolver
    from medsearch.index.lexical.spelling import did_you_mean
    from medsearch.retrieval.sorting import depth_for, sort_result

    sorted_ = request.sort != "relevance"
    result = searcher.search(
        request.text,
        mode=request.search_mode,
        k=depth_for(request.sort, request.k),
        filters=request.filters,
        rerank="none" if sorted_ else None,
        snippets=not sorted_,
        history=resolver(paths) if paths is not None else None,
        within_count=sorted_,  # another order covers the counted set, as the CLI's
    )
    result = sort_result(result, request.sort, request.k, searcher.store, searcher.lexical)
    suggestion = did_you_mean(searcher.lexical, request.text)
    articles = searcher.articles([h.pmid for h in result.hits])
    return Answer(
        result=result,
        articles=articles,
        can_rerank=not sorted_ and searcher.wants_cross(result),
        did_you_mean=suggestion.query if suggestion is not None else None,
    )


def record(
    searcher: Searcher,
    request: Request,
    result: SearchResult,
    paths: Paths,
    recorder: HistoryStore,
) -> int | None:
    """Record a search (or a similar-articles list) whose results are already on
    screen: a set of thousands is listed for the history after the user sees its first
    page, not before."""
    from medsearch.history.recording import record_search, record_similar

    if request.mode == "similar":
        return record_similar(
            paths,
            searcher,
            pmid_of(request.text),
            result,
            filters=request.filters,
            source="tui",
            history=recorder,
        )
    return record_search(
        paths,
        searcher,
        request.text,
        result,
        source="tui",
        history=recorder,
    )


def record_cite(
    searcher: Searcher,
    paragraph: str,
    answer: CiteAnswer,
    paths: Paths,
    recorder: HistoryStore,
) -> int | None:
    """Record the references suggested for a paragraph, once they are on screen."""
    from medsearch.history.recording import record_cite as record

    return record(paths, searcher, paragraph, answer.cite, k=CITE_K, source="tui", history=recorder)


def cite(
    searcher: Searcher,
    paragraph: str,
    k: int = CITE_K,
    is_cancelled: Callable[[], bool] | None = None,
) -> CiteAnswer:
    from medsearch.retrieval.cite import suggest

    found = suggest(searcher, paragraph, k=k, is_cancelled=is_cancelled)
    pmids = sorted({h.pmid for c in found.citances for h in c.result.hits})
    return CiteAnswer(cite=found, articles=searcher.articles(pmids))


def abstract_sentences(article: Article) -> list[str]:
    """The abstract's sentences, split exactly as the sentence index splits them."""
    from medsearch.sentences import article_sentences

    return [s.text for s in article_sentences(article)]
