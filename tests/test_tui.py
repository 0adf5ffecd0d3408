"""The terminal UI, driven with textual's Pilot over a real (lexical-only) corpus.

Each test is one flow a researcher goes through: search, read, mark and export, cite,
recall history, meet the welcome screen, make a typo. The corpus is built with the real
ingest pipeline once per module and copied per test (history is written into it).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, Select, Static, TextArea

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.history.store import open_history
from medsearch.paths import Paths
from medsearch.tui.app import MedsearchApp
from medsearch.tui.history import History
from medsearch.tui.keys import SPECS, parse_keymap
from medsearch.tui.messages import ResultsRendered
from medsearch.tui.screens.help import HelpScreen
from medsearch.tui.screens.welcome import COMMANDS, WelcomeScreen
from medsearch.tui.widgets.bars import StatusBar
from medsearch.tui.widgets.detail import DetailPane
from medsearch.tui.widgets.results import Heading, ResultsList
from medsearch.tui.widgets.search_bar import SearchBar

SIZE = (120, 40)
# The app driven through Pilot, a second or more each: whole paths, so they run with the
# thorough tests (CI runs them; a plain `pytest` stays within its CPU budget).
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


RICH_ARTICLE = """
<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM">
    <PMID Version="1">100</PMID>
    <Article PubModel="Print">
      <Journal>
        <JournalIssue CitedMedium="Print"><Volume>12</Volume><Issue>3</Issue>
          <PubDate><Year>2021</Year><Month>Jun</Month></PubDate></JournalIssue>
        <Title>Journal of Immunology Research</Title>
        <ISOAbbreviation>J Immunol Res</ISOAbbreviation>
      </Journal>
      <ArticleTitle>Interleukin-6 blockade in cytokine storm of severe COVID-19</ArticleTitle>
      <Pagination><MedlinePgn>101-9</MedlinePgn></Pagination>
      <Abstract>
        <AbstractText Label="BACKGROUND">Cytokine storm drives respiratory failure in COVID-19.
          Interleukin-6 is a central mediator of the storm.</AbstractText>
        <AbstractText Label="RESULTS">Tocilizumab reduced mortality in patients with high
          interleukin-6 levels.</AbstractText>
      </Abstract>
      <AuthorList>
        <Author><LastName>Rossi</LastName><ForeName>Anna</ForeName><Initials>A</Initials></Author>
        <Author><LastName>Chen</LastName><ForeName>Wei</ForeName><Initials>W</Initials></Author>
      </AuthorList>
      <Language>eng</Language>
      <PublicationTypeList><PublicationType>Randomized Controlled Trial</PublicationType>
      </PublicationTypeList>
    </Article>
    <MeshHeadingList>
      <MeshHeading><DescriptorName UI="D053583" MajorTopicYN="Y">Interleukin-6</DescriptorName>
      </MeshHeading>
      <MeshHeading><DescriptorName UI="D000086382" MajorTopicYN="N">COVID-19</DescriptorName>
      </MeshHeading>
    </MeshHeadingList>
  </MedlineCitation>
  <PubmedData><ArticleIdList><ArticleId IdType="pubmed">100</ArticleId>
    <ArticleId IdType="doi">10.5555/jir.100</ArticleId>
    <ArticleId IdType="pmc">PMC7000100</ArticleId></ArticleIdList></PubmedData>
