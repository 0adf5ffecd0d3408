"""The one ``Searcher`` the CLI and the TUI both call.

It is assembled from parts passed in (store, lexical index, and later the dense side and
cross-encoder), never creating them itself: :func:`open_searcher` does the assembly for
a data home, tests assemble their own.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from medsearch.errors import StoreError, UsageError
from medsearch.paths import Paths
from medsearch.records import Filters
from medsearch.retrieval.results import Candidate, SearchResult, make_hits
from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.index.lexical import LexicalIndex

MODES = ("lexical", "dense", "hybrid")
MAX_K = 10_000


@dataclass
class Searcher:
    store: Store
    lexical: LexicalIndex

    def close(self) -> None:
        self.lexical.close()
        self.store.close()

    def __enter__(self) -> Searcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def default_mode(self) -> str:
        return "lexical"

    def search(
        self,
        query: str,
        *,
        mode: str | None = None,
        k: int = 10,
        filters: Filters | None = None,
    ) -> SearchResult:
        """The first stage: ranked hits with their records, ready to show."""
        mode = mode or self.default_mode
        if mode not in MODES:
            raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(MODES)}")
        if not 1 <= k <= MAX_K:
            raise UsageError(f"-k must be between 1 and {MAX_K}")
        if not query.strip():
            raise UsageError("the query is empty")
        filters = filters or Filters()
        t0 = time.perf_counter()
        result = self.lexical.search(query, k=k, filters=filters)
        candidates = [
            Candidate(pmid=h.pmid, score=h.score, sources=("lexical",), snippet=h.snippet)
            for h in result.hits
        ]
        t1 = time.perf_counter()
        hits = make_hits(candidates, self.store.get_many([c.pmid for c in candidates]))
        t2 = time.perf_counter()
        return SearchResult(
            hits=tuple(hits),
            mode=mode,
            total=result.total,
            context=(("query", query),),
            filters=result.filters,
            timings=(("lexical", t1 - t0), ("fetch", t2 - t1)),
        )


def open_searcher(paths: Paths) -> Searcher:
    """A searcher over one data home; a clear error when nothing was ingested yet."""
    if not paths.store.exists():
        raise StoreError(
            f"no corpus in {paths.home} yet; run `medsearch ingest PATH` "
            "(or `medsearch ingest --download baseline --limit 1`)"
        )
    from medsearch.index.lexical import LexicalIndex

    store = Store(paths.store, readonly=True)
    lexical = LexicalIndex.open(paths.lexical_index, create=False)
    return Searcher(store=store, lexical=lexical)


def pmids_of(result: SearchResult) -> Sequence[int]:
    return [h.pmid for h in result.hits]
