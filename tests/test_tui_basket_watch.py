"""Watching the TUI basket: its key asks for a name (a default one offered) and saves the
marked articles as a reference-list watch, as `medsearch check PMIDFILE --watch NAME`
does; a retraction a later update brings shows on the Watches screen with its notice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
from medsearch.tui.app import MedsearchApp
from medsearch.tui.basket import default_watch_name
from medsearch.tui.screens.dialogs import WatchNameScreen
from medsearch.tui.screens.watches import WatchHitsScreen
from medsearch.tui.widgets.search_bar import SearchBar
from medsearch.watches.book import WatchBook
from medsearch.watches.runner import run_watches

SIZE = (120, 40)
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]  # Pilot: seconds each


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


def cells(table: DataTable[Any]) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


@pytest.mark.thorough  # two ingests and two app runs: ~3 s
async def test_the_basket_key_watches_the_marked_articles_for_retractions(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path / "home")
    articles = [
        article_xml(1, "Statins after stroke", "Statins lowered recurrence."),
        article_xml(2, "Statins in the elderly", "Statins and falls."),
        article_xml(3, "Gout flares", "Winter."),
    ]
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", articles)])
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        bar.focus()
        bar.value = "statins"
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("space", "down", "space")
        assert sorted(app.session.basket) == [1, 2]
        await pilot.press("f8")
        await pilot.pause()
        assert isinstance(app.screen, WatchNameScreen)
        name_input = app.screen.query_one("#watch-name", Input)
        assert name_input.value == default_watch_name()
        name_input.value = "my-review"
        await pilot.press("enter")
        await settle(app, pilot)
        assert any("watching 2 references" in n.message for n in app._notifications)
    with WatchBook(paths.watches_file) as book:
        assert book.get("my-review").kind == "references"
        assert sorted(book.references("my-review")) == [1, 2]

    notice = article_xml(
        100, "Retraction: Statins after stroke", pub_types=("Retraction of Publication",)
    )
    notice = notice.replace(
        "<MeshHeadingList>",
        '<CommentsCorrectionsList><CommentsCorrections RefType="RetractionOf">'
        '<RefSource>x</RefSource><PMID Version="1">1</PMID></CommentsCorrections>'
        "</CommentsCorrectionsList><MeshHeadingList>",
    )
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "b.xml", [notice])])
    (news,) = run_watches(paths).news
    assert [(h.pmid, h.change, h.notice) for h in news.hits] == [(1, "retracted", 100)]

    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f6")
        await settle(app, pilot)
        assert cells(app.screen.query_one(DataTable))[0][:4] == [
            "my-review",
            "1",
            "1",
            "references",
        ]
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, WatchHitsScreen)
        (row,) = cells(app.screen.query_one(DataTable))
        assert row[1] == "1" and row[2].startswith("RETRACTED (notice PMID 100)  Statins after")


async def test_the_basket_key_with_an_empty_basket_says_what_to_do(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout", "")])])
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f8")
        await pilot.pause()
        assert any("basket is empty" in n.message for n in app._notifications)
