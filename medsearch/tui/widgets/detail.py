"""The detail pane: the highlighted article in full, scrollable."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from medsearch.records import Article
from medsearch.tui.render import article_detail
from medsearch.tui.widgets.search_bar import TypesIntoQuery


class DetailPane(TypesIntoQuery, VerticalScroll, can_focus=True):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(Static(id="detail-body"), **kwargs)  # type: ignore[arg-type]
        self.article: Article | None = None

    def show(
        self, article: Article, terms: frozenset[str], citations: tuple[int, int] | None = None
    ) -> None:
        """``citations``: (references, cited by) in this corpus, shown when either is."""
        self.article = article
        self.query_one("#detail-body", Static).update(article_detail(article, terms, citations))
        self.scroll_home(animate=False)

    def clear(self, message: str = "") -> None:
        self.article = None
        self.query_one("#detail-body", Static).update(message)
