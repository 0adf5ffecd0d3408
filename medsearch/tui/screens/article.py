"""One article's full view, opened from another screen (the screening screen's ``o``).

It is the main screen itself (:class:`MainScreen`), started on the article's own PMID:
the detail pane with its MeSH, references and citing counts, and every key the main
screen has for an article (similar articles, references, cited by, mark, open). Escape
closes it and returns to the screen below, where it was left.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType

from medsearch.tui import jobs
from medsearch.tui.screens.main import MainScreen
from medsearch.tui.session import Session
from medsearch.tui.widgets.search_bar import SearchBar


class ArticleScreen(MainScreen):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Back", id="article_view.close", priority=True),
    ]

    def __init__(self, session: Session, pmid: int) -> None:
        super().__init__(session)
        self.pmid = pmid

    def on_mount(self) -> None:
        query = f"{self.pmid}[pmid]"
        self.query_one(SearchBar).value = query
        self.run_request(jobs.Request("search", query, self.filters, sort=self.status.sort))

    def action_close(self) -> None:
        self.dismiss(None)
