"""The stages of a search that the pipeline (:class:`~medsearch.retrieval.searcher.
Searcher`) runs in turn: a set's count and its hits in a mode's order, the dense side's
candidates, fusion, the Delta model's order, and what a stopped writer left out of the
count. Split from ``searcher.py``, which keeps the pipeline that calls them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from medsearch.records import Article, Filters, Hit
from medsearch.retrieval.query_text import LONG_TEXT, reads_as_article
from medsearch.retrieval.resources import Resources
from medsearch.retrieval.results import Candidate
from medsearch.retrieval.sets import Plan, dense_method

RECOUNT_LIMIT = 100_000
"""The most PMIDs a stopped writer left in the index only that a search checks against
its counted query to take them out of its count (:meth:`Stages._gone_among`); past it
the count is said to be an upper bound."""


class Stages(Resources):
    """The pipeline's stages over a home's resources; :class:`~medsearch.retrieval.
    searcher.Searcher` runs them."""

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
