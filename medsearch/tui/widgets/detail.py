"""The detail pane: the highlighted article in full, scrollable.

Up and down step to the previous or next result, as they do in the list: a reader who
opened an article with Enter and presses up means the article above (and space then
marks that one), not a line of this abstract. Page up/down, home/end and the mouse
scroll the article.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Static

from medsearch.records import Article
from medsearch.tui.render import article_detail
from medsearch.tui.widgets.search_bar import TypesIntoQuery


class DetailPane(TypesIntoQuery, VerticalScroll, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "step(-1)", "Previous article", show=False),
        Binding("down", "step(1)", "Next article", show=False),
    ]

    class Step(Message):
        """Show the result ``delta`` rows away (the screen moves the list's highlight)."""

        def __init__(self, delta: int) -> None:
            super().__init__()
            self.delta = delta

    def action_step(self, delta: int) -> None:
        self.post_message(self.Step(delta))

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
