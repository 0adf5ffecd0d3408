"""``MedsearchApp``: start-up, the corpus and models, and the screens over them.

Start-up is deliberately empty: the first frame draws before anything is opened. A
worker then opens the corpus on the backend's lane (store + lexical index: cheap) and
loads the models (seconds) while the user types. A query submitted before the corpus is
open waits for it (``Session.corpus``) and runs as soon as it opens; one submitted while
the models load queues behind them on the lane. An empty home gets the welcome screen
instead of an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events, work
from textual.app import App
from textual.binding import BindingType
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Input
from textual.worker import Worker, WorkerState

from medsearch.errors import MedsearchError
from medsearch.paths import Paths
from medsearch.tui import keys
from medsearch.tui.backend import Backend
from medsearch.tui.history import History
from medsearch.tui.jobs import CorpusInfo, corpus_info
from medsearch.tui.messages import (
    CorpusFailed,
    CorpusMissing,
    CorpusOpened,
    ModelsFailed,
    ModelsLoaded,
)
from medsearch.tui.screens.help import HelpScreen
from medsearch.tui.screens.main import MainScreen
from medsearch.tui.screens.welcome import WelcomeScreen
from medsearch.tui.session import Session

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher


def corpus_label(info: CorpusInfo) -> str:
    text = f"{info.articles:,} articles"
    if info.lexical_only:
        return text + " · lexical only (no vectors yet)"
    return text + f" · {info.vectors:,} vectors · profile {info.profile}"


class MedsearchApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "medsearch"
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings("app.")

    def __init__(self, paths: Paths, *, show_timings: bool = True) -> None:
        super().__init__()
        from medsearch.history.store import open_history

        recorder = None
        try:
            recorder = open_history(paths)  # imports the former recall file once
            history = History.load(paths, recorder)
        except MedsearchError:
            history = History([])
        self.session = Session(
            paths=paths,
            backend=Backend(),
            history=history,
            show_timings=show_timings,
            recorder=recorder,
        )
        self.main = MainScreen(self.session)
        self.info: CorpusInfo | None = None
        self.early_keys: list[events.Key] | None = []
        """Keys that came before the main screen could take them (None after): a query
        typed while the app starts. They are handed on once the search bar has focus."""

    def get_default_screen(self) -> Screen[None]:
        return self.main

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and self.early_keys is not None:
            if self.focused is None:  # nothing could take it yet: it would be lost
                self.early_keys.append(event)
                return
            await self.keys_ready()  # what was held goes first
        await super().on_event(event)

    async def keys_ready(self) -> None:
        """The main screen has focused its search bar: the keys typed so far go to it,
        in order. Characters and Enter are applied here, one after the other: posted
        again as keys, an Enter would be acted on (a binding) before the characters
        before it reached the bar (a message each). Enter typed before the app took the
        terminal over comes as a line feed (ctrl+j)."""
        early, self.early_keys = self.early_keys or [], None
        for key in early:
            bar = self.focused
            if isinstance(bar, Input) and key.is_printable and key.character is not None:
                bar.insert_text_at_cursor(key.character)
            elif isinstance(bar, Input) and key.key in ("enter", "ctrl+j", "ctrl+m"):
                await bar.action_submit()
            else:
                await super().on_event(events.Key(key.key, key.character))

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification is literal text: they carry queries (``cataract[ti]``),
        titles, file names and error lines, whose brackets markup would eat. A screen's
        or widget's ``notify`` asks for markup by default; it is never used here."""
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def on_mount(self) -> None:
        self.apply_keymap()
        self.open_corpus()

    def apply_keymap(self) -> None:
        try:
            keymap = keys.load_keymap(self.session.paths)
        except MedsearchError as exc:
            self.notify(str(exc), severity="error")
            return
        self.session.keymap = keymap
        self.set_keymap(dict(keymap.keys))
        for problem in keymap.problems:
            self.notify(problem, title="config", severity="warning")

    # -- the corpus and the models ---------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="corpus", description="open")
    def open_corpus(self) -> None:
        paths = self.session.paths
        try:
            info = corpus_info(paths)
            if info is None:
                self.post_message(CorpusMissing())
                return
            from medsearch.config import load_settings
            from medsearch.retrieval.searcher import open_searcher

            settings = load_settings(paths)
            searcher = self.session.backend.open(
                lambda: open_searcher(paths, profile=settings.profile, device=settings.device)
            )
        except MedsearchError as exc:
            self.post_message(CorpusFailed(str(exc)))
            return
        self.post_message(CorpusOpened(info))
        if not searcher.has_vectors:
            return

        def load(searcher: Searcher) -> tuple[Searcher, bool]:
            searcher.load_models()
            return searcher, searcher.can_rerank  # the plan reads the store: on the lane

        try:
            loaded, can_rerank = self.session.backend.run(load)
        except MedsearchError as exc:
            self.post_message(ModelsFailed(str(exc)))
            return
        self.post_message(ModelsLoaded(loaded.device, loaded.index_kind, can_rerank))

    def action_reopen(self) -> None:
        self.main.status.corpus = "opening corpus…"
        self.open_corpus()

    def on_corpus_opened(self, message: CorpusOpened) -> None:
        self.info = message.info
        status = self.main.status
        status.corpus = corpus_label(message.info)
        if not message.info.lexical_only:
            status.activity = "loading models…"
        self.session.corpus.opened()

    def on_corpus_missing(self) -> None:
        self.main.status.corpus = "no corpus yet"
        self.drop_waiting("there is no corpus yet")
        self.push_screen(WelcomeScreen(str(self.session.paths.home)))

    def on_corpus_failed(self, message: CorpusFailed) -> None:
        self.main.status.corpus = "corpus unavailable"
        self.drop_waiting("the corpus could not be opened")
        self.notify(message.error, title="cannot open the corpus", severity="error", timeout=10)

    def drop_waiting(self, why: str) -> None:
        if self.session.corpus.unavailable():
            self.main.status.activity = ""
            self.notify(f"your query was not run: {why}", severity="warning")

    def on_models_loaded(self, message: ModelsLoaded) -> None:
        status = self.main.status
        if status.activity == "loading models…":
            status.activity = ""
        kind = message.index_kind or (self.info.index_kind if self.info else None)
        parts = [message.device or "cpu", kind or "index ?"]
        parts.append("rerank on" if message.can_rerank else "no reranker")
        status.models = " · ".join(parts)

    def on_models_failed(self, message: ModelsFailed) -> None:
        self.main.search_mode = "lexical"
        status = self.main.status
        status.activity = ""
        status.models = "models unavailable: lexical search and similar articles"
        self.notify(message.error, title="models", severity="error", timeout=10)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A worker that died of anything but a MedsearchError is a bug: say so, keep running."""
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            self.main.status.activity = ""
            self.notify(
                f"{type(error).__name__}: {error}",
                title=f"internal error in {event.worker.description or 'a worker'}",
                severity="error",
                timeout=10,
            )

    # -- app-wide actions ------------------------------------------------------------

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.pop_screen()
            return
        self.push_screen(HelpScreen(self.session.keymap, str(self.session.paths.config_file)))

    def action_watches(self) -> None:
        from medsearch.tui.screens.watches import WatchesScreen, WatchHitsScreen

        if isinstance(self.screen, WatchesScreen | WatchHitsScreen):
            return
        self.push_screen(WatchesScreen(self.session.paths))

    def action_screening(self) -> None:
        """F9: a screening project, screened here; with several, a list to pick from.
        The reviewer is ``reviewer1``, as ``medsearch screen review`` takes by default."""
        from medsearch.screening.project import list_projects
        from medsearch.tui.screens.screening import ProjectPicker, ScreeningScreen

        if any(isinstance(s, ScreeningScreen | ProjectPicker) for s in self.screen_stack):
            return
        names = list_projects(self.session.paths.screening)
        if not names:
            self.notify(
                "no screening project yet: medsearch screen start NAME --from '#N'",
                severity="warning",
            )
            return
        if len(names) == 1:
            self.open_screening(names[0])
            return

        def picked(name: str | None) -> None:
            if name is not None:
                self.open_screening(name)

        self.push_screen(ProjectPicker(names), picked)

    def open_screening(self, name: str) -> None:
        from medsearch.screening.project import Project
        from medsearch.screening.session import Session as ScreeningSession
        from medsearch.tui.screens.screening import ScreeningScreen

        try:
            project = Project.open(self.session.paths.screening, name)
        except MedsearchError as exc:
            self.notify(str(exc), severity="error")
            return
        self.push_screen(ScreeningScreen(ScreeningSession(project, "reviewer1"), standalone=False))

    def on_unmount(self) -> None:
        self.session.backend.close()
        if self.session.recorder is not None:
            self.session.recorder.close()


def run_app(paths: Paths) -> None:
    """Open the terminal UI over the data home ``paths`` (blocks until the user quits)."""
    MedsearchApp(paths).run()