</PubmedArticle>"""

OTHER_ARTICLES = (
    (
        101,
        "Interleukin-6 signalling in rheumatoid arthritis",
        "IL-6 drives synovial inflammation.",
        2015,
    ),
    (
        102,
        "Metformin and cancer incidence in type 2 diabetes",
        "Metformin users had fewer cancers.",
        2018,
    ),
    (
        103,
        "Cytokine profiles after influenza vaccination",
        "Cytokine responses were measured.",
        2010,
    ),
    (
        104,
        "Statins for primary prevention of stroke",
        "Statins reduced stroke in older adults.",
        2019,
    ),
    (105, "Sleep duration and cognitive decline", "Short sleep predicted cognitive decline.", 2020),
)


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tui-corpus")
    xml = root / "xml"
    xml.mkdir()
    others = [article_xml(p, t, a, year=y) for p, t, a, y in OTHER_ARTICLES]
    pubmed_file(xml / "corpus.xml", [RICH_ARTICLE, *others])
    home = root / "home"
    with Ingestor(Paths(home), jobs=0) as ingestor:
        ingestor.run([xml])
    return home


@pytest.fixture
def paths(corpus_home: Path, tmp_path: Path) -> Paths:
    """A private copy of the corpus home (the app writes its history there)."""
    home = tmp_path / "corpus"
    shutil.copytree(corpus_home, home)
    return Paths(home)


def notifications(app: MedsearchApp) -> list[tuple[str, str]]:
    return [(n.message, n.severity) for n in app._notifications]


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    """Wait for every worker, then for the messages they posted to be handled."""
    await app.workers.wait_for_complete()
    await pilot.pause()
    await app.workers.wait_for_complete()
    await pilot.pause()


async def search(app: MedsearchApp, pilot: Pilot[Any], query: str) -> ResultsList:
    await settle(app, pilot)
    bar = app.screen.query_one(SearchBar)
    bar.focus()
    bar.value = query
    await pilot.press("enter")
    await settle(app, pilot)
    return app.screen.query_one(ResultsList)


async def test_query_then_enter_shows_ranked_results_lexical_only(paths: Paths) -> None:
    rendered: list[ResultsRendered] = []
    app = MedsearchApp(paths)

    def hook(message: object) -> None:
        if isinstance(message, ResultsRendered):
            rendered.append(message)

    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        assert app.screen.focused is app.screen.query_one(SearchBar)
        await pilot.press(*"interleukin")
        await pilot.press("enter")
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
        assert [h.pmid for h in results.hits][:2] == [100, 101] or {
            h.pmid for h in results.hits
        } == {100, 101}
        assert rendered and rendered[-1].count == len(results.hits) == 2
        assert all(h.sources == ("lexical",) for h in results.hits)
        status = app.screen.query_one(StatusBar)
        assert status.corpus.startswith("6 articles") and "lexical only" in status.corpus
        focused = app.screen.focused
        assert isinstance(focused, ResultsList)  # ready for arrows, space, enter


async def test_detail_pane_shows_the_highlighted_article(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        results = await search(app, pilot, "tocilizumab")
        assert [h.pmid for h in results.hits] == [100]
        await pilot.press("enter")
        detail = app.screen.query_one(DetailPane)
        assert app.screen.focused is detail
        assert detail.article is not None and detail.article.pmid == 100
        text = str(detail.query_one("#detail-body", Static).content)
        for expected in (
            "Interleukin-6 blockade",
            "Rossi A, Chen W",
            "J Immunol Res. 2021 Jun;12(3):101-9.",
            "BACKGROUND: Cytokine storm",
            "MeSH: Interleukin-6*; COVID-19",
            "Randomized Controlled Trial",
            "https://doi.org/10.5555/jir.100",
            "https://www.ncbi.nlm.nih.gov/pmc/articles/PMC7000100/",
        ):
            assert expected in text


async def test_copy_citation_and_open_pubmed(paths: Paths, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tocilizumab")
        await pilot.press("ctrl+y")
        assert app.clipboard.startswith("Rossi A, Chen W. Interleukin-6 blockade")
        assert app.clipboard.endswith("doi:10.5555/jir.100. PMID: 100.")
        await pilot.press("ctrl+o")
        assert opened == ["https://pubmed.ncbi.nlm.nih.gov/100/"]
        assert notifications(app)[-1] == (
            "opened https://pubmed.ncbi.nlm.nih.gov/100/",
            "information",
        )


async def test_mark_and_export_bibtex(paths: Paths, tmp_path: Path) -> None:
    target = tmp_path / "refs.bib"
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "interleukin")
        await pilot.press("space", "down", "space")
        assert list(app.session.basket) == [100, 101]
        assert app.screen.query_one(StatusBar).basket == 2
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.screen.query_one("#path", Input).value = str(target)
        await pilot.press("enter")
        await pilot.pause()
    text = target.read_text(encoding="utf-8")
    assert text.count("@article{") == 2
    assert "Interleukin-6 blockade" in text and "rheumatoid arthritis" in text


async def test_export_to_ris_follows_the_chosen_format(paths: Paths, tmp_path: Path) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "metformin")
        await pilot.press("space", "ctrl+s")
        await pilot.pause()
        path_input = app.screen.query_one("#path", Input)
        path_input.value = str(tmp_path / "basket.bib")
        app.screen.query_one("#format", Select).value = "ris"
        await pilot.pause()
        assert path_input.value == str(tmp_path / "basket.ris")
        await pilot.press("enter")
        await pilot.pause()
    assert "TI  - Metformin and cancer incidence" in (tmp_path / "basket.ris").read_text()


async def test_export_with_an_empty_basket_says_what_to_do(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+s")
        assert any("basket is empty" in m for m, _ in notifications(app))


async def test_syntax_error_is_a_notification_not_a_crash(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "(IL-6 AND")
        errors = [m for m, severity in notifications(app) if severity == "error"]
        assert errors, notifications(app)
        results = await search(app, pilot, "metformin")  # and the app carries on
        assert [h.pmid for h in results.hits] == [102]


async def test_similar_without_vectors_explains_instead_of_crashing(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "metformin")
        await pilot.press("ctrl+n")
        await settle(app, pilot)
        errors = [m for m, severity in notifications(app) if severity == "error"]
        assert any("vectors" in m for m in errors), errors
        assert app.is_running


async def test_filters_restrict_the_year_range(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        results = await search(app, pilot, "interleukin OR cytokine")
        assert len(results.hits) == 3
        await pilot.press("ctrl+f")
        await pilot.pause()
        app.screen.query_one("#year-from", Input).value = "2014"
        await pilot.press("enter")
        await settle(app, pilot)
        assert {h.pmid for h in app.screen.query_one(ResultsList).hits} == {100, 101}


async def test_a_pasted_paragraph_is_searched_whole(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        bar = app.screen.query_one(SearchBar)
        bar.focus()
        await pilot.press(*"sleep ")
        bar.post_message(events.Paste("Short sleep predicted\ncognitive decline\r\n in adults.\n"))
        await pilot.pause()
        assert bar.value == "sleep Short sleep predicted cognitive decline in adults."
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen.query_one(ResultsList).hits[0].pmid == 105


async def test_searches_are_recorded_in_the_history_and_recalled_with_up(paths: Paths) -> None:
    from medsearch.history.store import open_history

    paths.history_file.write_text("an old query\n", encoding="utf-8")  # the former recall file
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "metformin")
        await search(app, pilot, "statins[ti]")
    store = open_history(paths, write=False)
    assert store is not None
    with store:
        lines = store.entries(sets=True)
    assert not paths.history_file.exists()  # imported once, then gone
    assert [(e.number, e.typed, e.source) for e in lines] == [
        (1, "an old query", "imported"),
        (2, "metformin", "tui"),
        (3, "statins[ti]", "tui"),
    ]
    assert (lines[2].query, lines[2].total, lines[2].counted) == ("statins[ti]", 1, "set")
    assert lines[2].pmids is not None and lines[2].pmids.tolist() == [104]
    assert lines[2].snapshot is not None and lines[2].snapshot.articles == 6

    again = MedsearchApp(paths)
    async with again.run_test(size=SIZE) as pilot:
        bar = again.screen.query_one(SearchBar)
        await pilot.press("up")
        assert bar.value == "statins[ti]"
        await pilot.press("up")
        assert bar.value == "metformin"
        await pilot.press("up")
        assert bar.value == "an old query"
        await pilot.press("down", "down", "down")
        assert bar.value == ""
        results = await search(again, pilot, "#2 OR #3")  # earlier searches, combined
        assert {h.pmid for h in results.hits} == {102, 104}
    store = open_history(paths, write=False)
    assert store is not None
    with store:
        combined = store.entries()[-1]
    assert (combined.typed, combined.query) == ("#2 OR #3", "metformin OR statins[ti]")


def test_history_moves_repeats_to_the_end_and_keeps_the_draft() -> None:
    history = History([])
    for query in ("a", "b", "a"):
        history.add(query)
    assert history.entries == ["b", "a"]
    assert history.older("draft") == "a"
    assert history.older("") == "b"
    assert history.older("") is None
    assert history.newer() == "a"
    assert history.newer() == "draft"


async def test_cite_mode_suggests_references_per_citing_sentence(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f5")
        editor = app.screen.query_one(TextArea)
        assert app.screen.focused is editor
        editor.insert(
            "Tocilizumab lowers mortality in COVID-19 [3]. "
            "Metformin users have fewer cancers (Smith et al., 2019)."
        )
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        rows = app.screen.query_one(ResultsList).rows
        headings = [r for r in rows if isinstance(r, Heading)]
        assert len(headings) == 2
        assert "[3]" in headings[0].text.plain
        hits = app.screen.query_one(ResultsList).hits
        assert hits[0].pmid == 100 and hits[0].evidence
        assert 102 in {h.pmid for h in hits}
    history = open_history(paths, write=False)  # recorded, as on the command line
    assert history is not None
    with history:
        (line,) = [e for e in history.entries(sets=True) if e.command == "cite"]
    assert line.source == "tui" and line.typed.startswith("Tocilizumab lowers mortality")
    assert line.pmids is not None and set(line.pmids.tolist()) == {h.pmid for h in hits}


async def test_empty_home_shows_the_welcome_screen(tmp_path: Path) -> None:
    app = MedsearchApp(Paths(tmp_path / "empty"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, WelcomeScreen)
        text = str(app.screen.query_one("#welcome-text", Static).content)
        for command, _ in COMMANDS:
            assert command in text
        assert not [m for m, severity in notifications(app) if severity == "error"]
        await pilot.press("c")
        assert app.clipboard == "medsearch ingest --download baseline --limit 1"


async def test_welcome_retry_finds_a_corpus_ingested_meanwhile(
    corpus_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "later"
    app = MedsearchApp(Paths(home))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, WelcomeScreen)
        shutil.copytree(corpus_home, home, dirs_exist_ok=True)
        await pilot.press("r")
        await settle(app, pilot)
        assert not isinstance(app.screen, WelcomeScreen)
        assert app.screen.query_one(StatusBar).corpus.startswith("6 articles")


async def test_keys_remapped_in_config_apply_and_show_in_help(paths: Paths) -> None:
    paths.config_file.write_text('[keys]\n"article.mark" = "m"\n"no.such" = "x"\n')
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "metformin")
        await pilot.press("m")
        assert list(app.session.basket) == [102]
        assert any("no.such" in m for m, _ in notifications(app))
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


def test_every_binding_has_a_unique_id_and_a_description() -> None:
    ids = [spec.id for spec in SPECS]
    assert len(ids) == len(set(ids))
    assert all(spec.description for spec in SPECS)
    keymap = parse_keymap({"article.mark": "m", "main.export": 3})
    assert dict(keymap.keys) == {"article.mark": "m"}
    assert len(keymap.problems) == 1


async def test_marking_opening_citing_and_exporting_reach_the_signals_log(
    paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the reader does with a result list teaches the Delta reranker (`rerank train`)."""
    from medsearch.rerank import marks

    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: True)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "interleukin")
        await pilot.press("space")  # mark 100
        await pilot.press("down", "ctrl+o")  # open 101 on PubMed
        await pilot.press("ctrl+y")  # copy 101's citation
        await pilot.press("ctrl+s")
        await pilot.pause()
        app.screen.query_one("#path", Input).value = str(tmp_path / "refs.bib")
        await pilot.press("enter")
        await pilot.pause()
    logged = [(m.pmid, m.signal, m.query) for m in marks.read(paths.signals_file)]
    assert logged == [
        (100, "marked", "interleukin"),
        (101, "opened", "interleukin"),
        (101, "cited", "interleukin"),
        (100, "exported", "interleukin"),
    ]
    assert marks.by_query(marks.read(paths.signals_file)) == {
        "interleukin": {100: 80.0, 101: 100.0}
    }


