"""What a searcher searches with: the store, the indexes and the models, each opened or
loaded on first need.

A :class:`Resources` is assembled from parts passed in (store, lexical index, dense side,
cross-encoder), never creating them itself; :func:`medsearch.retrieval.searcher.
open_searcher` does the assembly for a data home and tests assemble their own. The
vectors and each model are opened on first need from the home's
:class:`~medsearch.retrieval.sources.HomeSources`, so a question loads only what it
uses: similar articles by PMID read stored vectors and load no model. The operations
that need no search pipeline (:mod:`~medsearch.retrieval.neighbours`) take these
resources alone; :class:`~medsearch.retrieval.searcher.Searcher` runs its pipeline over them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Self

import numpy as np

from medsearch import heap
from medsearch.config import Settings
from medsearch.errors import VectorsMissingError
from medsearch.records import Article, Filters
from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex
    from medsearch.mesh.expand import MeshLookup
    from medsearch.models.cross import CrossEncoder
    from medsearch.models.encoders import Encoder
    from medsearch.rerank.loading import DeltaStatus
    from medsearch.rerank.plan import RerankPlan
    from medsearch.retrieval.dense import DenseSide
    from medsearch.retrieval.sources import HomeSources


TORCH_IMPORT_SECONDS = 2.0
"""What importing torch costs a command, at least: 2.3 s on the GPU workstation of issue
42, more on a shared 2-core CPU. A CPU search that encoded its query without torch
leaves a cross-encoder whose load would take this alone to ``--rerank cross``."""


@dataclass
class Resources:
    store: Store
    lexical: LexicalIndex
    dense: DenseSide | None = None
    cross: CrossEncoder | None = None
    settings: Settings = field(default_factory=Settings)
    profile_name: str | None = None
    index_kind: str | None = None
    sources: HomeSources | None = None
    """Where the vectors and models not passed in come from, each on first need."""
    delta_dir: Path | None = None
    """Where this corpus's trained Delta reranker lives (None: no Delta reranking)."""
    _records: dict[int, Article] | None = field(default=None, init=False, repr=False)
    _delta: DeltaStatus | None = field(default=None, init=False, repr=False)
    _cross_asked: bool = field(default=False, init=False, repr=False)
    _cross_ready: bool | None = field(default=None, init=False, repr=False)
    _mesh: MeshLookup | None = field(default=None, init=False, repr=False)
    _mesh_read: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.lexical.texts is None:  # snippets come from the store this searcher reads
            self.lexical.texts = self.texts

    # -- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        self.lexical.close()
        if self.dense is not None:
            self.dense.close()
        self.store.close()
        heap.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def load_models(self) -> None:
        """Open the vectors and load the encoders and the cross-encoder (if it is on this
        machine) now, rather than on first need: seconds the TUI spends in a worker so
        that the first query does not wait. A missing encoder raises its ModelError,
        with the vectors left open for what needs no model (similar articles).
        """
        if self.sources is None and self.dense is None:
            return  # no vectors: nothing to load
        self.encoder("dense search")
        if self.has_cross:
            self.cross_encoder()
            heap.settle()

    @property
    def has_vectors(self) -> bool:
        return self.profile_name is not None

    @property
    def device(self) -> str | None:
        """Where the encoders run; None until they are loaded."""
        return self.dense.device if self.dense is not None else None

    @property
    def has_cross(self) -> bool:
        """Whether a cross-encoder can rerank: loaded, or on this machine once the encoders
        are. A lexical first stage (no encoder loaded, e.g. its models are missing) is
        not offered it, as before models loaded lazily, and never looks for it on disk.
        """
        if self.cross is not None:
            return True
        if self.sources is None or self._cross_asked or self.device is None:
            return False
        if self._cross_ready is None:
            self._cross_ready = self.sources.cross_available()
        return self._cross_ready

    def cross_encoder(self) -> CrossEncoder | None:
        """The cross-encoder, loaded on first need; None when the profile has none."""
        if self.cross is None and self.sources is not None and not self._cross_asked:
            self.cross = self.sources.cross()
            self._cross_asked = True
        return self.cross

    def rerank_budget(self, choice: str | None = None) -> float | None:
        """Seconds a command's cross-encoder may take in the foreground: on a CPU, the
        ``rerank_budget_cpu`` setting, unless the cross-encoder was asked for by name
        (``--rerank cross``, or ``rerank = "cross"``); None (no limit) on a GPU."""
        if (choice or self.settings.rerank) == "cross" or self.device != "cpu":
            return None
        return self.settings.rerank_budget_cpu

    def cross_load_estimate(self) -> float:
        """Seconds loading the cross-encoder is expected to take: what loading the query
        encoder took in this process (0 when none was loaded here), and importing torch
        if the query encoder did without it (:mod:`medsearch.models.numpy_bert`)."""
        import sys

        torch = 0.0 if "torch" in sys.modules else TORCH_IMPORT_SECONDS
        if self.dense is None or self.device is None:  # no encoder loaded yet
            return torch
        return self.dense.encoder.load_seconds + torch

    @property
    def can_rerank(self) -> bool:
        """Whether the cross-encoder will refine the head (the TUI does it in the background)."""
        return self.rerank_plan().cross

    def delta_model(self) -> DeltaStatus:
        """The corpus's Delta reranker, or why there is none (loaded once, on first need)."""
        if self._delta is None:
            from medsearch.rerank.loading import load_delta

            self._delta = load_delta(self.delta_dir, self.store, self.profile_name)
        return self._delta

    def delta_news_told(self) -> None:
        """What the last training concluded has been said: not again by this searcher,
        nor by later processes (:func:`medsearch.rerank.loading.told`)."""
        from medsearch.rerank.loading import told

        self._delta = told(self.delta_dir, self.delta_model())

    def rerank_plan(self, choice: str | None = None) -> RerankPlan:
        """Which rerankers ``choice`` (default: the ``rerank`` setting) means here."""
        from medsearch.rerank.plan import plan_rerank

        return plan_rerank(
            choice or self.settings.rerank,
            device=self.device,
            delta=self.delta_model(),
            has_cross=self.has_cross,
        )

    @property
    def default_mode(self) -> str:
        return "hybrid" if self.has_vectors else "lexical"

    def article(self, pmid: int) -> Article:
        return self.store.get(pmid)

    def articles(self, pmids: Sequence[int]) -> dict[int, Article]:
        """Stored records; within one search, each record is read and decoded once."""
        if self._records is None:
            return self.store.get_many(pmids)
        missing = [p for p in pmids if p not in self._records]
        if missing:
            self._records.update(self.store.get_many(missing))
        return {p: self._records[p] for p in pmids if p in self._records}

    def texts(self, pmids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """(title, abstract) for the lexical index's snippets: it keeps no copy itself."""
        return {p: (a.title, a.abstract_text) for p, a in self.articles(pmids).items()}

    def dense_side(self, what: str) -> DenseSide:
        """The vectors, opened on first need; their encoder loads only when text is encoded."""
        if self.dense is None and self.sources is not None:
            self.dense = self.sources.open_dense()
        if self.dense is None:
            raise VectorsMissingError(
                f"{what} needs article vectors and this corpus has none yet; run"
                " `medsearch ingest` without --no-encode (or import NCBI's embeddings)"
            )
        return self.dense

    def encoder(self, what: str) -> Encoder:
        """The encoders ``what`` needs to turn text into vectors, loaded on first need."""
        return self.dense_side(what).encoder

    # -- MeSH and filters ----------------------------------------------------------------

    def mesh(self) -> MeshLookup | None:
        """The installed MeSH (None: not installed), looked up once per searcher."""
        if not self._mesh_read:
            from medsearch.mesh.expand import MeshLookup

            self._mesh = MeshLookup.open(self.store.conn)
            self._mesh_read = True
        return self._mesh

    def dense_filter(
        self, filters: Filters
    ) -> tuple[np.ndarray | None, Callable[[Sequence[int]], set[int]] | None]:
        """A filter for the dense side: the allowed PMID set when small, else a predicate."""
        if filters.empty:
            return None, None
        from medsearch.retrieval.dense import ALLOWED_MAX

        allowed, _ = self.lexical.matching_pmids(filters, ALLOWED_MAX)
        if allowed is not None:
            return allowed, None

        def accept(pmids: Sequence[int]) -> set[int]:
            return self.lexical.accepted(pmids, filters)

        return None, accept
