"""Brackets typed or stored are shown as they are: the TUI never reads a query, a title or
a watch as Rich markup (``cataract[ti]`` is not a style tag to drop). And F7 in a home
without MeSH says MeSH is missing, whatever else it could have complained of.

One Pilot session over a small real home: the F1 keys table, a search's error line, the
Watches screen with a watch on ``cataract[ti] AND surgery``, and a hit titled with
brackets, each read from what the widget renders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.content import Content
from textual.notifications import Notification
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import DataTable

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.index.lexical.shards import open_lexical
from medsearch.mesh.tables import INSTALL_HINT
from medsearch.paths import Paths
from medsearch.store import Store
from medsearch.tui.app import MedsearchApp
from medsearch.tui.screens.help import HelpScreen
from medsearch.tui.screens.watches import WatchesScreen, WatchHitsScreen
from medsearch.watches.book import WatchBook
from medsearch.watches.finder import make_watch
from medsearch.watches.runner import run_watches

SIZE = (120, 40)
WATCH = "cataract[ti] AND surgery"
TITLE = "[Cataract surgery in children]: outcomes by [bold]age[/bold]"
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]  # Pilot: seconds each


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A home with a watch on ``WATCH`` that an update brought one hit titled ``TITLE``."""
    paths = Paths(tmp_path / "home")
    first = pubmed_file(tmp_path / "pubmed26n0001.xml", [article_xml(1, "Gout", "")])
    second = pubmed_file(
        tmp_path / "pubmed26n0002.xml", [article_xml(10, TITLE, "Cataract surgery helped.")]
    )
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([first])
    with (
        Store(paths.store, readonly=True) as store,
        open_lexical(paths.lexical_index, create=False) as lexical,
        WatchBook(paths.watches_file) as book,
    ):
        book.add(make_watch("cataract", WATCH, store=store, lexical=lexical))
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([second])
    run_watches(paths)
    return paths


def shown(widget: Widget) -> str:
    """What ``widget`` draws on screen, line by line."""
    return "\n".join(widget.render_line(y).text for y in range(widget.size.height))


def drawn(notification: Notification) -> str:
    """The text a toast draws for ``notification``, read as textual's ``Toast`` reads it."""
    message = notification.message
    return (Content.from_markup(message) if notification.markup else Content(message)).plain


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_queries_titles_watches_and_keys_keep_their_brackets(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f7")  # nothing typed, nothing highlighted, and no MeSH here
        await settle(app, pilot)
        assert [drawn(n) for n in app._notifications] == [INSTALL_HINT]
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "[mh] / [majr]" in shown(app.screen.query_one("#help-box > Static", Widget))
        await pilot.press("escape")
        await pilot.pause()

        # a query's error line names the tag as typed, in the notification drawn
        await pilot.press(*"cataract[xx]", "enter")
        await settle(app, pilot)
        toasts = [drawn(n) for n in app._notifications]
        assert [t for t in toasts if "field tag" in t] == ["unknown field tag [xx] at 8"]

        await pilot.press("f6")
        await settle(app, pilot)
        assert isinstance(app.screen, WatchesScreen)
        assert WATCH in shown(app.screen.query_one(DataTable))
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, WatchHitsScreen)
        assert "[Cataract surgery in children]: outcomes by [bold]age[/bold]" in shown(
            app.screen.query_one(DataTable)
        )
