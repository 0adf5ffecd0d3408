"""The Watches screen: saved searches with their unread counts; a watch's new hits.

The screen reads ``watches.sqlite`` and the store (read-only) in a thread worker, so a
large store on a slow disk never holds the UI; reading a hit (enter) shows its abstract
and marks it read, and the counts are current when the list is shown again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from medsearch.errors import MedsearchError
from medsearch.paths import Paths
from medsearch.watches.model import Watch


@dataclass(frozen=True, slots=True)
class HitRow:
    pmid: int
    title: str
    where: str
    abstract: str
    revised: bool
    read: bool
    flag: str = ""
    """A reference list's hit: ``RETRACTED (notice PMID 123)``."""


class WatchesLoaded(Message):
    def __init__(self, watches: list[Watch]) -> None:
        self.watches = watches
        super().__init__()


class HitsLoaded(Message):
    def __init__(self, rows: list[HitRow]) -> None:
        self.rows = rows
        super().__init__()


class WatchesScreen(Screen[None]):
    """Every watch: name, unread, total, kind, query. Enter opens one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="watches.back"),
    ]

    def __init__(self, paths: Paths) -> None:
        super().__init__()
        self.paths = paths
        self.watches: list[Watch] = []

    def compose(self) -> ComposeResult:
        yield Static("Watches: saved searches and what updates brought them", id="watches-title")
        yield DataTable(id="watches-table", cursor_type="row")
        yield Static("", id="watches-note")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("watch", "unread", "hits", "kind", "query")
        table.focus()
        self.load()

    def on_screen_resume(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="watches", description="watches")
    def load(self) -> None:
        from medsearch.watches.book import WatchBook

        with WatchBook(self.paths.watches_file) as book:
            self.post_message(WatchesLoaded(book.all()))

    def on_watches_loaded(self, message: WatchesLoaded) -> None:
        self.watches = message.watches
        table = self.query_one(DataTable)
        table.clear()
        for w in self.watches:
            cells = (w.name, str(w.unread), str(w.total), w.kind, w.query)
            table.add_row(*(Text(c) for c in cells), key=w.name)  # "cataract[ti]" as typed
        note = self.query_one("#watches-note", Static)
        note.update(
            "" if self.watches else "No watches yet: `medsearch watch add NAME 'query'` adds one."
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        name = event.row_key.value
        if name is not None:
            self.app.push_screen(WatchHitsScreen(self.paths, name))


class WatchHitsScreen(Screen[None]):
    """One watch's unread hits (all its hits when none is unread); enter reads one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="watch.back"),
        Binding("ctrl+a", "read_all", "Mark all read", id="watch.read_all"),
    ]

    def __init__(self, paths: Paths, name: str) -> None:
        super().__init__()
        self.paths = paths
        self.watch_name = name
        self.rows: list[HitRow] = []

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Watch {self.watch_name}"), id="watch-title")
        yield DataTable(id="watch-hits", cursor_type="row")
        yield Static("", id="watch-abstract")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "PMID", "title", "journal, year")
        table.focus()
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="watch", description="hits")
    def load(self) -> None:
        from medsearch.store import Store
        from medsearch.watches.book import WatchBook
        from medsearch.watches.model import REFERENCES
        from medsearch.watches.runner import flag

        with WatchBook(self.paths.watches_file) as book:
            references = book.get(self.watch_name).kind == REFERENCES
            hits = book.hits(self.watch_name, unread=True) or book.hits(self.watch_name)
        articles = {}
        if hits and self.paths.store.exists():
            with Store(self.paths.store, readonly=True) as store:
                articles = store.get_many([h.pmid for h in hits])
        rows = []
        for hit in hits:
            article = articles.get(hit.pmid)
            where = (
                ", ".join(str(x) for x in (article.journal, article.year) if x) if article else ""
            )
            rows.append(
                HitRow(
                    pmid=hit.pmid,
                    title=article.title if article else "(deleted since)",
                    where=where,
                    abstract=article.abstract_text if article else "",
                    revised=hit.change == "replaced",
                    read=hit.read,
                    flag=flag(hit.change, hit.notice) if references else "",
                )
            )
        self.post_message(HitsLoaded(rows))

    def on_hits_loaded(self, message: HitsLoaded) -> None:
        self.rows = message.rows
        table = self.query_one(DataTable)
        table.clear()
        for row in self.rows:
            mark = "" if row.read else "new"
            title = row.title + (" [revised]" if row.revised else "")
            if row.flag:
                title = f"{row.flag}  {row.title}"
            cells = (mark, str(row.pmid), title, row.where)
            table.add_row(*(Text(c) for c in cells), key=str(row.pmid))
        if not self.rows:
            self.query_one("#watch-abstract", Static).update("No hits yet.")

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        key = event.row_key.value
        if key is None:
            return
        row = next(r for r in self.rows if str(r.pmid) == key)
        self.query_one("#watch-abstract", Static).update(Text(f"{row.title}\n\n{row.abstract}"))
        self._mark([row.pmid])
        self.query_one(DataTable).update_cell(
            key, self.query_one(DataTable).ordered_columns[0].key, ""
        )

    def action_read_all(self) -> None:
        self._mark(None)
        table = self.query_one(DataTable)
        first = table.ordered_columns[0].key
        for row in self.rows:
            table.update_cell(str(row.pmid), first, "")

    def _mark(self, pmids: list[int] | None) -> None:
        from medsearch.watches.book import WatchBook

        try:
            with WatchBook(self.paths.watches_file) as book:
                book.mark_read(self.watch_name, pmids)
        except MedsearchError as exc:
            self.notify(str(exc), severity="error")
