"""The screening screen: one record at a time, decided with one key.

Title, journal, year, authors, MeSH and keywords beside the abstract, the review
question's words highlighted. ``i`` include, ``e`` exclude with a reason (a list to pick
from), ``x`` exclude without one, ``m`` maybe, ``u`` undo, ``/`` search within the
project (``]`` the next match), ``q`` quit. The next record comes from the ranker's
latest scores at once; the model refits in its own thread
(:class:`medsearch.screening.ranker.Ranker`) and the stopping estimate is computed in a
worker, so a decision never waits for either. Record text is shown as rich ``Text``
(never parsed as markup), so a title holding ``[bold]`` prints as typed.
"""

from __future__ import annotations

import sqlite3
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import Footer, Input, OptionList, Static

from medsearch.paths import Paths
from medsearch.screening.features import STOP_WORDS
from medsearch.screening.project import Project
from medsearch.screening.session import Progress, Session


class ProgressReady(Message):
    def __init__(self, progress: Progress) -> None:
        self.progress = progress
        super().__init__()


class ReasonScreen(ModalScreen[str | None]):
    """Pick an exclusion reason; escape cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="screening.reason.cancel"),
    ]

    def __init__(self, reasons: list[str]) -> None:
        super().__init__()
        self.reasons = reasons

    def compose(self) -> ComposeResult:
        yield Static("Why exclude? (enter picks, escape cancels)")
        yield OptionList(*self.reasons, id="reasons")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.reasons[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ProjectPicker(ModalScreen[str | None]):
    """Pick a screening project (F9 in the main TUI, when there are several)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="screening.pick.cancel"),
    ]

    def __init__(self, names: list[str]) -> None:
        super().__init__()
        self.names = names

    def compose(self) -> ComposeResult:
        yield Static("Which screening project? (enter opens, escape cancels)")
        yield OptionList(*self.names, id="projects")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.names[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)


