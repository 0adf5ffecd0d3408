"""The TUI with MeSH installed, driven with textual's Pilot over real records: a
heading completed in the search bar, the translation under the query, and the MeSH
browser opened by name and from an article, walked, and searched from."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from textual.pilot import Pilot
from textual.widgets import OptionList, Static

from ingest.pubmed_xml import parse_file
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.tui.app import MedsearchApp
from medsearch.tui.screens.mesh import HeadingPicker, MeshScreen
from medsearch.tui.widgets.results import ResultsList
from medsearch.tui.widgets.search_bar import SearchBar
from tests.conftest import FIXTURES, SHARED_DATA

SIZE = (120, 40)
REAL = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser" / "pubmed21n0001.xml.gz"
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def mesh_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not REAL.exists():
        pytest.skip(f"shared data not available: {REAL}")
    home = tmp_path_factory.mktemp("tui-mesh") / "home"
    runner = CliRunner()
    done = runner.invoke(main, ["--home", str(home), "ingest", str(REAL), "--no-encode"])
    assert done.exit_code == 0, done.output
    mesh = [str(FIXTURES / "mesh" / "desc2025.xml"), str(FIXTURES / "mesh" / "supp2025.xml")]
    done = runner.invoke(main, ["--home", str(home), "mesh", "import", *mesh])
    assert done.exit_code == 0, done.output
    return home


@pytest.fixture
def paths(mesh_home: Path, tmp_path: Path) -> Paths:
    home = tmp_path / "home"
    shutil.copytree(mesh_home, home)
    return Paths(home)


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def test_a_quoted_heading_completes_and_the_translation_shows_under_the_query(
    paths: Paths,
) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press(*'"hydrol')
        await settle(app, pilot)
        await pilot.press("right")  # accepts the suggestion
        bar = app.screen.query_one(SearchBar)
        assert bar.value == '"hydrolases"[mh]'
        await pilot.press("enter")
        await settle(app, pilot)
        assert len(app.screen.query_one(ResultsList).hits) > 1  # narrower headings too
        details = str(app.screen.query_one("#translation", Static).content)
        assert details == 'search details: "Hydrolases"[MeSH Terms]'


async def test_the_browser_opens_by_name_walks_up_and_searches_without_explosion(
    paths: Paths,
) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press(*"glyco[mh", "f7")
        await settle(app, pilot)
        browser = app.screen
        assert isinstance(browser, MeshScreen)
        assert browser.view.heading.name == "Glycoside Hydrolases"
        walk = browser.query_one("#mesh-walk", OptionList)
        labels = [str(walk.get_option_at_index(i).prompt) for i in range(walk.option_count)]
        assert labels[0] == "↑ Hydrolases" and "↓ Muramidase" in labels
        assert "/ metabolism (ME)" in labels
        await pilot.press("enter")  # the first option: up to Hydrolases
        await settle(app, pilot)
        assert browser.view.heading.name == "Hydrolases"
        assert "hydrolysis of a chemical bond" in str(
            browser.query_one("#mesh-body", Static).content
        )
        await pilot.press("x", "s")
        await settle(app, pilot)
        assert app.screen.query_one(SearchBar).value == '"Hydrolases"[mh:noexp]'
        hydrolases = [
            a.pmid
            for a in parse_file(REAL)
            if isinstance(a, Article) and any(m.descriptor == "Hydrolases" for m in a.mesh)
        ]
        assert [h.pmid for h in app.screen.query_one(ResultsList).hits] == hydrolases


async def test_the_browser_opens_from_an_articles_headings_and_adds_to_the_query(
    paths: Paths,
) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        bar.value = "muramidase[mh]"
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("f7")
        await settle(app, pilot)
        picker = app.screen
        assert isinstance(picker, HeadingPicker) and "Muramidase" in picker.headings
        picker.dismiss("Muramidase")
        await settle(app, pilot)
        assert isinstance(app.screen, MeshScreen)
        await pilot.press("m", "a")
        await settle(app, pilot)
        assert bar.value == 'muramidase[mh] AND "Muramidase"[majr]'
