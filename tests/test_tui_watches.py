"""The Watches screen, driven with Pilot: its key opens the list with unread counts,
opening a watch lists its new hits, reading one marks it read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.index.lexical.shards import open_lexical
from medsearch.paths import Paths
from medsearch.store import Store
from medsearch.tui.app import MedsearchApp
from medsearch.tui.screens.watches import WatchesScreen, WatchHitsScreen
from medsearch.watches.book import WatchBook
from medsearch.watches.finder import make_watch
from medsearch.watches.runner import run_watches

SIZE = (120, 40)
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]  # Pilot: seconds each


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    """A home with one watch that an update file brought two new hits."""
    paths = Paths(tmp_path / "home")
    first = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [article_xml(1, "Statin therapy in heart failure", "Old."), article_xml(2, "Gout", "")],
    )
    second = pubmed_file(
        tmp_path / "pubmed26n0002.xml",
        [
            article_xml(10, "Statin withdrawal in heart failure", "Withdrawal raised risk."),
            article_xml(11, "Statin dosing in heart failure", "Dose finding."),
            article_xml(12, "Aspirin and the liver", "Not watched."),
        ],
    )
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([first])
    with (
        Store(paths.store, readonly=True) as store,
        open_lexical(paths.lexical_index, create=False) as lexical,
        WatchBook(paths.watches_file) as book,
    ):
        book.add(make_watch("hf", '"heart failure"[ti]', store=store, lexical=lexical))
        book.add(make_watch("gout", "gout[ti]", store=store, lexical=lexical))
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([second])
    run_watches(paths)
    return paths


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def cells(table: DataTable[Any]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_watches_key_lists_watches_and_reading_a_hit_marks_it_read(
    paths: Paths,
) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f6")
        await settle(app, pilot)
        assert isinstance(app.screen, WatchesScreen)
        listed = cells(app.screen.query_one(DataTable))
        assert [row[:3] for row in listed] == [["gout", "0", "0"], ["hf", "2", "2"]]
        await pilot.press("down", "enter")  # open "hf"
        await settle(app, pilot)
        assert isinstance(app.screen, WatchHitsScreen)
        hits = cells(app.screen.query_one(DataTable))
        assert [(r[0], r[1]) for r in hits] == [("new", "11"), ("new", "10")]
        await pilot.press("down", "enter")  # read 10
        await settle(app, pilot)
        shown = str(app.screen.query_one("#watch-abstract", Static).content)
        assert "Withdrawal raised risk." in shown
        assert [r[0] for r in cells(app.screen.query_one(DataTable))] == ["new", ""]
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, WatchesScreen)
        assert cells(app.screen.query_one(DataTable))[1][:3] == ["hf", "1", "2"]
    with WatchBook(paths.watches_file) as book:
        assert [h.pmid for h in book.hits("hf", unread=True)] == [11]
