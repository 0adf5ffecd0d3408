"""The screening screen inside ``medsearch tui``: F9 opens a project (a list to pick
from when there are several), ``o`` opens the record's full view as the main screen shows
an article, escape comes back to the same record, and ``q`` returns to the main screen."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from benchmarks.synth import pubmed_file
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
from medsearch.screening.items import Item
from medsearch.screening.project import Project, Strategy
from medsearch.tui.app import MedsearchApp
from medsearch.tui.screens.article import ArticleScreen
from medsearch.tui.screens.main import MainScreen
from medsearch.tui.screens.screening import ProjectPicker, ScreeningScreen
from medsearch.tui.widgets.detail import DetailPane
from tests.test_citations_cli import GRAPH, YEARS, cited_xml

SIZE = (120, 40)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    xml = tmp_path / "xml"
    xml.mkdir()
    pubmed_file(xml / "graph.xml", [cited_xml(p, c, YEARS[p]) for p, c in GRAPH.items()])
    paths = Paths(tmp_path / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([xml])
    items = [Item(title=f"Record about PMID {p}", abstract="heart", pmid=p) for p in (1, 2)]
    with Project.create(paths.screening, "alpha", question="heart failure") as project:
        project.add(items, Strategy("hand list"))
    return paths


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


def record_text(app: MedsearchApp) -> str:
    return str(app.screen.query_one("#record", Static).render())


@pytest.mark.thorough
async def test_f9_opens_the_project_o_the_full_view_and_escape_comes_back(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f9")
        await settle(app, pilot)
        assert isinstance(app.screen, ScreeningScreen)
        screen = app.screen
        shown = screen.current
        assert shown is not None
        pmid = screen.session.record(shown).pmid
        before = record_text(app)

        await pilot.press("o")
        await settle(app, pilot)
        assert isinstance(app.screen, ArticleScreen)
        detail = app.screen.query_one(DetailPane)
        assert detail.article is not None and detail.article.pmid == pmid
        body = str(detail.query_one("#detail-body", Static).content)
        assert "References (" in body and "Cited by (" in body

        await pilot.press("escape")
        await settle(app, pilot)
        assert app.screen is screen and screen.current == shown
        assert record_text(app) == before

        await pilot.press("q")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen) and not isinstance(app.screen, ArticleScreen)


@pytest.mark.thorough
async def test_with_several_projects_f9_asks_which(paths: Paths) -> None:
    with Project.create(paths.screening, "beta", question="q") as project:
        project.add([Item(title="only one", pmid=3)], Strategy("hand list"))
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f9")
        await pilot.pause()
        assert isinstance(app.screen, ProjectPicker)
        options = app.screen.query_one(OptionList)
        assert [str(options.get_option_at_index(i).prompt) for i in range(2)] == [
            "alpha",
            "beta",
        ]
        await pilot.press("down", "enter")
        await settle(app, pilot)
        assert isinstance(app.screen, ScreeningScreen)
        assert app.screen.session.project.path.stem == "beta"


def test_f1_help_lists_the_screening_key() -> None:
    from rich.console import Console

    from medsearch.tui.keys import Keymap
    from medsearch.tui.screens.help import help_table

    console = Console(width=160, record=True)
    console.print(help_table(Keymap({}), "config.toml"))
    line = next(x for x in console.export_text().splitlines() if "Screening projects" in x)
    assert "f9" in line


async def test_o_on_a_record_kept_as_imported_says_there_is_no_full_view(tmp_path: Path) -> None:
    from medsearch.tui.screens.screening import ScreeningApp

    paths = Paths(tmp_path / "home")
    with Project.create(paths.screening, "solo", question="q") as project:
        project.add([Item(title="an imported record, not in the store")], Strategy("file"))
    app = ScreeningApp(paths, "solo", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, ScreeningScreen)  # nothing opened over it
        assert [n.message for n in app._notifications] == [
            "record 1 is not in the store: no full view"
        ]
