"""The screening screen, driven with Pilot: every key does what its label says, and the
decision is in the project file when the key returns."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, OptionList, Static

from medsearch.paths import Paths
from medsearch.screening import readers
from medsearch.screening.items import Item
from medsearch.screening.project import Project, Strategy
from medsearch.tui.screens.screening import ReasonScreen, ScreeningApp, ScreeningScreen

FIXTURES = Path(__file__).parent / "fixtures" / "screening"
SIZE = (100, 36)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    paths = Paths(tmp_path / "home")
    items = readers.read_file(FIXTURES / "labelled.csv")
    items[0] = Item(
        title="Statin therapy [bold]and[/bold] LDL cholesterol",
        abstract=items[0].abstract,
        mesh=("Hydroxymethylglutaryl-CoA Reductase Inhibitors",),
        keywords=("statins",),
        journal="Test J",
        year=2020,
    )
    with Project.create(paths.screening, "rev", question="statin cholesterol") as project:
        project.add(items, Strategy("file labelled.csv"))
    return paths


def _text(app: ScreeningApp) -> str:
    screen = app.screen
    assert isinstance(screen, ScreeningScreen)
    return str(screen.query_one("#record", Static).render())


def _decisions(paths: Paths) -> dict[int, tuple[str, str | None]]:
    with Project.open(paths.screening, "rev") as project:
        return {r: (d.decision, d.reason) for r, d in project.decisions().items()}


@pytest.mark.thorough
async def test_the_record_shows_its_fields_and_markup_as_typed(paths: Paths) -> None:
    app = ScreeningApp(paths, "rev", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        text = _text(app)
        assert "[bold]and[/bold]" in text  # never read as markup
        assert "MeSH: Hydroxymethylglutaryl-CoA Reductase Inhibitors" in text
        assert "Keywords: statins" in text and "Test J · 2020" in text
        await app.workers.wait_for_complete()
        await pilot.pause()
        status = str(app.screen.query_one("#status", Static).render())
        assert "0/10 screened" in status and "ranked by strategy order" in status


async def test_include_maybe_exclude_and_undo_keys(paths: Paths) -> None:
    app = ScreeningApp(paths, "rev", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("i")
        assert _decisions(paths) == {1: ("include", None)}
        await pilot.press("x")
        await pilot.press("m")
        assert _decisions(paths)[2] == ("exclude", None)
        assert list(_decisions(paths).values())[-1] == ("maybe", None)
        await pilot.press("u")
        assert len(_decisions(paths)) == 2
        screen = app.screen
        assert isinstance(screen, ScreeningScreen)
        assert screen.notice.startswith("undone: record")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "2/10 screened" in str(screen.query_one("#status", Static).render())


@pytest.mark.thorough
async def test_e_asks_for_a_reason_and_escape_cancels(paths: Paths) -> None:
    app = ScreeningApp(paths, "rev", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("e")
        assert isinstance(app.screen, ReasonScreen)
        await pilot.press("escape")
        assert _decisions(paths) == {}
        await pilot.press("e")
        options = app.screen.query_one(OptionList)
        options.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert _decisions(paths) == {1: ("exclude", "wrong intervention")}


@pytest.mark.thorough
async def test_search_within_the_project_and_next_match(paths: Paths) -> None:
    app = ScreeningApp(paths, "rev", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("slash")
        box = app.screen.query_one("#search", Input)
        assert box.has_focus
        box.value = "statins"
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, ScreeningScreen)
        assert screen.matches == [1, 3, 6, 10]
        assert screen.current == 1
        await pilot.press("right_square_bracket")
        assert screen.current == 3
        assert "match 2 of 4" in screen.notice


@pytest.mark.thorough
async def test_q_quits(paths: Paths) -> None:
    app = ScreeningApp(paths, "rev", "reviewer1")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0
