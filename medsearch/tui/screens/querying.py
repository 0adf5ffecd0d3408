"""The query side of the main screen: the query (search bar or cite editor), the workers
that answer it, and the results list and status they fill.

Every query gets a ticket; the search worker posts its first-stage answer, then (search
mode, when a cross-encoder is loaded) a rerank worker reorders the list in place. A new
query takes a new ticket, cancels the old rerank and makes any late answer stale. A query
submitted before the corpus is open waits for it (``Session.corpus``).

The results list takes the focus when results arrive, so arrows, space and Enter act on
them at once; a character typed there (or in the article) is the start of a new query
and goes to the query (``TypedAhead``), which is why no default action is a printable key.
What the keys do to the highlighted article is in :mod:`medsearch.tui.screens.main`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, OptionList, Static, TextArea
from textual.worker import get_current_worker

from medsearch.errors import MedsearchError, QuerySyntaxError
from medsearch.records import Article, Filters
from medsearch.tui import jobs
from medsearch.tui.highlight import snippet_terms
from medsearch.tui.messages import (
    CiteReady,
    RerankDone,
    ResultsReady,
    ResultsRendered,
    WorkFailed,
)
from medsearch.tui.screens.dialogs import FiltersScreen
from medsearch.tui.session import Session
from medsearch.tui.widgets.bars import ModeBar, StatusBar
from medsearch.tui.widgets.detail import DetailPane
from medsearch.tui.widgets.results import Heading, ResultsList, Row
from medsearch.tui.widgets.search_bar import MeshSuggester, SearchBar, TypedAhead

SORT_CYCLE = ("relevance", "date", "author", "journal")
"""The orders ctrl+b steps through (PubMed's; its "publication date" is "date" here)."""

PLACEHOLDERS = {
    "search": 'Search PubMed: words, "phrases", AND/OR/NOT, field tags like brca1[ti]',
    "similar": "Similar articles: type a PMID (or press ctrl+n on a result)",
    "sentences": "Similar sentences: type a sentence (or press ctrl+t on a result)",
}


class QueryScreen(Screen[None]):
    """The screen's state and its query-to-results loop; :class:`MainScreen` adds the
    actions on the highlighted article, MeSH and the basket."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.mode = "search"
        self.filters = Filters()
        self.search_mode: str | None = None
        self.ticket = 0
        self.articles: dict[int, Article] = {}
        self.last: jobs.Request | None = None
        self.shown_notes: set[str] = set()
        self.citations: dict[int, tuple[int, int]] = {}
        self.trail: list[jobs.Request] = []
        """The lists walked away from by references / cited by, newest last."""

    def compose(self) -> ComposeResult:
        yield ModeBar(id="modes")
        with ContentSwitcher(initial="query", id="query-switch"):
            yield SearchBar(
                self.session.history,
                id="query",
                placeholder=PLACEHOLDERS["search"],
                suggester=MeshSuggester(self.session.backend),
            )
            yield TextArea(
                id="cite-editor",
                placeholder="Paste a manuscript paragraph, then ctrl+r for references",
            )
        yield Static("", id="translation")
        with Horizontal(id="body"):
            yield ResultsList(id="results")
            yield DetailPane(id="detail")
        yield StatusBar(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(SearchBar).focus()
        self.query_one(DetailPane).clear("Type a query and press Enter.")
        keys_ready = getattr(self.app, "keys_ready", None)
        if keys_ready is not None:  # keys typed while the app started
            self.call_after_refresh(keys_ready)

    @property
    def results(self) -> ResultsList:
        return self.query_one(ResultsList)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    # -- queries -------------------------------------------------------------

    @on(SearchBar.Submitted, "#query")
    def submitted(self, event: SearchBar.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        try:
            self.session.history.add(text)
        except MedsearchError as exc:
            self.notify(str(exc), severity="warning")
        self.run_request(
            jobs.Request(
                self.mode, text, self.filters, search_mode=self.search_mode, sort=self.status.sort
            )
        )

    def run_request(self, request: jobs.Request) -> None:
        self.last = request
        if not self.when_open(lambda: self.run_request(request)):
            return
        self.ticket += 1
        self.workers.cancel_group(self, "rerank")
        self.status.activity = "searching…"
        self.first_stage(self.ticket, request)

    def when_open(self, start: Callable[[], None]) -> bool:
        """True when the corpus is open; else ``start`` waits for it, as the status says."""
        if self.session.corpus.admit(start):
            return True
        self.status.activity = "waiting for the corpus to open…"
        return False

    @work(thread=True, exclusive=True, exit_on_error=False, group="search", description="search")
    def first_stage(self, ticket: int, request: jobs.Request) -> None:
        try:
            answer = self.session.backend.run(lambda s: jobs.answer(s, request, self.session.paths))
        except MedsearchError as exc:
            # a syntax error's caret window is for a terminal: the toast names the
            # problem and its position on one line
            line = exc.problem if isinstance(exc, QuerySyntaxError) else str(exc)
            self.post_message(WorkFailed(ticket, line, "search"))
            return
        self.post_message(ResultsReady(ticket, answer))
        if request.mode not in ("search", "similar"):
            return
        try:
            recorder = self.session.history_recorder()
            if recorder is None:  # a read-only home: nothing is recorded there
                return
            self.session.backend.run(
                lambda s: jobs.record(s, request, answer.result, self.session.paths, recorder)
            )
        except MedsearchError as exc:  # the search stands; the note says what was not kept
            self.app.call_from_thread(
                self.notify, f"not recorded in the history: {exc}", severity="warning"
            )

    @work(thread=True, exclusive=True, exit_on_error=False, group="rerank", description="rerank")
    def rerank(self, ticket: int, answer: jobs.Answer) -> None:
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled or ticket != self.ticket

        try:
            result = self.session.backend.run(
                lambda s: s.rerank(answer.result, is_cancelled=cancelled)
            )
        except MedsearchError as exc:
            self.post_message(WorkFailed(ticket, str(exc), "rerank"))
            return
        if not cancelled():
            self.post_message(RerankDone(ticket, result))

    @work(thread=True, exclusive=True, exit_on_error=False, group="search", description="cite")
    def suggest(self, ticket: int, paragraph: str) -> None:
        worker = get_current_worker()

        def cancelled() -> bool:
            return worker.is_cancelled or ticket != self.ticket

        try:
            answer = self.session.backend.run(
                lambda s: jobs.cite(s, paragraph, is_cancelled=cancelled)
            )
        except MedsearchError as exc:
            self.post_message(WorkFailed(ticket, str(exc), "cite"))
            return
        if cancelled():  # a partial list is not recorded either
            return
        self.post_message(CiteReady(ticket, answer))
        try:
            recorder = self.session.history_recorder()
            if recorder is None:
                return
            self.session.backend.run(
                lambda s: jobs.record_cite(s, paragraph, answer, self.session.paths, recorder)
            )
        except MedsearchError as exc:
            self.app.call_from_thread(
                self.notify, f"not recorded in the history: {exc}", severity="warning"
            )

    def on_results_ready(self, message: ResultsReady) -> None:
        if message.ticket != self.ticket:
            return
        answer = message.answer
        self.articles.update(answer.articles)
        self.citations.update(answer.citations)
        result = answer.result
        from medsearch.retrieval.query_text import dense_text

        query = result.query or ""
        terms = snippet_terms(h.snippet for h in result.hits)
        terms |= {w.lower() for w in dense_text(query).split() if len(w) > 2}
        self.show_rows(list(result.hits), terms, message.ticket, reranked=False)
        self.show_translation(result.translation or "")
        self.summarise(result.total, len(result.hits), result.timings, result.notes)
        if result.mode in ("references", "cited_by"):
            pmid = result.pmid
            what = "references of" if result.mode == "references" else "cited by, of"
            back = " · backspace: back" if self.trail else ""
            self.query_one(ModeBar).summary = f"{result.total} {what} PMID {pmid}{back}"
        if answer.did_you_mean:  # offered, never searched instead
            self.query_one(ModeBar).summary += f" · did you mean: {answer.did_you_mean}"
        if "delta" in result.rerankers:
            self.query_one(ModeBar).summary += " · Delta"
        if answer.can_rerank:
            self.status.activity = "reranking…"
            self.rerank(message.ticket, answer)
        else:
            self.status.activity = ""

    def on_rerank_done(self, message: RerankDone) -> None:
        if message.ticket != self.ticket:
            return
        self.status.activity = ""
        if message.result.reranked:
            # The highlight follows the article the reader moved to; left on the first
            # row, it goes to the new first row (the best result is what they came for).
            current, hits = self.results.current, self.results.hits
            moved = current is not None and bool(hits) and current.pmid != hits[0].pmid
            keep = current.pmid if moved and current is not None else None
            self.show_rows(
                list(message.result.hits), self.results.terms, message.ticket, True, keep
            )
            self.query_one(ModeBar).summary += " · reranked"

    def on_cite_ready(self, message: CiteReady) -> None:
        if message.ticket != self.ticket:
            return
        self.status.activity = ""
        self.articles.update(message.answer.articles)
        rows: list[Row] = []
        for n, item in enumerate(message.answer.cite.citances, 1):
            head = Text(f"¶{n} ", style="bold magenta").append(item.citance.original, style="bold")
            if item.citance.markers:
                head.append("  cites " + ", ".join(item.citance.markers), style="dim")
            rows.append(Heading(head))
            rows.extend(item.result.hits)
        count = len(message.answer.cite.citances)
        self.query_one(ModeBar).summary = f"{count} citing sentence(s)"
        self.show_rows(rows, frozenset(), message.ticket, reranked=False)
        for note in message.answer.cite.notes:  # the sentences left out, and why
            self.notify(note, severity="information", timeout=10)

    def on_work_failed(self, message: WorkFailed) -> None:
        if message.ticket != self.ticket:
            return
        self.status.activity = ""
        self.notify(message.error, title=f"{message.stage} failed", severity="error")

    def show_rows(
        self,
        rows: list[Row],
        terms: frozenset[str],
        ticket: int,
        reranked: bool,
        keep: int | None = None,
    ) -> None:
        results = self.results
        results.show(rows, marked=self.session.basket, terms=terms, keep=keep)
        self.show_detail()
        if results.hits and not reranked and self.left_waiting():
            results.focus()
        count = len(results.hits)
        self.call_after_refresh(self.post_message, ResultsRendered(ticket, count, reranked))

    def left_waiting(self) -> bool:
        """Whether the query is where the user left it after submitting: then the list
        may take the focus. Someone already typing their next query keeps the bar."""
        bar = self.query_one(SearchBar)
        if self.focused is None:
            return True
        last = self.last
        return self.focused is bar and last is not None and bar.value.strip() == last.text

    def show_translation(self, text: str) -> None:
        """The query as it ran (MeSH applied), under the query, as PubMed's search details."""
        line = self.query_one("#translation", Static)
        line.update(Text("search details: ", style="dim").append(text) if text else "")
        line.display = bool(text)

    @on(TypedAhead)
    def typed_ahead(self, message: TypedAhead) -> None:
        if self.mode == "cite":
            editor = self.query_one(TextArea)
            editor.insert(message.character)
            editor.focus()
            return
        self.query_one(SearchBar).type_ahead(message.character)

    def summarise(
        self, total: int, shown: int, timings: tuple[tuple[str, float], ...], notes: tuple[str, ...]
    ) -> None:
        text = f"{total:,} matching · showing {shown}" if total else "no results"
        if self.session.show_timings and timings:
            text += f" · {sum(t for _, t in timings) * 1000:.0f} ms"
        self.query_one(ModeBar).summary = text
        for note in notes:
            if note not in self.shown_notes:  # a hint said once, not on every search
                self.shown_notes.add(note)
                self.notify(note, severity="information", timeout=4)

    # -- the highlighted article ---------------------------------------------

    @on(OptionList.OptionHighlighted, "#results")
    def show_detail(self) -> None:
        hit = self.results.current
        article = self.articles.get(hit.pmid) if hit else None
        if article is not None:
            counts = self.citations.get(article.pmid)
            self.query_one(DetailPane).show(article, self.results.terms, counts)

    # -- modes, filters ------------------------------------------------------

    def action_mode(self, mode: str) -> None:
        self.mode = mode
        self.query_one(ModeBar).mode = mode
        switcher = self.query_one(ContentSwitcher)
        if mode == "cite":
            switcher.current = "cite-editor"
            self.query_one(TextArea).focus()
            return
        switcher.current = "query"
        bar = self.query_one(SearchBar)
        bar.placeholder = PLACEHOLDERS[mode]
        bar.focus()

    def action_cycle_sort(self) -> None:
        """Next sort order (relevance, date, author, journal); the search or the similar
        articles on screen are fetched again in it."""
        self.status.sort = SORT_CYCLE[(SORT_CYCLE.index(self.status.sort) + 1) % len(SORT_CYCLE)]
        last = self.last
        if last is not None and last.mode in ("search", "similar"):
            self.run_request(replace(last, sort=self.status.sort))

    def action_focus_search(self) -> None:
        self.action_mode(self.mode)

    def key_escape(self) -> None:
        self.action_focus_search()

    def action_run_cite(self) -> None:
        if self.mode != "cite":
            self.action_mode("cite")
            return
        paragraph = self.query_one(TextArea).text
        if not paragraph.strip():
            self.notify("paste a paragraph first", severity="warning")
            return
        self.run_cite(paragraph)

    def run_cite(self, paragraph: str) -> None:
        if not self.when_open(lambda: self.run_cite(paragraph)):
            return
        self.ticket += 1
        self.workers.cancel_group(self, "rerank")
        self.status.activity = "finding references…"
        self.suggest(self.ticket, paragraph)

    def action_filters(self) -> None:
        def chosen(filters: Filters | None) -> None:
            if filters is None:
                return
            self.filters = filters
            self.query_one(ModeBar).filters = filters
            if self.last is not None and self.last.mode != "sentences":
                self.run_request(replace(self.last, filters=filters))

        self.app.push_screen(FiltersScreen(self.filters), chosen)
