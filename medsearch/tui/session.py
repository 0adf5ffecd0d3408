"""The state one app run shares between its screens (no textual types in here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.tui.backend import Backend
from medsearch.tui.history import History
from medsearch.tui.keys import Keymap


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
