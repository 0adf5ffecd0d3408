"""The one ``Searcher`` the CLI and the TUI both call: the search pipeline.

Parse once, search the lexical and dense sides, fuse, join the records, and rerank (the
Delta model in the search, the cross-encoder as the separate :meth:`Searcher.rerank`, so
the UI can show first-stage results at once and reranked ones when they are ready). What
it searches with lives in :mod:`~medsearch.retrieval.resources` (opened on first need);
how the text typed becomes what each side reads lives in
:mod:`~medsearch.retrieval.query_text`. Similar articles, sentences and citation
suggestions are operations over a searcher (:mod:`~medsearch.retrieval.neighbours`,
:mod:`~medsearch.retrieval.cite`), not methods of it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from medsearch.errors import ModelError, StoreError, UsageError
from medsearch.paths import Paths
from medsearch.query.field_notes import field_notes
from medsearch.query.normalize import repair_undecodable
from medsearch.records import Filters
from medsearch.rerank.plan import RerankPlan
from medsearch.retrieval.cross_stage import budgeted_rerank, cross_rerank
from medsearch.retrieval.query_text import (
    LONG_TEXT,
    dropped_note,
    encoder_text,
    make_plan,
    reranker_text,
    truncated_note,
)
from medsearch.retrieval.results import ALL_WORDS, Candidate, SearchResult, make_hits
from medsearch.retrieval.sets import Plan
from medsearch.retrieval.stages import Stages
from medsearch.store import Store

MODES = ("lexical", "dense", "hybrid")
MAX_K = 10_000


class Searcher(Stages):
    """The search pipeline over a home's :class:`~medsearch.retrieval.resources.Resources`."""

    # -- search --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 10,
        filters: Filters | None = None,
        syntax: bool = True,
        rerank: str | None = None,
        snippets: bool = True,
        history: Callable[[int], str] | None = None,
        within_count: bool = False,
        count_only: bool = False,
    ) -> SearchResult:
        """The first stage: lexical and/or dense, fused, joined with their records; then
        the Delta reranker over the top ``delta_depth`` when ``rerank`` (default: the
        ``rerank`` setting) plans it. The cross-encoder is the separate :meth:`rerank`.

        Without an explicit ``mode`` a corpus with vectors searches hybrid; when its
        models cannot be loaded here (e.g. NCBI's embeddings were imported but the MedCPT
        query encoder was never downloaded) it falls back to lexical and says why.
        ``history``: what ``#N`` refers to (:func:`medsearch.history.recording.resolver`).
        ``within_count``: the hits are drawn from the counted set alone (plain words:
        the articles holding every word), as an export and every order other than
        relevance need: they cover exactly what the count says, never ranked hits
        beyond it (a dense-only hit without the word).
        ``count_only``: only ``total`` is wanted (``search --count``): the count is the
        lexical index's in every mode, so no model and no vector is loaded, and the hits
        are the lexical side's first ``k``.
        """
        self._records = {}  # records read for snippets are reused for the hits
        try:
            return self._search(
                repair_undecodable(query),  # bytes that were not UTF-8, from argv
                mode=mode,
                k=k,
                filters=filters,
                syntax=syntax,
                rerank=rerank,
                snippets=snippets,
                history=history,
                within_count=within_count,
                count_only=count_only,
            )
        finally:
            self._records = None

    def _search(
        self,
        query: str,
        *,
        mode: str | None,
        k: int,
        filters: Filters | None,
        syntax: bool,
        rerank: str | None,
        snippets: bool,
        history: Callable[[int], str] | None = None,
        within_count: bool = False,
        count_only: bool = False,
    ) -> SearchResult:
        notes: list[str] = []
        if mode is None and self.default_mode != "lexical" and not count_only:
            try:
                self.encoder("hybrid search")
            except ModelError as exc:
                mode = "lexical"
                notes.append(f"dense side unavailable, lexical results only: {exc}")
        mode = mode or self.default_mode
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if not 1 <= k <= MAX_K:
            raise UsageError(f"-k must be between 1 and {MAX_K}")
        if not query.strip():
            raise UsageError("the query is empty")
        query_plan = self.plan(query, syntax=syntax, history=history, filters=filters)
        syntax = query_plan.syntax
        notes[:0] = query_plan.notes
        counted = "set" if query_plan.is_set else ALL_WORDS
        if within_count and not query_plan.is_set and query_plan.all_words is not None:
            query_plan = query_plan.counted_set()
            notes.append(
                "the hits are the articles counted (every word); articles ranked in"
                " without every word are left out"
            )
        filters = query_plan.filters  # the restrictions are the plan's, for every reader
        if mode != "lexical" and not count_only:
            self.encoder(f"{mode} search")  # the plan depends on its device
        plan = RerankPlan() if count_only else self.rerank_plan(rerank)
        notes.extend(plan.notes)
        if plan.news:
            self.delta_news_told()
        final_k = k
        if plan.delta:
            k = max(k, self.settings.delta_depth)
        timings: list[tuple[str, float]] = []
        t0 = time.perf_counter()
        first_stage_only = mode == "lexical" or count_only  # a count reads no vectors
        depth = k if first_stage_only else max(k, self.settings.lexical_candidates)
        lex = self.lexical.search(
            query_plan.parsed,
            k=1 if mode == "dense" and not query_plan.is_set else depth,
            filters=filters,
            syntax=syntax,
            snippets=final_k if snippets else 0,  # only the head is shown; ~0.3 ms each
        )
        timings.append(("lexical", time.perf_counter() - t0))
        long_query = None
        if lex.dropped and mode != "dense":
            long_query = dropped_note(lex.dropped, dense_reads_all=mode != "lexical")
            notes.append(long_query)
        if lex.truncated:
            notes.append(truncated_note(lex.truncated))
        if syntax and query_plan.translation is None:  # what runs differently without MeSH's data
            notes.extend(field_notes(query_plan.parsed, mesh=False))
        lexical = [
            Candidate(pmid=h.pmid, score=h.score, sources=("lexical",), snippet=h.snippet)
            for h in lex.hits
        ]
        total = self._count(query_plan, lex.total, filters)
        if first_stage_only:
            ranked = lexical[:k]
        elif query_plan.is_set:
            t1 = time.perf_counter()
            ranked = self._order_set(query_plan, mode, lex.total, lexical, filters, k, notes)
            timings.append(("dense", time.perf_counter() - t1))
        else:
            text = encoder_text(query_plan, query, syntax=syntax)
            t1 = time.perf_counter()
            allowed, accept = self.dense_filter(lex.filters)
            dense, as_article = self._dense_candidates(
                text, max(k, self.settings.dense_candidates), allowed, accept
            )
            timings.append(("dense", time.perf_counter() - t1))
            if as_article:
                notes.append(LONG_TEXT)
            if mode == "dense":
                ranked = dense[:k]
            else:
                ranked = self._fuse(lexical if lex.hits and lex.hits[0].score else [], dense, k)
        t2 = time.perf_counter()
        records = self.articles([c.pmid for c in ranked])
        timings.append(("fetch", time.perf_counter() - t2))
        rerankers: tuple[str, ...] = ()
        if plan.delta and ranked:
            t3 = time.perf_counter()
            text = reranker_text(query_plan, query, syntax=syntax)
            terms = lex.terms if snippets else ()
            ranked = self._delta_order(text, ranked, records, final_k, terms)
            rerankers = ("delta",)
            timings.append(("delta", time.perf_counter() - t3))
        if pending := self._pending():
            # hits the index holds and the store does not: out of the count too
            gone, exact = self._gone_among(query_plan, ranked, records, filters)
            total = max(0, total - gone)
            bound = "" if exact else "; the count is an upper bound (too many to check)"
            notes.append(
                f"the lexical index is out of step with the store for {pending:,} PMIDs (an"
                " ingest or update was stopped between its two commits, or is running):"
                f" hits without a stored record are left out{bound}; the next `medsearch"
                " ingest` or `update` mends it"
            )
        hits = self._mark_all_words(query_plan, make_hits(ranked[:final_k], records), filters)
        if self.has_vectors and self.profile_name != "medcpt" and not first_stage_only:
            offline = "offline " if self.profile_name == "minilm" else ""  # the bundled one
            notes.append(f"{offline}model profile {self.profile_name!r} in use (not MedCPT)")
        return SearchResult(
            hits=tuple(hits),
            mode=mode,
            total=total,
            query=query,
            translation=query_plan.translation,
            long_query=long_query,
            filters=lex.filters,
            notes=tuple(notes),
            timings=tuple(timings),
            rerankers=rerankers,
            counted=counted,
            plan=query_plan,
        )

    def plan(
        self,
        query: str,
        *,
        syntax: bool = True,
        history: Callable[[int], str] | None = None,
        filters: Filters | None = None,
    ) -> Plan:
        """The one plan of ``query`` over this home: read once, MeSH applied where it
        is installed, ``filters`` in it (:func:`~medsearch.retrieval.query_text.make_plan`)."""
        mesh = self.mesh() if syntax else None
        return make_plan(
            repair_undecodable(query),
            syntax=syntax,
            history=history,
            mesh=mesh,
            lexical=self.lexical,
            mesh_ranking=self.settings.mesh_ranking,
            filters=filters,
        )

    def search_reranked(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 10,
        filters: Filters | None = None,
        syntax: bool = True,
        rerank: str | None = None,
        cross: bool | None = None,
        is_cancelled: Callable[[], bool] | None = None,
    ) -> SearchResult:
        """:meth:`search`, then the cross-encoder when :meth:`wants_cross` says so (or
        ``cross`` forces it either way): the one call the CLI, ``cite`` and ``eval`` make,
        so the rule of when to rerank is written once. The TUI shows the first stage at
        once and asks :meth:`wants_cross` before reranking in the background."""
        result = self.search(query, mode=mode, k=k, filters=filters, syntax=syntax, rerank=rerank)
        if cross if cross is not None else self.wants_cross(result, rerank):
            result = self.rerank(result, is_cancelled=is_cancelled)
        return result

    def wants_cross(self, result: SearchResult, rerank: str | None = None) -> bool:
        """Whether the cross-encoder should reorder ``result``'s head: the plan for
        ``rerank`` (default: the setting) includes it, there are hits, and the first stage
        was not lexical alone (a lexical search loads no model)."""
        return bool(result.hits) and result.mode != "lexical" and self.rerank_plan(rerank).cross

    # -- rerank --------------------------------------------------------------------------

    def rerank_head(self) -> int:
        device = self.device or "cpu"
        return self.settings.rerank_head_cpu if device == "cpu" else self.settings.rerank_head_gpu

    def rerank(
        self,
        result: SearchResult,
        *,
        head: int | None = None,
        is_cancelled: Callable[[], bool] | None = None,
        budget: float | None = None,
    ) -> SearchResult:
        """Cross-encoder scores for the head; the order follows them, the tail keeps its own.

        Without a cross-encoder (the offline profile) the fused order stands and the
        result says so. A cancelled rerank returns the result unchanged. ``budget``:
        seconds the rerank may take, its model's load included
        (:meth:`~medsearch.retrieval.resources.Resources.rerank_budget`); what did not
        fit is said in a note.
        """
        size = min(len(result.hits), head or self.rerank_head())
        if budget is None:
            cross = self.cross_encoder()
            if cross is None:
                note = "no cross-encoder in this model profile: first-stage order kept"
                return replace(result, notes=(*result.notes, note))
            return cross_rerank(cross, self.store, result, size, is_cancelled=is_cancelled)
        return budgeted_rerank(self, result, size, budget, is_cancelled=is_cancelled)