async def test_a_query_submitted_while_the_corpus_opens_runs_once_it_is_open(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Type-ahead: the query and its Enter typed at start-up are kept, shown as waiting,
    and searched as soon as the corpus is open."""
    import threading

    from medsearch.retrieval import searcher as searcher_module

    gate = threading.Event()
    real_open = searcher_module.open_searcher

    def open_when_let(*args: Any, **kwargs: Any) -> Any:
        gate.wait(timeout=30)  # the corpus opens only once the test has typed its query
        return real_open(*args, **kwargs)

    monkeypatch.setattr(searcher_module, "open_searcher", open_when_let)
    rendered: list[ResultsRendered] = []

    def hook(message: object) -> None:
        if isinstance(message, ResultsRendered):
            rendered.append(message)

    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        try:
            await pilot.press(*"metformin", "enter")
            status = app.screen.query_one(StatusBar)
            assert status.corpus == "opening corpus…"
            assert "waiting for the corpus" in status.activity
            assert app.screen.query_one(SearchBar).value == "metformin"
            assert not app.screen.query_one(ResultsList).hits
        finally:
            gate.set()
        await settle(app, pilot)
        assert [h.pmid for h in app.screen.query_one(ResultsList).hits] == [102]
        assert len({m.ticket for m in rendered}) == 1  # searched once
        assert status.activity == ""
        assert not [m for m, severity in notifications(app) if severity == "error"]


async def test_open_without_a_browser_shows_the_url_and_copies_it(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``webbrowser.open`` returns False when no browser could be started (a server over
    ssh): the reader still gets the link, on screen and on the clipboard."""
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: False)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tocilizumab")
        await pilot.press("ctrl+o")
        pubmed = "https://pubmed.ncbi.nlm.nih.gov/100/"
        assert app.clipboard == pubmed
        message, severity = notifications(app)[-1]
        assert pubmed in message and "copied" in message and severity == "warning"
        await pilot.press("ctrl+d")
        doi = "https://doi.org/10.5555/jir.100"
        assert app.clipboard == doi
        assert doi in notifications(app)[-1][0]


