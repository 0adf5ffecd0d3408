"""The warm searcher behind the service, and how it follows the data home's writes.

One :class:`~medsearch.retrieval.searcher.Searcher` answers every request, one at a
time (its resources are not made for threads: a search keeps per-search state on it).
Between requests the service checks, at most every :data:`CHECK_EVERY` seconds, a cheap
stamp of what the last commit left: the store's file ledger and count, and the commit
points of the lexical index, the vectors and the citation graph. While ``ingest`` or
``update`` holds the writer lock (:mod:`medsearch.lock`) the service keeps answering
from the state it has open, which is what the last commit counted; once the lock is free
and the stamp has changed, it opens the new state and swaps it in. The encoders and the
cross-encoder are kept across the swap (:class:`KeptModels`): a swap costs the time to
open indexes, not to load models.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from medsearch.lock import active_writer
from medsearch.paths import Paths
from medsearch.retrieval.sources import HomeSources

if TYPE_CHECKING:
    from medsearch.index.citations import CitationGraph
    from medsearch.models.cross import CrossEncoder
    from medsearch.models.encoders import Encoder
    from medsearch.retrieval.searcher import Searcher

T = TypeVar("T")

CHECK_EVERY = 1.0
"""Seconds between two looks at the home's commit points (a few stat calls and three
indexed SQL lookups)."""


class KeptModels:
    """The models loaded once for the service's life, whichever searcher asks."""

    def __init__(self) -> None:
        self.encoder: Encoder | None = None
        self.cross: CrossEncoder | None = None
        self.cross_asked = False


class WarmSources(HomeSources):
    """:class:`HomeSources` that loads each model once and hands it to every reopened
    searcher (a subclass without slots, so it can point at the shared :class:`KeptModels`)."""

    kept: KeptModels

    def encoder(self) -> Encoder:
        if self.kept.encoder is None:
            self.kept.encoder = super().encoder()
        return self.kept.encoder

    def cross(self) -> CrossEncoder | None:
        if not self.kept.cross_asked:
            self.kept.cross = super().cross()
            self.kept.cross_asked = True
        return self.kept.cross


def _stat_ns(path: Any) -> int:
    try:
        return int(path.stat().st_mtime_ns)
    except OSError:
        return 0


def home_stamp(paths: Paths, searcher: Searcher | None) -> tuple[object, ...]:
    """What changes when a writer commits: the ledger's last file and the count (read
    through the open connection, which sees the last commit), and the mtime of each
    index's commit point."""
    lexical = paths.lexical_index
    points = [
        lexical / "meta.json",
        lexical / "shards.json",
        *sorted(lexical.glob("shard-*/meta.json")),
        paths.vector_dir("articles") / "manifest.json",
        paths.vector_dir("sentences") / "manifest.json",
        paths.citations / "graph.json",
        paths.store,
    ]
    marks: tuple[object, ...] = ()
    if searcher is not None:
        from medsearch.store.snapshot import corpus_snapshot

        snap = corpus_snapshot(searcher.store)
        marks = (snap.file_mark, snap.articles)
    return (*marks, *(_stat_ns(p) for p in points))


@dataclass(frozen=True, slots=True)
class Opened:
    """One state of the home: its searcher and citation graph."""

    paths: Paths
    searcher: Searcher
    graph: CitationGraph
    stamp: tuple[object, ...]
    opened_at: float


class Warm:
    """The service's one searcher, swapped for a fresh one after a writer commits.

    The searcher lives on one thread of its own (SQLite connections belong to the thread
    that opened them, and a search keeps per-search state on the searcher): every
    request's work is handed to that thread with :meth:`submit` and runs there, one at a
    time, while the event loop goes on accepting connections.
    """

    def __init__(
        self, paths: Paths, *, profile: str | None = None, device: str = "auto", load: bool = True
    ) -> None:
        self.paths = paths
        self.profile = profile
        self.device = device
        self.load = load
        self.kept = KeptModels()
        self.reopened = 0
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="medsearch-serve")
        self._checked = time.monotonic()
        try:
            self._current = self._executor.submit(self._open).result()
        except BaseException:
            self._executor.shutdown(wait=False)
            raise

    def _open(self) -> Opened:
        from medsearch.retrieval.citations import open_graph
        from medsearch.retrieval.searcher import open_searcher

        searcher = open_searcher(self.paths, profile=self.profile, device=self.device)
        if isinstance(searcher.sources, HomeSources):
            sources = WarmSources(
                searcher.sources.paths,
                searcher.sources.profile,
                device=searcher.sources.device,
                sentence_candidates=searcher.sources.sentence_candidates,
                rerank_int8=searcher.sources.rerank_int8,
            )
            # the frozen dataclass's __setattr__ refuses even a subclass's own attribute
            object.__setattr__(sources, "kept", self.kept)
            searcher.sources = sources
        if self.load:
            from medsearch.errors import MedsearchError

            # a search that needs a missing model says so; lexical search still works
            with contextlib.suppress(MedsearchError):
                searcher.load_models()
        graph = open_graph(self.paths.citations, searcher.store)
        return Opened(
            self.paths, searcher, graph, home_stamp(self.paths, searcher), time.monotonic()
        )

    @property
    def models_loaded(self) -> list[str]:
        loaded = []
        if self.kept.encoder is not None:
            loaded.append("encoder")
        if self.kept.cross is not None:
            loaded.append("cross-encoder")
        return loaded

    def submit(self, work: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``work(state, *args)`` on the searcher's thread, on the current state
        (reopened first when a writer has committed since and no writer is at work)."""

        def run() -> T:
            self._refresh()
            return work(self._current, *args)

        return self._executor.submit(run)

    async def run(self, work: Callable[..., T], *args: Any) -> T:
        """:meth:`submit`, awaited from the event loop."""
        return await asyncio.wrap_future(self.submit(work, *args))

    def call(self, work: Callable[..., T], *args: Any) -> T:
        """:meth:`submit`, waited for (tests, the benchmark)."""
        return self.submit(work, *args).result()

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < CHECK_EVERY:
            return
        self._checked = now
        current = self._current
        if home_stamp(self.paths, current.searcher) == current.stamp:
            return
        if active_writer(self.paths) is not None:
            return  # answer from what is open until the writer finishes
        self._current = self._open()
        self.reopened += 1
        current.searcher.close()

    def check_now(self) -> None:
        """Look for a new commit before the next request, whatever the time since the last look."""
        self._checked = -CHECK_EVERY

    def close(self) -> None:
        self._executor.submit(self._current.searcher.close).result()
        self._executor.shutdown()
