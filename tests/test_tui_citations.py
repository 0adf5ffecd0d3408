"""Walking the citation graph in the terminal UI: the detail pane counts references and
citing articles, each opens as the list (keyboard-walked, marked like results), and
backspace goes back along the trail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static

from benchmarks.synth import pubmed_file
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
from medsearch.tui.app import MedsearchApp
from medsearch.tui.widgets.bars import ModeBar
from medsearch.tui.widgets.detail import DetailPane
from medsearch.tui.widgets.results import ResultsList
from medsearch.tui.widgets.search_bar import SearchBar
from tests.test_citations_cli import GRAPH, YEARS, cited_xml

SIZE = (120, 40)
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]  # Pilot: seconds each


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
    return paths


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def listed(app: MedsearchApp) -> list[int]:
    return [h.pmid for h in app.screen.query_one(ResultsList).hits]


async def highlight(app: MedsearchApp, pilot: Pilot[Any], pmid: int) -> None:
    results = app.screen.query_one(ResultsList)
    results.focus()
    results.highlighted = listed(app).index(pmid)
    await pilot.pause()


async def test_references_and_cited_by_are_walked_and_back_returns(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        bar.focus()
        bar.value = "heart failure"
        await pilot.press("enter")
        await settle(app, pilot)
        searched = listed(app)
        await highlight(app, pilot, 1)
        detail = str(app.screen.query_one(DetailPane).query_one("#detail-body", Static).content)
        assert "References (3)" in detail and "Cited by (2)" in detail

        await pilot.press("ctrl+e")
        await settle(app, pilot)
        assert listed(app) == [10, 11, 999]
        assert "references of PMID 1" in app.screen.query_one(ModeBar).summary
        await pilot.press("space")  # marks 10, the first reference, like a result
        assert 10 in app.screen.session.basket  # type: ignore[attr-defined]

        await pilot.press("ctrl+g")  # who cites 10
        await settle(app, pilot)
        assert listed(app) == [3, 2, 1]
        await pilot.press("down", "enter")  # open 2 in the detail pane
        assert app.screen.query_one(DetailPane).article.pmid == 2  # type: ignore[union-attr]

        app.screen.query_one(ResultsList).focus()
        await pilot.press("backspace")
        await settle(app, pilot)
        assert listed(app) == [10, 11, 999]
        await pilot.press("backspace")
        await settle(app, pilot)
        assert listed(app) == searched


async def test_a_reference_outside_the_corpus_shows_what_is_known_not_empty_fields() -> None:
    """Its row says it is not stored here, with its PMID and DOI, never
    "(no authors) · · n.d.": there is no record to take those from."""
    from rich.console import Console

    from medsearch.records import Hit
    from medsearch.tui.render import hit_prompt

    outside = Hit(rank=3, pmid=999, score=3.0, in_corpus=False, doi="10.9/ref.999")
    console = Console(width=100, record=True)
    console.print(hit_prompt(outside, marked=False, terms=frozenset()))
    text = console.export_text()
    assert "(not in this corpus)" in text
    assert "not stored here · PMID 999" in text and "doi:10.9/ref.999" in text
    cited = Hit(rank=3, pmid=999, score=3.0, in_corpus=False, citation="Arthritis Rheum. 1999")
    console.print(hit_prompt(cited, marked=False, terms=frozenset()))
    text = console.export_text()
    assert "Arthritis Rheum. 1999" in text and "not stored here · PMID 999" in text
    assert "(no authors)" not in text and "n.d." not in text
