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
    """``GET /search``: ``search --json`` (``count=1``: ``search --count --json``), run
    by the command's own :func:`~medsearch.retrieval.run.run_search`. ``record=1`` (the
    CLI asks it) adds ``record``: what the history keeps of the search
    (:class:`~medsearch.history.recording.SearchRecord`), which the CLI records in its
    own history; the service itself writes nothing."""
    from medsearch.retrieval.run import run_search

    query = params.required("q")
    count_only = params.flag("count")
    filters = filters_of(params)
    ran = run_search(
        state.searcher,
        query,
        mode=params.choice("mode", MODES, None),
        k=params.integer("k", 10, 1, 10_000),
        filters=filters,
        rerank=params.choice("rerank", RERANKS, None),
        sort=params.choice("sort", SORTS, "relevance") or "relevance",
        count_only=count_only,
        graph=state.graph,
    )
    result = ran.result
    if count_only:
        out: dict[str, Any] = {"count": result.total}
        if result.notes:  # as `search --count --json`
            out["notes"] = list(result.notes)
    else:
        out = result.to_dict()
        if ran.suggestion is not None:
            out["did_you_mean"] = ran.suggestion.query
    if params.flag("record"):
        from medsearch.history.recording import search_record

        kept = search_record(state.paths, state.searcher, query, result)
        out["record"] = kept.to_dict()
    return out


def similar(state: Opened, pmid_text: str, params: Params) -> dict[str, Any]:
    """``GET /similar/{pmid}``: ``similar PMID --json`` (``by=text|citations``).
    ``record=1`` (by text; the CLI asks it) adds the corpus snapshot the history keeps."""
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
    out = result.to_dict()
    if params.flag("record"):  # what the CLI's history keeps beside the list: the corpus
        from dataclasses import asdict

        from medsearch.store.snapshot import corpus_snapshot

        out["record"] = {"snapshot": asdict(corpus_snapshot(state.searcher.store))}
    return out


def sentences(state: Opened, params: Params) -> dict[str, Any]:
    """``GET /sentences?q=``: ``sentences TEXT --json``."""
    from medsearch.retrieval import neighbours

    k = params.integer("k", 10, 1, 1000)
    return neighbours.sentences(state.searcher, params.required("q"), k=k).to_dict()


def cite(state: Opened, paragraph: str, params: Params) -> dict[str, Any]:
    """``POST /cite`` (the paragraph as the body): ``cite --json`` (``all_sentences``:
    ``--all-sentences``; ``record=1``, the CLI asks it: the corpus snapshot its history
    keeps)."""
    from medsearch.retrieval.cite import suggest

    if not paragraph.strip():
        raise UsageError("the paragraph to cite for is empty (send it as the request body)")
    k = params.integer("k", 5, 1, 100)
    before = params.integer("before", 0, 0, 9999) or None
    rerank = params.choice("rerank", RERANKS, None)
    result = suggest(
        state.searcher,
        paragraph,
        k=k,
        before=before,
        rerank=rerank or True,
        all_sentences=params.flag("all_sentences"),
    )
    out = result.to_dict()
    if params.flag("record"):  # what the CLI's history keeps beside the answer: the corpus
        from dataclasses import asdict

        from medsearch.store.snapshot import corpus_snapshot

        out["record"] = {"snapshot": asdict(corpus_snapshot(state.searcher.store))}
    return out


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
