"""The state one app run shares between its screens (no textual types in here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from medsearch.history.store import HistoryStore
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.tui.backend import Backend
from medsearch.tui.history import History
from medsearch.tui.keys import Keymap


@dataclass
class CorpusGate:
    """Queries submitted before the corpus is open wait here, so what a researcher types
    while the app starts is searched once it can be; the latest one wins, as its results
    would have replaced the earlier one's."""

    is_open: bool = False
    waiting: Callable[[], None] | None = None

    def admit(self, start: Callable[[], None]) -> bool:
        """True when ``start`` may run now; else it waits for :meth:`opened`."""
        if self.is_open:
            return True
        self.waiting = start
        return False

    def opened(self) -> None:
        self.is_open = True
        start, self.waiting = self.waiting, None
        if start is not None:
            start()

    def unavailable(self) -> bool:
        """There is no corpus after all (none yet, or it failed to open); True when a
        waiting query was dropped (the user is told it did not run)."""
        self.is_open = False
        dropped, self.waiting = self.waiting is not None, None
        return dropped


@dataclass
class Session:
    paths: Paths
    backend: Backend
    history: History
    keymap: Keymap = field(default_factory=lambda: Keymap(keys={}))
    basket: dict[int, Article] = field(default_factory=dict)
    """Marked articles, in the order they were marked (the export order)."""
    show_timings: bool = True
    """Off in snapshot tests, where milliseconds would change every run."""
    basket_queries: dict[int, str] = field(default_factory=dict)
    """The query each basket article was marked from (its export is a signal for it)."""
    corpus: CorpusGate = field(default_factory=CorpusGate)
    recorder: HistoryStore | None = None
    """The search history, open for the app's run (None in a read-only home, or before
    the home exists): a search is then a commit to its log, and the sync waits for the
    app's exit."""

    def history_recorder(self) -> HistoryStore | None:
        """:attr:`recorder`, opened on first need when the app started before its home
        existed (the welcome screen's first ingest creates it)."""
        if self.recorder is None:
            from medsearch.history.store import open_history

            self.recorder = open_history(self.paths)
        return self.recorder

    def record_signal(self, query: str | None, pmids: list[int], signal: str) -> None:
        """Log that ``pmids`` answered ``query`` (opened, marked, exported, cited) for
        ``medsearch rerank train``; a search without a query logs nothing."""
        if not query or not pmids:
            return
        from medsearch.rerank import marks

        marks.record(self.paths.signals_file, query, pmids, signal)

    def toggle(self, article: Article) -> bool:
        """Mark or unmark ``article``; True when it is now in the basket."""
        if self.basket.pop(article.pmid, None) is not None:
            self.basket_queries.pop(article.pmid, None)
            return False
        self.basket[article.pmid] = article
        return True
