"""The main screen: mode bar, query (search bar or cite editor), results, detail, status.

The query and the workers that answer it are in :mod:`medsearch.tui.screens.querying`
(:class:`QueryScreen`); this module adds what the keys do to the highlighted article
(mark, open, cite, follow its references), the MeSH browser and the basket.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from textual import on, work
from textual.binding import BindingType
from textual.widgets import OptionList

from medsearch.errors import MedsearchError
from medsearch.mesh.browse import HeadingView, open_by_start, typed_heading
from medsearch.mesh.tables import INSTALL_HINT
from medsearch.records import Article
from medsearch.tui import jobs, keys
from medsearch.tui.basket import (
    default_export_path,
    default_watch_name,
    watch_basket,
    write_basket,
)
from medsearch.tui.browser import open_in_browser
from medsearch.tui.messages import Exported
from medsearch.tui.render import DOI_URL, PUBMED_URL, citation
from medsearch.tui.screens.dialogs import (
    ExportRequest,
    ExportScreen,
    SentencePicker,
    WatchNameScreen,
)
from medsearch.tui.screens.mesh import HeadingPicker, MeshChoice, MeshScreen
from medsearch.tui.screens.querying import QueryScreen
from medsearch.tui.widgets.detail import DetailPane
from medsearch.tui.widgets.search_bar import SearchBar


class MainScreen(QueryScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*keys.bindings("main."), *keys.bindings("article.")]

    # -- MeSH ----------------------------------------------------------------

    def action_mesh(self) -> None:
        """The MeSH browser: the heading typed before ``[mh`` (or the whole query) when
        the query has the focus, else one of the highlighted article's headings."""
        bar = self.query_one(SearchBar)
        if (self.focused is bar and bar.value.strip()) or not self.results.hits:
            name = typed_heading(bar.value) or bar.value.strip()
            if not name:
                self.mesh_missing_or("type a heading name, or highlight an article")
                return
            self.open_heading(name, bar.value)
            return
        article = self.current_article()
        if article is None:
            return
        headings = list(dict.fromkeys(m.descriptor for m in article.mesh))
        if not headings:
            self.mesh_missing_or(f"PMID {article.pmid} has no MeSH headings")
            return

        def picked(name: str | None) -> None:
            if name:
                self.open_heading(name, bar.value)

        self.app.push_screen(HeadingPicker(headings), picked)

    @work(thread=True, exclusive=True, exit_on_error=False, group="mesh", description="MeSH")
    def mesh_missing_or(self, message: str) -> None:
        """Why F7 opened nothing: MeSH not installed, when it is not (nothing could be
        opened then, whatever was typed), else ``message``."""
        try:
            installed = self.session.backend.run(lambda s: s.mesh() is not None)
        except MedsearchError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        hint, timeout = (message, None) if installed else (INSTALL_HINT, 10)
        self.app.call_from_thread(self.notify, hint, severity="warning", timeout=timeout)

    @work(thread=True, exclusive=True, exit_on_error=False, group="mesh", description="MeSH")
    def open_heading(self, name: str, query: str) -> None:
        def load(key: str) -> HeadingView | None:
            return self.session.backend.run(lambda s: open_by_start(s.store.conn, key))

        try:
            installed = self.session.backend.run(lambda s: s.mesh() is not None)
            view = load(name) if installed else None
        except MedsearchError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        if not installed:
            self.app.call_from_thread(self.notify, INSTALL_HINT, severity="warning", timeout=10)
        elif view is None:
            self.app.call_from_thread(
                self.notify, f"no MeSH heading named {name!r}", severity="warning"
            )
        else:
            self.app.call_from_thread(
                self.app.push_screen, MeshScreen(view, load, query), self.mesh_chosen
            )

    def mesh_chosen(self, choice: MeshChoice | None) -> None:
        if choice is None:
            return
        self.action_mode("search")
        bar = self.query_one(SearchBar)
        bar.value = choice.query
        bar.cursor_position = len(choice.query)
        if choice.run:
            self.run_request(
                jobs.Request("search", choice.query, self.filters, sort=self.status.sort)
            )

    # -- the highlighted article ---------------------------------------------

    @on(DetailPane.Step)
    def step(self, message: DetailPane.Step) -> None:
        """Up or down while reading: the next article above or below, shown here (the
        list skips its headings), so what space marks is what the reader sees."""
        results = self.results
        if message.delta < 0:
            results.action_cursor_up()
        else:
            results.action_cursor_down()

    @on(OptionList.OptionSelected, "#results")
    def read(self) -> None:
        self.query_one(DetailPane).focus()
        hit = self.results.current
        if hit is not None:
            self.signal([hit.pmid], "opened")

    def search_query(self) -> str | None:
        """The query behind the list on screen, when it came from a search."""
        last = self.last
        return last.text if last is not None and last.mode == "search" else None

    def signal(self, pmids: list[int], signal: str, query: str | None = None) -> None:
        """Record a relevance signal for the Delta reranker's training (see `mark`)."""
        try:
            self.session.record_signal(query or self.search_query(), pmids, signal)
        except (OSError, MedsearchError) as exc:
            self.notify(f"could not record the {signal} signal: {exc}", severity="warning")

    def current_article(self) -> Article | None:
        hit = self.results.current
        article = self.articles.get(hit.pmid) if hit else None
        if article is None:
            self.notify("no article highlighted", severity="warning")
        return article

    def action_mark(self) -> None:
        article = self.current_article()
        if article is None:
            return
        if self.session.toggle(article):
            query = self.search_query()
            if query:
                self.session.basket_queries[article.pmid] = query
            self.signal([article.pmid], "marked")
        self.refresh_basket()

    def action_open(self, kind: str) -> None:
        article = self.current_article()
        if article is None:
            return
        if kind == "doi" and not article.doi:
            self.notify(f"PMID {article.pmid} has no DOI", severity="warning")
            return
        url = (
            DOI_URL.format(doi=article.doi)
            if kind == "doi"
            else PUBMED_URL.format(pmid=article.pmid)
        )
        if open_in_browser(self.app, url):
            self.notify(f"opened {url}")
        else:
            self.app.copy_to_clipboard(url)
            self.notify(
                f"no browser could be opened; the link is copied to the clipboard: {url}",
                severity="warning",
                timeout=15,
            )
        self.signal([article.pmid], "opened")

    def action_copy_citation(self) -> None:
        article = self.current_article()
        if article is not None:
            self.app.copy_to_clipboard(citation(article))
            self.notify(f"citation of PMID {article.pmid} copied")
            self.signal([article.pmid], "cited")

    def action_similar(self) -> None:
        article = self.current_article()
        if article is not None:
            self.action_mode("similar")
            self.query_one(SearchBar).value = str(article.pmid)
            request = jobs.Request("similar", str(article.pmid), self.filters)
            self.run_request(replace(request, sort=self.status.sort))

    def action_references(self) -> None:
        self.follow("refs")

    def action_cited_by(self) -> None:
        self.follow("citedby")

    def follow(self, mode: str) -> None:
        """Open the highlighted article's references or citing articles as the list,
        remembering the list left (``back`` returns to it)."""
        hit = self.results.current
        if hit is None or not hit.pmid:
            self.notify("no article highlighted", severity="warning")
            return
        if self.last is not None:
            self.trail.append(self.last)
        self.run_request(jobs.Request(mode, str(hit.pmid), self.filters))

    def action_back(self) -> None:
        if not self.trail:
            self.notify("nothing to go back to", severity="information")
            return
        self.run_request(self.trail.pop())

    def action_pick_sentence(self) -> None:
        article = self.current_article()
        if article is None:
            return
        sentences = jobs.abstract_sentences(article)
        if not sentences:
            self.notify(f"PMID {article.pmid} has no abstract", severity="warning")
            return

        def chosen(sentence: str | None) -> None:
            if sentence:
                self.action_mode("sentences")
                self.query_one(SearchBar).value = sentence
                self.run_request(jobs.Request("sentences", sentence))

        self.app.push_screen(SentencePicker(sentences), chosen)

    # -- basket --------------------------------------------------------------

    def refresh_basket(self) -> None:
        """Redraw the mark column and the count after the basket changed."""
        self.results.refresh_marks(self.session.basket)
        self.status.basket = len(self.session.basket)

    def action_watch_basket(self) -> None:
        if not self.session.basket:
            self.notify("the basket is empty: mark articles with space first", severity="warning")
            return

        def chosen(name: str | None) -> None:
            if name is not None and self.session.basket:
                self.watch_basket(name, list(self.session.basket))

        default = default_watch_name()
        self.app.push_screen(WatchNameScreen(len(self.session.basket), default), chosen)

    @work(thread=True, exit_on_error=False, group="watch-basket", description="watch basket")
    def watch_basket(self, name: str, pmids: list[int]) -> None:
        try:
            saved = watch_basket(self.session.paths, name, pmids)
        except MedsearchError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        self.app.call_from_thread(
            self.notify,
            f"watching {saved.query} as {saved.name}: updates report retractions (F6)",
            timeout=10,
        )

    def action_export(self) -> None:
        if not self.session.basket:
            self.notify("the basket is empty: mark articles with space first", severity="warning")
            return

        def chosen(request: ExportRequest | None) -> None:
            self.refresh_basket()  # articles may have been unmarked in the dialog
            basket = list(self.session.basket.values())
            if request is None or not basket:
                return
            try:
                target = write_basket(basket, request.fmt, request.path, self.session.paths)
            except MedsearchError as exc:
                self.notify(str(exc), severity="error")
                return
            self.notify(f"exported {len(basket)} article(s) to {target}", timeout=10)
            for article in basket:
                query = self.session.basket_queries.get(article.pmid)
                if query:
                    self.signal([article.pmid], "exported", query)
            self.post_message(Exported(str(target), len(basket)))

        default = default_export_path(self.session.paths)
        self.app.push_screen(ExportScreen(self.session.basket, default), chosen)
