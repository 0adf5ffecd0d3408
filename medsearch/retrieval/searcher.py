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

import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from medsearch.errors import ModelError, StoreError, UsageError
from medsearch.paths import Paths
from medsearch.query.normalize import repair_undecodable
from medsearch.query.parser import field_notes
from medsearch.records import Article, Filters, Hit
from medsearch.rerank.plan import RerankPlan
from medsearch.retrieval.cross_stage import budgeted_rerank, cross_rerank
from medsearch.retrieval.query_text import (
    LONG_TEXT,
    dropped_note,
    encoder_text,
    make_plan,
    reads_as_article,
    reranker_text,
    truncated_note,
)
from medsearch.retrieval.resources import Resources
from medsearch.retrieval.results import ALL_WORDS, Candidate, SearchResult, make_hits
from medsearch.retrieval.sets import Plan, dense_method
from medsearch.store import Store

MODES = ("lexical", "dense", "hybrid")
MAX_K = 10_000


RECOUNT_LIMIT = 100_000
"""The most PMIDs a stopped writer left in the index only that a search checks against
its counted query to take them out of its count (:meth:`Searcher._gone_among`); past it
the count is said to be an upper bound."""


class Searcher(Resources):
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
        query_plan = self.plan(query, syntax=syntax, history=history)
        syntax = query_plan.syntax
        notes[:0] = query_plan.notes
        counted = "set" if query_plan.is_set else ALL_WORDS
        if within_count and not query_plan.is_set and query_plan.all_words is not None:
            query_plan = query_plan.counted_set()
            notes.append(
                "the hits are the articles counted (every word); articles ranked in"
                " without every word are left out"
            )
        filters = filters or Filters()
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
        self, query: str, *, syntax: bool = True, history: Callable[[int], str] | None = None
    ) -> Plan:
        """The one plan of ``query`` over this home: read once, MeSH applied where it
        is installed (:func:`~medsearch.retrieval.query_text.make_plan`)."""
        mesh = self.mesh() if syntax else None
        return make_plan(
            repair_undecodable(query),
            syntax=syntax,
            history=history,
            mesh=mesh,
            lexical=self.lexical,
            mesh_ranking=self.settings.mesh_ranking,
        )

    def _gone_among(
        self,
        query_plan: Plan,
        ranked: Sequence[Candidate],
        records: Mapping[int, Article],
        filters: Filters,
    ) -> tuple[int, bool]:
        """How many of the counted matches the index holds and the store does not (a
        unit a stopped writer deleted or replaced), and whether that is exact. The count
        is the set's size, or for plain words the articles holding every word
        (:meth:`_count`): the PMIDs in question, up to :data:`RECOUNT_LIMIT`, are
        checked against that query in the index, one restricted query whatever the
        set's size; past the limit only those among the hits fetched are counted."""
        gone: set[int] = set()
        for batch in self.store.unindexed.batches():
            gone.update(set(batch) - self.store.existing(batch))
        if not gone:
            return 0, True
        if len(gone) <= RECOUNT_LIMIT:
            words = query_plan.all_words
            counted = query_plan.parsed if words is None else words
            return len(self.lexical.members(sorted(gone), counted, filters)), True
        return sum(1 for c in ranked if c.pmid in gone and c.pmid not in records), False

    def _pending(self) -> int:
        """PMIDs a stopped (or running) writer left for the lexical index to catch up on."""
        try:
            return self.store.unindexed.count()
        except sqlite3.OperationalError:  # a store older than the list (read-only)
            return 0

    def _count(self, query_plan: Plan, lexical_total: int, filters: Filters) -> int:
        """``total``: a set query's set size; for plain words, how many articles hold
        every word (PubMed's implicit AND), one count in the lexical index."""
        words = query_plan.all_words
        if words is None or words is query_plan.parsed:
            return lexical_total
        return self.lexical.rank(words, k=1, filters=filters).total

    def _mark_all_words(self, query_plan: Plan, hits: list[Hit], filters: Filters) -> list[Hit]:
        """Plain-words hits, each saying whether it holds every word (in the count) or
        was ranked in from beyond that set; set queries' hits are all in their set."""
        words = query_plan.all_words
        if words is None or not hits:
            return hits
        inside = self.lexical.members([h.pmid for h in hits], words, filters)
        return [replace(h, all_words=h.pmid in inside) for h in hits]

    def _order_set(
        self,
        query_plan: Plan,
        mode: str,
        size: int,
        lexical: list[Candidate],
        filters: Filters,
        k: int,
        notes: list[str],
    ) -> list[Candidate]:
        """A set query's hits in ``mode``'s order, drawn from its set alone.

        The dense side searches inside the set (:func:`~medsearch.retrieval.sets.
        dense_method`): a set already listed by the lexical search, or up to
        ``SET_LIST_MAX``, is handed to the vectors as the allowed ids (scored exactly
        while small, else through the index with the set as its filter); a larger one
        through an oversampled search whose candidates are checked against the set. Hybrid fuses
        that with BM25's order; dense mode takes the dense order, and members the dense
        side did not reach (no vector yet, or past the oversample) follow in BM25 order.
        """
        if size == 0:
            return []
        if not query_plan.text:  # only tags and filters: nothing for an encoder to read
            return lexical[:k]
        allowed: np.ndarray | None = None
        accept: Callable[[Sequence[int]], set[int]] | None = None
        if size <= len(lexical):
            allowed = np.array([c.pmid for c in lexical], dtype=np.int64)
        elif dense_method(size, len(self.dense_side("dense search").articles)) == "listed":
            allowed = self.lexical.set_pmids(query_plan.parsed, size, filters)
        else:

            def accept(pmids: Sequence[int]) -> set[int]:
                return self.lexical.members(pmids, query_plan.parsed, filters)

        depth = max(k, self.settings.dense_candidates)
        dense, as_article = self._dense_candidates(query_plan.text, depth, allowed, accept)
        if as_article:
            notes.append(LONG_TEXT)
        if len(dense) < min(k, size):
            notes.append(
                f"the dense side scored {len(dense)} of the set's {size:,} article(s);"
                " the rest follow in BM25 order"
            )
        if mode == "hybrid":
            scored = lexical if lexical and lexical[0].score else []
            fused = self._fuse(scored, dense, k)
            if scored or len(fused) >= k:
                return fused
            dense = [replace(c, sources=("dense",)) for c in dense]
        seen = {c.pmid for c in dense}
        return (dense + [c for c in lexical if c.pmid not in seen])[:k]

    def _delta_order(
        self,
        query: str,
        ranked: list[Candidate],
        records: dict[int, Article],
        k: int,
        terms: Sequence[str],
    ) -> list[Candidate]:
        """The top ``delta_depth`` candidates in the Delta model's order (blended with the
        first stage's as the model chose on held-out queries); snippets for the new head."""
        from medsearch.index.lexical.snippets import make_snippet

        scorer = self.delta_model().scorer
        assert scorer is not None
        from medsearch.rerank.scorer import blend_order

        head = [c for c in ranked[: self.settings.delta_depth] if c.pmid in records]
        docs = [(records[c.pmid].title, records[c.pmid].abstract_text) for c in head]
        scores = scorer.score(query, docs)
        out: list[Candidate] = []
        for i in blend_order(scores, scorer.blend):
            cand = head[i]
            snippet = cand.snippet
            if not snippet and len(out) < k and terms:
                abstract = docs[i][1]
                snippet = make_snippet(abstract, self.lexical.highlight(abstract, terms))
            out.append(
                replace(cand, score=float(scores[i]), snippet=snippet, first_stage_rank=i + 1)
            )
        return out

    def _dense_candidates(
        self,
        text: str,
        depth: int,
        allowed: np.ndarray | None,
        accept: Callable[[Sequence[int]], set[int]] | None,
    ) -> tuple[list[Candidate], bool]:
        """The dense side's candidates, and whether the text was read as an article
        (:func:`~medsearch.retrieval.query_text.reads_as_article`)."""
        dense = self.dense_side("dense search")
        encoder = dense.encoder
        as_article = reads_as_article(encoder, text)
        vector = encoder.encode_articles([("", text)]) if as_article else dense.encode_query(text)
        pairs = dense.search_vector(vector, depth, allowed=allowed, accept=accept)
        return [Candidate(pmid=p, score=s, sources=("dense",)) for p, s in pairs], as_article

    def _fuse(self, lexical: list[Candidate], dense: list[Candidate], k: int) -> list[Candidate]:
        from medsearch.retrieval.fusion import fuse_candidates

        settings = self.settings
        return fuse_candidates(lexical, dense, k, method=settings.fusion, rrf_k=settings.rrf_k)

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