async def test_the_basket_exports_to_the_data_homes_exports_folder_by_default(
    paths: Paths,
) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "metformin")
        await pilot.press("space", "ctrl+s")
        await pilot.pause()
        default = Path(app.screen.query_one("#path", Input).value)
        assert default.parent == paths.home / "exports" and default.suffix == ".bib"
        await pilot.press("enter")
        await pilot.pause()
        written = list((paths.home / "exports").iterdir())
        assert written == [default]
        assert "Metformin and cancer incidence" in default.read_text(encoding="utf-8")
        message = notifications(app)[-1][0]
        assert str(default) in message and default.is_absolute()


async def test_typing_a_new_query_over_the_results_fires_no_action(paths: Paths) -> None:
    """After a search the list has focus; a new query typed straight away goes into the
    search bar: no mode switch, no mark, no signal, no dialog."""
    from medsearch.rerank import marks

    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        results = await search(app, pilot, "interleukin")
        assert app.screen.focused is results
        query = "brca1[ti] AND review[pt]"
        await pilot.press(*query)
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        assert bar.value == query and app.screen.focused is bar
        assert app.screen is app.main and app.main.mode == "search"
        assert not app.session.basket
        assert list(marks.read(paths.signals_file)) == []
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.session.history.entries[-1] == query


