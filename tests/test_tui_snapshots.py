"""SVG snapshots of the main screens at a fixed terminal size (pytest-textual-snapshot).

Regenerate after an intended change with ``pytest tests/test_tui_snapshots.py
--snapshot-update`` and look at the SVGs before committing them. Timings are switched
off and the cursor does not blink, so the pictures are the same on every run.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
from medsearch.tui.app import MedsearchApp
from medsearch.tui.widgets.search_bar import SearchBar

SIZE = (120, 36)
SnapCompare = Callable[..., bool]

ARTICLES = (
    (31, "Interleukin-6 blockade with tocilizumab in severe COVID-19", 2021),
    (32, "Interleukin-6 and C-reactive protein as markers of sepsis", 2017),
    (33, "Cytokine storm syndromes: a review", 2020),
    (34, "Metformin and cancer incidence in type 2 diabetes", 2018),
)


@pytest.fixture(scope="module")
def snapshot_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("snap-corpus")
    (root / "xml").mkdir()
    xml = [
        article_xml(
            pmid,
            title,
            f"{title}. Serum interleukin-6 was measured in 120 patients; levels predicted outcome.",
            year=year,
        )
        for pmid, title, year in ARTICLES
    ]
    pubmed_file(root / "xml" / "snap.xml", xml)
    with Ingestor(Paths(root / "home"), jobs=0) as ingestor:
        ingestor.run([root / "xml"])
    return root / "home"


def steady(app: MedsearchApp) -> None:
    for widget in app.query(Input):
        widget.cursor_blink = False
    for area in app.query(TextArea):
        area.cursor_blink = False


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_welcome_screen(snap_compare: SnapCompare) -> None:
    app = MedsearchApp(Paths(Path("/nonexistent/medsearch-home")), show_timings=False)

    async def before(pilot: Pilot[Any]) -> None:
        await settle(app, pilot)
        steady(app)

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_results_and_detail(
    snap_compare: SnapCompare, snapshot_corpus: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    shutil.copytree(snapshot_corpus, home)
    app = MedsearchApp(Paths(home), show_timings=False)

    async def before(pilot: Pilot[Any]) -> None:
        await settle(app, pilot)
        steady(app)
        app.screen.query_one(SearchBar).value = "interleukin-6"
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("space")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_help_screen(snap_compare: SnapCompare, tmp_path: Path) -> None:
    app = MedsearchApp(Paths(Path("/nonexistent/medsearch-home")), show_timings=False)

    async def before(pilot: Pilot[Any]) -> None:
        await settle(app, pilot)
        steady(app)
        await pilot.press("f1")
        await pilot.pause()

    assert snap_compare(app, terminal_size=SIZE, run_before=before)