def open_searcher(
    paths: Paths, *, profile: str | None = None, device: str = "auto", load: bool = False
) -> Searcher:
    """A searcher over one data home; vectors and models open on first need (or now,
    with ``load``)."""
    if not paths.store.exists():
        raise StoreError(
            f"no corpus in {paths.home} yet; run `medsearch ingest PATH` "
            "(or `medsearch ingest --download baseline --limit 1`)"
        )
    from medsearch.config import load_settings
    from medsearch.index.lexical.shards import open_lexical
    from medsearch.retrieval.sources import HomeSources
    from medsearch.status import vector_manifests

    settings = load_settings(paths)
    store = Store(paths.store, readonly=True)
    lexical = open_lexical(paths.lexical_index, create=False)
    manifest = vector_manifests(paths).get("articles")
    recorded = manifest.get("profile") if manifest else None
    if recorded and profile and profile != recorded:
        from medsearch.errors import IndexMismatchError

        store.close()
        lexical.close()
        raise IndexMismatchError(
            f"this corpus's vectors were built with model profile {recorded!r}, not"
            f" {profile!r}; search with --models {recorded} or re-encode"
        )
    searcher = Searcher(
        store=store,
        lexical=lexical,
        settings=settings,
        profile_name=recorded,
        index_kind=manifest.get("kind") if manifest else None,
        sources=HomeSources(
            paths,
            recorded,
            device=device,
            sentence_candidates=settings.sentence_candidates or None,  # 0: the default too
            rerank_int8=settings.rerank_int8,
        )
        if recorded
        else None,
        delta_dir=paths.rerank_dir / "delta",
    )
    if load:
        searcher.load_models()
    return searcher
