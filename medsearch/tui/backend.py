"""One thread for every ``Searcher`` call, so the UI thread never waits on retrieval.

Why one dedicated thread rather than each textual worker calling the searcher from its
own: SQLite connections belong to the thread that opened them, and textual gives every
thread worker a fresh thread. Funnelling calls through a single lane also keeps two
encoder or cross-encoder passes from fighting over the CPU. Workers submit a call and
wait for it; a stale call is cheap to let finish (the UI ignores its answer), and the
long one (reranking) checks a cancellation callback between chunks.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from medsearch.errors import StoreError

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher

T = TypeVar("T")


class Backend:
    def __init__(self) -> None:
        self._lane = ThreadPoolExecutor(max_workers=1, thread_name_prefix="medsearch-searcher")
        self._searcher: Searcher | None = None

    @property
    def ready(self) -> bool:
        return self._searcher is not None

    def open(self, opener: Callable[[], Searcher]) -> Searcher:
        """Open the searcher on the lane thread (where all its later calls run)."""

        def _open() -> Searcher:
            if self._searcher is not None:
                self._searcher.close()
            self._searcher = opener()
            return self._searcher

        return self._lane.submit(_open).result()

    def run(self, call: Callable[[Searcher], T]) -> T:
        """``call(searcher)`` on the lane thread; blocks the calling worker, not the UI."""
        searcher = self._searcher
        if searcher is None:
            raise StoreError("the corpus is not open yet")
        return self._lane.submit(call, searcher).result()

    def submit(self, call: Callable[[Searcher], T]) -> Future[T] | None:
        """``call(searcher)`` queued on the lane thread, for a caller that awaits it
        (``asyncio.wrap_future``) rather than blocking; None before the corpus is open."""
        searcher = self._searcher
        return None if searcher is None else self._lane.submit(call, searcher)

    def close(self) -> None:
        searcher, self._searcher = self._searcher, None
        if searcher is not None:
            self._lane.submit(searcher.close)
        self._lane.shutdown(wait=False, cancel_futures=True)