class ScreeningScreen(Screen[None]):
    AUTO_FOCUS = None  # the keys act on the record; the search box takes focus on "/"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("i", "decide('include')", "Include", id="screening.include"),
        Binding("e", "exclude_with_reason", "Exclude…", id="screening.exclude"),
        Binding("x", "decide('exclude')", "Exclude", id="screening.exclude_now"),
        Binding("m", "decide('maybe')", "Maybe", id="screening.maybe"),
        Binding("u", "undo", "Undo", id="screening.undo"),
        Binding("slash", "search", "Search", id="screening.search"),
        Binding("right_square_bracket", "next_match", "Next match", id="screening.next_match"),
        Binding("o", "open_record", "Full view", id="screening.open"),
        Binding("q", "quit_screening", "Quit", id="screening.quit"),
    ]

    DEFAULT_CSS = """
    #record { padding: 0 1; }
    #status { height: 2; background: $panel; padding: 0 1; }
    #search { display: none; }
    #search.shown { display: block; }
    """

    def __init__(self, session: Session, *, standalone: bool = True) -> None:
        super().__init__()
        self.session = session
        self.standalone = standalone
        """True under ``medsearch screen review`` (q quits the app); False when pushed
        by the main TUI (q closes the project and returns to the screen below)."""
        self.current: int | None = None
        self.matches: list[int] = []
        self.match_at = 0
        self.progress: Progress | None = None
        self.notice = ""
        words = session.project.question.lower().split()
        self.terms = [w.strip("()[]\"'*,") for w in words]
        self.terms = [t for t in self.terms if len(t) > 2 and t not in STOP_WORDS]
        self.terms = [t for t in self.terms if t not in ("and", "or", "not")]

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search within the project (enter)", id="search", disabled=True)
        with VerticalScroll():
            yield Static(id="record")
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.show(self.session.next())
        self.refresh_progress()

    # -- showing -------------------------------------------------------------------------

    def show(self, record_id: int | None) -> None:
        self.current = record_id
        widget = self.query_one("#record", Static)
        if record_id is None:
            widget.update(Text("Every record is screened. u undoes the last decision."))
        else:
            widget.update(self.render_record(record_id))
        self.draw_status()

    def render_record(self, record_id: int) -> Text:
        item = self.session.record(record_id)
        text = Text()
        text.append(item.title or "(no title)", style="bold")
        text.append("\n")
        where = " · ".join(str(p) for p in (item.journal, item.year) if p)
        if item.pmid:
            where += f" · PMID {item.pmid}"
        text.append(f"{where} · record {record_id}\n", style="dim")
        if item.authors:
            text.append("; ".join(item.authors[:8]) + ("; …" if len(item.authors) > 8 else ""))
            text.append("\n")
        text.append("\n")
        text.append(item.abstract or "(no abstract)")
        text.append("\n")
        if item.mesh:
            text.append("\nMeSH: ", style="bold")
            text.append("; ".join(item.mesh))
        if item.keywords:
            text.append("\nKeywords: ", style="bold")
            text.append("; ".join(item.keywords))
        decision = self.session.decision(record_id)
        if decision is not None:
            text.append(f"\n\nDecided: {decision.decision}", style="bold magenta")
            if decision.reason:
                text.append(f" ({decision.reason})")
        for kind, reviewer, note in self.session.project.annotations(record_id):
            text.append(f"\n{kind} ({reviewer}): {note}", style="italic")
        if self.terms:
            text.highlight_words(self.terms, style="black on yellow", case_sensitive=False)
        return text

    def draw_status(self) -> None:
        line = self.progress.line if self.progress else "counting…"
        order = "model" if self.session.ranker.modelled else "strategy order"
        extra = f" · {self.notice}" if self.notice else ""
        self.query_one("#status", Static).update(Text(f"{line}\nranked by {order}{extra}"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="screening-progress")
    def refresh_progress(self) -> None:
        project = Project(self.session.project.path, _reader(self.session.project))
        try:
            from medsearch.screening.session import progress

            self.post_message(ProgressReady(progress(project, self.session.reviewer)))
        finally:
            project.close()

    def on_progress_ready(self, message: ProgressReady) -> None:
        self.progress = message.progress
        self.draw_status()

    # -- actions -------------------------------------------------------------------------

    def action_decide(self, decision: str, reason: str | None = None) -> None:
        if self.current is None:
            return
        made = self.session.decide(self.current, decision, reason)
        self.notice = f"record {made.record_id}: {made.decision}" + (
            f" ({reason})" if reason else ""
        )
        self.show(self.session.next())
        self.refresh_progress()

    def action_exclude_with_reason(self) -> None:
        if self.current is None:
            return

        def chosen(reason: str | None) -> None:
            if reason is not None:
                self.action_decide("exclude", reason)

        self.app.push_screen(ReasonScreen(self.session.project.reasons()), chosen)

    def action_undo(self) -> None:
        undone = self.session.undo()
        if undone is None:
            self.notice = "nothing to undo"
            self.draw_status()
            return
        self.notice = f"undone: record {undone.record_id} {undone.decision}"
        self.show(undone.record_id)
        self.refresh_progress()

    def action_search(self) -> None:
        box = self.query_one("#search", Input)
        box.disabled = False
        box.add_class("shown")
        box.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        box = self.query_one("#search", Input)
        box.remove_class("shown")
        box.disabled = True
        self.set_focus(None)
        self.matches = self.session.project.search(event.value)
        self.match_at = 0
        if not self.matches:
            self.notice = f"no record holds {event.value!r}"
            self.draw_status()
            return
        self.notice = f"match 1 of {len(self.matches)} (] next)"
        self.show(self.matches[0])

    def action_next_match(self) -> None:
        if not self.matches:
            return
        self.match_at = (self.match_at + 1) % len(self.matches)
        self.notice = f"match {self.match_at + 1} of {len(self.matches)} (] next)"
        self.show(self.matches[self.match_at])

    def action_open_record(self) -> None:
        """The record's full view (detail, similar articles, references, citations) as
        the main screen shows it; escape comes back here, to the same record. Only a
        record in the store has one, and only inside ``medsearch`` (the main TUI)."""
        if self.current is None:
            return
        item = self.session.record(self.current)
        tui_session = getattr(self.app, "session", None)
        if item.pmid is None:
            self.notify(f"record {self.current} is not in the store: no full view")
            return
        from medsearch.tui.session import Session as TuiSession

        if not isinstance(tui_session, TuiSession):
            self.notify(f"the full view of PMID {item.pmid} opens inside medsearch (F9 there)")
            return
        from medsearch.tui.screens.article import ArticleScreen

        self.app.push_screen(ArticleScreen(tui_session, item.pmid))

    def action_quit_screening(self) -> None:
        self.session.close()
        if self.standalone:
            self.app.exit()
            return
        self.session.project.close()
        self.app.pop_screen()


def _reader(project: Project) -> sqlite3.Connection:
    """A second connection for the worker thread (SQLite connections stay in one thread)."""
    from medsearch.screening.project import _connect

    return _connect(project.path)


class ScreeningApp(App[None]):
    """``medsearch screen review NAME``: the screening screen on its own."""

    TITLE = "medsearch screening"

    def __init__(self, paths: Paths, name: str, reviewer: str) -> None:
        super().__init__()
        self.project = Project.open(paths.screening, name)
        self.session = Session(self.project, reviewer)
        self.sub_title = f"{name} · {reviewer}"

    def on_mount(self) -> None:
        self.push_screen(ScreeningScreen(self.session))

    def on_unmount(self) -> None:
        self.session.close()
        self.project.close()


def run_screening(paths: Paths, name: str, reviewer: str) -> None:
    ScreeningApp(paths, name, reviewer).run()
