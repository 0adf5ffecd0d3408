"""The service's own JSON API: each answer is what the CLI's ``--json`` prints.

Every function takes the warm state and the request's parameters and returns the
command's JSON object, built by the same library calls the command makes (the searcher,
:mod:`~medsearch.retrieval.neighbours`, :mod:`~medsearch.retrieval.cite`, the citation
graph, ``to_dict``). What the service leaves out, on purpose: the search history (the
service writes nothing in the home) and ``#N`` history references.
"""

from __future__ import annotations

from typing import Any

from medsearch.errors import NotFoundError, UsageError
from medsearch.serve.params import Params, filters_of, pmid_of, pmids_of
from medsearch.serve.state import Opened, Warm

SORTS = ("relevance", "date", "pubdate", "author", "journal", "cited")
MODES = ("lexical", "dense", "hybrid")
RERANKS = ("auto", "delta", "cross", "none")
EXPORT_FORMATS = ("bibtex", "ris", "nbib", "csv")
EXPORT_LIMIT = 10_000


def health(state: Opened, warm: Warm) -> dict[str, Any]:
    """Home, article count, snapshot and models: enough to tell which state answers."""
    from medsearch.store.snapshot import corpus_snapshot

    snap = corpus_snapshot(state.searcher.store)
    return {
        "status": "ok",
        "home": str(warm.paths.home),
        "articles": snap.articles,
        "snapshot": {
            "baseline_year": snap.baseline_year,
            "last_file": snap.last_file,
            "file_mark": snap.file_mark,
        },
        "profile": state.searcher.profile_name,
        "default_mode": state.searcher.default_mode,
        "models_loaded": warm.models_loaded,
        "reopened": warm.reopened,
    }


def search(state: Opened, params: Params) -> dict[str, Any]:
    """``GET /search``: ``search --json`` (``count=1``: ``search --count --json``)."""
    from medsearch.index.lexical.spelling import did_you_mean
    from medsearch.retrieval.citations import with_counts
    from medsearch.retrieval.sorting import depth_for, sort_result

    query = params.required("q")
    mode = params.choice("mode", MODES, None)
    k = params.integer("k", 10, 1, 10_000)
    sort = params.choice("sort", SORTS, "relevance") or "relevance"
    rerank = params.choice("rerank", RERANKS, None)
    count_only = params.flag("count")
    filters = filters_of(params)
    searcher, graph = state.searcher, state.graph
    first_stage_only = count_only or sort != "relevance"
    depth = 1 if count_only else depth_for(sort, k)
    result = searcher.search(
        query,
        mode=mode,
        k=depth,
        filters=filters,
        rerank="none" if first_stage_only else rerank,
        snippets=not first_stage_only,
        within_count=sort != "relevance",  # as the command: a sort covers the counted set
        count_only=count_only,
    )
    if count_only:
        counted: dict[str, Any] = {"count": result.total}
        if result.notes:  # as `search --count --json`
            counted["notes"] = list(result.notes)
        return counted
    if not first_stage_only and searcher.wants_cross(result, rerank):
        result = searcher.rerank(result)
    result = sort_result(result, sort, k, searcher.store, searcher.lexical, graph)
    result = with_counts(result.with_hits(result.hits[:k]), graph)
    out = result.to_dict()
    suggestion = did_you_mean(searcher.lexical, query)
    if suggestion is not None:
        out["did_you_mean"] = suggestion.query
    return out


def similar(state: Opened, pmid_text: str, params: Params) -> dict[str, Any]:
    """``GET /similar/{pmid}``: ``similar PMID --json`` (``by=text|citations``)."""
    from medsearch.retrieval import neighbours
    from medsearch.retrieval.citations import related

    pmid = pmid_of(pmid_text)
    k = params.integer("k", 10, 1, 1000)
    by = params.choice("by", ("text", "citations"), "text")
    filters = filters_of(params)
    if by == "citations":
        return related(state.searcher.store, state.graph, pmid, k, filters).to_dict()
    result = neighbours.similar(
        state.searcher,
        pmid,
        k=k,
        filters=filters,
        skip_duplicates=not params.flag("keep_duplicates"),
    )
    return result.to_dict()


def sentences(state: Opened, params: Params) -> dict[str, Any]:
    """``GET /sentences?q=``: ``sentences TEXT --json``."""
    from medsearch.retrieval import neighbours

    k = params.integer("k", 10, 1, 1000)
    return neighbours.sentences(state.searcher, params.required("q"), k=k).to_dict()


def cite(state: Opened, paragraph: str, params: Params) -> dict[str, Any]:
    """``POST /cite`` (the paragraph as the body): ``cite --json``."""
    from medsearch.retrieval.cite import suggest

    if not paragraph.strip():
        raise UsageError("the paragraph to cite for is empty (send it as the request body)")
    k = params.integer("k", 5, 1, 100)
    before = params.integer("before", 0, 0, 9999) or None
    rerank = params.choice("rerank", RERANKS, None)
    result = suggest(state.searcher, paragraph, k=k, before=before, rerank=rerank or True)
    return result.to_dict()


def article(state: Opened, pmid_text: str) -> dict[str, Any]:
    """``GET /articles/{pmid}``: ``show PMID --json``."""
    return state.searcher.store.get(pmid_of(pmid_text)).to_dict()


def export(state: Opened, params: Params) -> tuple[str, str]:
    """``GET /export?ids=&format=``: ``export`` output and its media type. PMIDs not in
    the store are a 404 naming them, as ``export`` exits 1 naming them."""
    from medsearch.export import export as render

    fmt = params.choice("format", EXPORT_FORMATS, "bibtex") or "bibtex"
    pmids = pmids_of(params.required("ids"))
    if len(pmids) > EXPORT_LIMIT:
        raise UsageError(f"at most {EXPORT_LIMIT:,} ids per export, not {len(pmids):,}")
    found = state.searcher.store.get_many(pmids)
    missing = [p for p in dict.fromkeys(pmids) if p not in found]
    if missing:
        names = ", ".join(map(str, missing))
        raise NotFoundError(f"not in the store: PMID {names}")
    text = render([found[p] for p in pmids], fmt)  # type: ignore[arg-type]
    media = {"csv": "text/csv", "bibtex": "application/x-bibtex"}.get(fmt, "text/plain")
    return text, f"{media}; charset=utf-8"
