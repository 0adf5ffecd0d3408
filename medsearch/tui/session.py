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

    def toggle(self, article: Article) -> bool:
        """Mark or unmark ``article``; True when it is now in the basket."""
        if self.basket.pop(article.pmid, None) is not None:
            return False
        self.basket[article.pmid] = article
        return True