async def test_typing_in_the_detail_pane_starts_a_new_query(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "tocilizumab")
        await pilot.press("enter")  # read the article
        assert isinstance(app.screen.focused, DetailPane)
        await pilot.press(*"statins")
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        assert bar.value == "statins" and app.screen.focused is bar
        assert app.main.mode == "search"


async def test_a_burst_of_keys_over_the_results_arrives_whole_and_in_order(paths: Paths) -> None:
    """A fast typist's keys reach the app before the focus has moved to the bar: every
    one of them still lands in the query, in order (none is lost, none acts)."""
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await search(app, pilot, "interleukin")
        query = "statins OR cytokine"
        for char in query:  # queued at once, as a terminal delivers a burst
            key = "space" if char == " " else char
            app.post_message(events.Key(key, char))
        await settle(app, pilot)
        assert app.screen.query_one(SearchBar).value == query
        assert app.main.mode == "search" and not app.session.basket


async def test_up_and_down_while_reading_step_through_the_results_and_space_marks_it(
    paths: Paths,
) -> None:
    """After Enter opens an article, down shows the next result (not the next line of
    this abstract), and space marks the article now shown: the one the reader meant."""
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        results = await search(app, pilot, "interleukin")
        first, second = (h.pmid for h in results.hits[:2])
        await pilot.press("enter")
        detail = app.screen.query_one(DetailPane)
        assert app.screen.focused is detail and detail.article is not None
        assert detail.article.pmid == first
        await pilot.press("down")
        await pilot.pause()
        assert app.screen.focused is detail and detail.article.pmid == second
        await pilot.press("space")
        await pilot.pause()
        assert list(app.session.basket) == [second]
        await pilot.press("up")
        await pilot.pause()
        assert detail.article.pmid == first and list(app.session.basket) == [second]


async def test_keys_typed_before_the_screen_takes_them_are_kept_and_run_in_order(
    paths: Paths,
) -> None:
    """A query typed while the app starts (before the search bar has focus) is held,
    then typed into the bar in order; its Enter, which the terminal turned into a line
    feed before the app took it over, runs it."""
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        bar = app.screen.query_one(SearchBar)
        assert app.early_keys is None  # released once the bar had focus
        app.early_keys = []  # as while the app starts: nothing has focus yet
        app.screen.set_focus(None)
        await pilot.press(*"gout", "ctrl+j")
        assert bar.value == "" and [k.key for k in app.early_keys] == [*"gout", "ctrl+j"]
        bar.focus()  # as the main screen does once mounted, then hands the keys on
        await pilot.pause()
        await app.keys_ready()
        await settle(app, pilot)
        assert bar.value == "gout"
        assert app.main.last is not None and app.main.last.text == "gout"
