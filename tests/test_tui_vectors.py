"""The terminal UI over a corpus WITH vectors and a cross-encoder (tiny real BERT models).

The lexical-only flows live in ``test_tui.py``; here the dense side is live, so each
test is a flow that only exists with vectors: hybrid rows that say where they came
from, the background rerank that reorders the list in place (and is cancelled by a new
query), similar articles, similar sentences, cite mode, and a status bar that names the
profile, the device and the index kind.

The tiny models' weights are random: their rankings mean nothing but are deterministic,
so every expectation is computed with the same ``Searcher`` the app calls, never
hard-coded. Where timing matters (the rerank indicator, cancellation), a gate held by
the test pauses the real cross-encoder, so nothing depends on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Input, Label, OptionList, Select, TextArea
from tiny_models import build_tiny_models, ingest_and_encode, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.layout import read_manifest
from medsearch.models.cross import CrossEncoder
from medsearch.paths import Paths
from medsearch.records import Hit
from medsearch.retrieval import neighbours
from medsearch.retrieval.cite import suggest
from medsearch.retrieval.searcher import Searcher, open_searcher
from medsearch.tui.app import MedsearchApp
from medsearch.tui.jobs import CITE_K, RESULTS_K
from medsearch.tui.messages import RerankDone, ResultsRendered
from medsearch.tui.screens.dialogs import SentencePicker
from medsearch.tui.widgets.bars import ModeBar, StatusBar
from medsearch.tui.widgets.detail import DetailPane
from medsearch.tui.widgets.results import Heading, ResultsList
from medsearch.tui.widgets.search_bar import SearchBar

SIZE = (120, 40)
# The app driven through Pilot, a second or more each: whole paths, so they run with the
# thorough tests (CI runs them; a plain `pytest` stays within its CPU budget).
pytestmark = [pytest.mark.anyio, pytest.mark.thorough]

# Sixteen one-topic articles; two or three share words so lexical queries match a few.
TOPICS = (
    (
        "Interleukin-6 drives the cytokine storm in COVID-19",
        "IL-6 levels rise early. Tocilizumab blocks IL-6 signalling in severe disease.",
    ),
    (
        "Tocilizumab and mortality in critically ill COVID-19 patients",
        "Mortality fell with tocilizumab. The effect was largest with high interleukin-6 levels.",
    ),
    (
        "Metformin and the risk of type 2 diabetes",
        "Metformin lowers glucose. It is first-line therapy for most adults.",
    ),
    (
        "Insulin resistance in obesity",
        "Obesity raises insulin resistance. Weight loss restores insulin sensitivity.",
    ),
    (
        "BRCA1 mutations in hereditary breast cancer",
        "BRCA1 carriers have high risk. Screening from age thirty helps.",
    ),
    (
        "Statins lower LDL cholesterol in hypertension trials",
        "Statins reduce events. LDL fell by a third in treated patients.",
    ),
    (
        "CRISPR screens of T-cell exhaustion",
        "CRISPR finds regulators of exhaustion. T cells recover function after knockout.",
    ),
    (
        "Alpha-synuclein aggregation in Parkinson disease",
        "Aggregates spread between neurons. Neurons die in the substantia nigra.",
    ),
    (
        "Sepsis mortality and early antibiotics",
        "Early antibiotics save lives. Each hour of delay raises mortality.",
    ),
    (
        "Amyloid beta in Alzheimer disease",
        "Amyloid plaques accumulate for decades. Antibodies clear plaques from the brain.",
    ),
    (
        "Vaccination against influenza in older adults",
        "Vaccine responses wane with age. High-dose vaccines improve antibody levels.",
    ),
    (
        "Kidney outcomes with SGLT2 inhibitors",
        "SGLT2 inhibitors slow kidney decline. The benefit held without diabetes.",
    ),
    (
        "EGFR mutations and lung cancer therapy",
        "EGFR inhibitors extend survival. Resistance mutations emerge within a year.",
    ),
    (
        "Stroke prevention in atrial fibrillation",
        "Anticoagulants prevent stroke. Bleeding risk must be weighed.",
    ),
    (
        "Gut microbiome and inflammatory bowel disease",
        "The microbiome shifts in disease. Inflammation follows the loss of diversity.",
    ),
    (
        "Sleep duration and cognitive decline",
        "Short sleep predicted cognitive decline. The association held after adjustment.",
    ),
)
FIRST_PMID = 2000
LATE = (
    (2100, "Mortality after hip fracture in the elderly", "One-year mortality was high."),
    (2101, "Antibiotic stewardship and sepsis outcomes", "Stewardship did not raise mortality."),
)
ENCODED = len(TOPICS)
ARTICLES = ENCODED + len(LATE)
PARAGRAPH = (
    "Tocilizumab lowered mortality in severe COVID-19 [1]. "
    "Metformin is the first-line therapy for type 2 diabetes (Smith et al., 2019)."
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def vector_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tui-vectors")
    models = build_tiny_models(root / "models")
    (root / "xml").mkdir()
    articles = [
        article_xml(FIRST_PMID + i, title, abstract, year=2000 + i)
        for i, (title, abstract) in enumerate(TOPICS)
    ]
    pubmed_file(root / "xml" / "pubmed26n0001.xml", articles)
    paths = Paths(root / "home")
    write_tiny_config(paths, models, search='device = "cpu"')
    ingest_and_encode(paths, [root / "xml" / "pubmed26n0001.xml"])
    # The next update file is ingested but not encoded yet: only the lexical side has it.
    late = [article_xml(pmid, title, abstract, year=2024) for pmid, title, abstract in LATE]
    pubmed_file(root / "xml" / "pubmed26n0002.xml", late)
    with Ingestor(paths, jobs=0) as ing:
        assert ing.run([root / "xml" / "pubmed26n0002.xml"]).ok
    return paths.home


@pytest.fixture
def paths(vector_home: Path, tmp_path: Path) -> Paths:
    """A private copy of the home (the app writes its history there)."""
    home = tmp_path / "home"
    shutil.copytree(vector_home, home)
    return Paths(home)


@pytest.fixture
def oracle(paths: Paths) -> Iterator[Searcher]:
    """The searcher the expectations come from: the same one the app opens."""
    searcher = open_searcher(paths, device="cpu", load=True)
    yield searcher
    searcher.close()


async def settle(app: MedsearchApp, pilot: Pilot[Any]) -> None:
    """Wait for every worker, then for the messages they posted to be handled."""
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def submit(app: MedsearchApp, pilot: Pilot[Any], text: str) -> None:
    bar = app.screen.query_one(SearchBar)
    bar.focus()
    bar.value = text
    await pilot.press("enter")


def pmids(hits: Sequence[Hit]) -> list[int]:
    return [h.pmid for h in hits]


class GatedCross:
    """The real cross-encoder, held at a gate the test opens: makes 'while it runs' exact."""

    def __init__(self, real: CrossEncoder) -> None:
        self.real = real
        self.entered = threading.Event()
        self.gate = threading.Event()

    def score_pairs(self, query: str, docs: Sequence[tuple[str, str]], **kw: Any) -> np.ndarray:
        self.entered.set()
        self.gate.wait(timeout=30)
        return self.real.score_pairs(query, docs, **kw)

    async def wait_entered(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, 30)
        self.entered.clear()


def gate_cross(app: MedsearchApp) -> GatedCross:
    searcher = app.session.backend._searcher
    assert searcher is not None and searcher.cross is not None
    gated = GatedCross(searcher.cross)
    searcher.cross = gated  # type: ignore[assignment]
    return gated


class Recorder:
    """Collects the app's messages of the given types (the message hook)."""

    def __init__(self, *kinds: type) -> None:
        self.kinds = kinds
        self.seen: list[Any] = []
        self.arrived = asyncio.Event()

    def __call__(self, message: object) -> None:
        if isinstance(message, self.kinds):
            self.seen.append(message)
            self.arrived.set()

    async def next(self, accept: Callable[[Any], bool]) -> Any:
        """The first recorded message ``accept`` takes, waiting for it if needed."""
        while True:
            found = [m for m in self.seen if accept(m)]
            if found:
                return found[0]
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), timeout=30)


async def test_status_bar_names_profile_device_and_index_kind(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        status = app.screen.query_one(StatusBar)
        assert status.corpus.startswith(f"{ARTICLES} articles")
        assert f"{ENCODED} vectors" in status.corpus and "profile tiny" in status.corpus
        assert "lexical only" not in status.corpus
        manifest = read_manifest(paths.vector_dir("articles"))
        assert manifest is not None and manifest.kind == "flat"  # 16 vectors: exact search
        assert status.models == "cpu · flat · rerank on"
        assert status.activity == ""


async def test_hybrid_rows_say_lexical_dense_or_both(paths: Paths, oracle: Searcher) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "mortality")
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
        first = oracle.search("mortality", k=RESULTS_K)
        assert first.mode == "hybrid"
        expected = oracle.rerank(first)
        assert pmids(results.hits) == pmids(expected.hits)
        labels = {h.pmid: h.sources for h in results.hits}
        kinds = {"both" if len(s) == 2 else s[0] for s in labels.values()}
        assert kinds == {"lexical", "dense", "both"}, labels
        assert results.rows == results.hits  # no headings outside cite mode
        rows = {h.pmid: row_text(results, i) for i, h in enumerate(results.hits)}
        words = {h.pmid: h.all_words for h in results.hits}
        for pmid, sources in labels.items():
            label = "both" if len(sources) == 2 else sources[0]
            marker = "" if words[pmid] else " · not all words"  # ranked in beyond the count
            assert rows[pmid].rstrip().endswith(f"· {label}{marker}"), rows[pmid]
        # Only the articles not encoded yet come from the lexical side alone.
        assert {p for p, s in labels.items() if s == ("lexical",)} == {p for p, *_ in LATE}
        summary = app.screen.query_one(ModeBar).summary
        assert f"{first.total} matching · showing {len(results.hits)}" in summary
        assert first.total == sum(words.values())  # every article with the word is shown
        # Nobody moved the highlight: after the rerank it is on the new first row.
        assert results.current is not None and results.current.pmid == expected.hits[0].pmid
        detail = app.screen.query_one(DetailPane).article
        assert detail is not None and detail.pmid == expected.hits[0].pmid


def rendered_row(results: ResultsList, index: int) -> str:
    """A results row as the terminal shows it (plain text)."""
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(results.get_option_at_index(index).prompt)
    return console.export_text()


def row_text(results: ResultsList, index: int) -> str:
    """The meta line of a results row (author · journal · year · PMID · sources)."""
    return next(line for line in rendered_row(results, index).splitlines() if "PMID" in line)


async def test_rerank_reorders_in_place_with_an_indicator_while_it_runs(
    paths: Paths, oracle: Searcher
) -> None:
    seen = Recorder(ResultsRendered, RerankDone)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await settle(app, pilot)
        gated = gate_cross(app)
        try:
            await submit(app, pilot, "mortality")
            shown = await seen.next(lambda m: isinstance(m, ResultsRendered))
            await gated.wait_entered()  # the rerank is inside the cross-encoder now
            results = app.screen.query_one(ResultsList)
            status = app.screen.query_one(StatusBar)
            first = oracle.search("mortality", k=RESULTS_K)
            assert not shown.reranked and shown.count == len(first.hits)
            assert pmids(results.hits) == pmids(first.hits)
            assert status.activity == "reranking…"
            assert "⟳ reranking…" in status.render().plain
            await pilot.press("down")  # the reader moves on while the rerank runs
            reading = results.current
            assert reading is not None and reading.pmid == first.hits[1].pmid
            gated.gate.set()
            await seen.next(lambda m: isinstance(m, ResultsRendered) and m.reranked)
            await settle(app, pilot)
        finally:
            gated.gate.set()
        expected = oracle.rerank(first)
        assert expected.reranked and pmids(expected.hits) != pmids(first.hits)
        assert app.screen.query_one(ResultsList) is results  # the same list, reordered
        assert pmids(results.hits) == pmids(expected.hits)
        assert [h.rank for h in results.hits] == list(range(1, len(results.hits) + 1))
        assert status.activity == "" and "⟳" not in status.render().plain
        assert app.screen.query_one(ModeBar).summary.endswith("· reranked")
        assert results.current is not None and results.current.pmid == reading.pmid
        detail = app.screen.query_one(DetailPane)
        assert detail.article is not None and detail.article.pmid == reading.pmid


async def test_a_new_query_cancels_the_rerank_in_flight(paths: Paths, oracle: Searcher) -> None:
    seen = Recorder(ResultsRendered, RerankDone)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE, message_hook=seen) as pilot:
        await settle(app, pilot)
        gated = gate_cross(app)
        try:
            await submit(app, pilot, "mortality")
            await seen.next(lambda m: isinstance(m, ResultsRendered))
            old = app.main.ticket
            await gated.wait_entered()  # the old rerank holds the searcher's lane
            await submit(app, pilot, "insulin obesity")
            assert app.main.ticket == old + 1
            gated.gate.set()
            await seen.next(
                lambda m: isinstance(m, ResultsRendered) and m.reranked and m.ticket == old + 1
            )
            await settle(app, pilot)
        finally:
            gated.gate.set()
        stale = [m for m in seen.seen if m.ticket == old and getattr(m, "reranked", True)]
        assert stale == []  # the old rerank neither reported nor rendered
        expected = oracle.rerank(oracle.search("insulin obesity", k=RESULTS_K))
        results = app.screen.query_one(ResultsList)
        assert pmids(results.hits) == pmids(expected.hits)
        assert app.screen.query_one(StatusBar).activity == ""


async def test_similar_articles_from_the_detail_pane(paths: Paths, oracle: Searcher) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "tocilizumab")
        await settle(app, pilot)
        await pilot.press("enter")  # read the top hit
        detail = app.screen.query_one(DetailPane)
        assert app.screen.focused is detail and detail.article is not None
        source = detail.article.pmid
        await pilot.press("ctrl+n")
        await settle(app, pilot)
        assert app.screen.query_one(ModeBar).mode == "similar"
        assert app.screen.query_one(SearchBar).value == str(source)
        hits = app.screen.query_one(ResultsList).hits
        expected = neighbours.similar(oracle, source, k=RESULTS_K)
        assert hits and pmids(hits) == pmids(expected.hits)
        assert source not in pmids(hits)
        assert all(h.sources == ("dense",) for h in hits)
        assert not {p for p, *_ in LATE} & set(pmids(hits))  # no vectors, no neighbours
        assert detail.article is not None and detail.article.pmid == hits[0].pmid


async def test_similar_to_an_article_not_encoded_yet_is_a_notification(paths: Paths) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f3")
        await submit(app, pilot, f"PMID {LATE[0][0]}")
        await settle(app, pilot)
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and str(LATE[0][0]) in errors[-1], errors
        assert app.is_running


async def test_similar_articles_without_the_models_that_built_the_vectors(
    paths: Paths, tmp_path: Path
) -> None:
    """Vectors whose models are not on this machine (the usual case: NCBI's imported
    MedCPT vectors): the models fail to load, and similar articles still come from the
    stored vectors, which need no model."""
    encoded = np.arange(FIRST_PMID, FIRST_PMID + ENCODED)
    with VectorCollection.open(paths.vector_dir("articles")) as coll:
        stored = coll.get(encoded)
    scores = stored[1:] @ stored[0]  # the brute-force oracle, the source itself left out
    expected = [int(encoded[1 + i]) for i in np.argsort(-scores)]
    gone = tmp_path / "no-models"
    paths.config_file.write_text(
        '[search]\ndevice = "cpu"\n[profiles.tiny]\n'
        f'query_model = "{gone / "query"}"\narticle_model = "{gone / "article"}"\n'
        f'cross_model = "{gone / "cross"}"\n'
    )
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        status = app.screen.query_one(StatusBar)
        assert status.models == "models unavailable: lexical search and similar articles"
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and f"directory {gone / 'query'} does not exist" in errors[-1], errors
        app.clear_notifications()
        await pilot.press("f3")
        await submit(app, pilot, f"PMID {FIRST_PMID}")
        await settle(app, pilot)
        hits = app.screen.query_one(ResultsList).hits
        assert pmids(hits) == expected
        assert hits[0].score == pytest.approx(float(scores.max()), rel=1e-3)
        assert not [n for n in app._notifications if n.severity == "error"]


async def test_similar_sentences_mode(paths: Paths, oracle: Searcher) -> None:
    query = "Mortality fell with tocilizumab."
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f4")
        assert app.screen.query_one(ModeBar).mode == "sentences"
        await submit(app, pilot, query)
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
        expected = neighbours.sentences(oracle, query, k=RESULTS_K)
        assert results.hits and len(results.hits) == len(expected.hits)
        got = [(h.pmid, h.sentence.text) for h in results.hits]
        assert got == [(h.pmid, h.sentence.text) for h in expected.hits]
        top = results.hits[0].sentence.text
        assert f"“{top[:30]}" in rendered_row(results, 0)


async def test_sentences_like_a_picked_abstract_sentence(paths: Paths, oracle: Searcher) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "tocilizumab")
        await settle(app, pilot)
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert isinstance(app.screen, SentencePicker)
        picked = app.screen.sentences[1]
        app.screen.query_one(OptionList).highlighted = 1
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen.query_one(ModeBar).mode == "sentences"
        assert app.screen.query_one(SearchBar).value == picked
        hits = app.screen.query_one(ResultsList).hits
        assert pmids(hits) == pmids(neighbours.sentences(oracle, picked, k=RESULTS_K).hits)


async def test_cite_mode_suggests_references_with_evidence(paths: Paths, oracle: Searcher) -> None:
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("f5")
        editor = app.screen.query_one(TextArea)
        assert app.screen.focused is editor
        editor.insert(PARAGRAPH)
        await pilot.press("ctrl+r")
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
    expected = suggest(oracle, PARAGRAPH, k=CITE_K)
    assert [c.citance.markers for c in expected.citances] == [
        ("[1]",),
        ("(Smith et al., 2019)",),
    ]
    groups: list[tuple[str, list[Hit]]] = []
    for row in results.rows:
        if isinstance(row, Heading):
            groups.append((row.text.plain, []))
        else:
            groups[-1][1].append(row)
    assert len(groups) == 2
    for n, ((heading, hits), item) in enumerate(zip(groups, expected.citances, strict=True), 1):
        assert heading == f"¶{n} {item.citance.original}  cites {item.citance.markers[0]}"
        assert pmids(hits) == pmids(item.result.hits) and len(hits) == CITE_K
        for hit in hits:
            evidence = hit.evidence.text
            article = oracle.article(hit.pmid)
            assert evidence and evidence in article.abstract_text


async def test_basket_lists_marked_articles_and_unmarks_before_export(
    paths: Paths, tmp_path: Path
) -> None:
    target = tmp_path / "basket.ris"
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, "mortality")
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
        await pilot.press("space", "down", "space", "down", "space")
        marked = pmids(results.hits[:3])
        assert list(app.session.basket) == marked
        await pilot.press("ctrl+s")
        await pilot.pause()
        listing = app.screen.query_one("#basket", OptionList)
        assert [o.id for o in listing.options] == [f"pmid-{p}" for p in marked]
        first = app.session.basket[marked[0]]
        assert first.title in str(listing.get_option_at_index(0).prompt)
        listing.focus()
        listing.highlighted = 1
        await pilot.press("delete")  # unmark the second one
        assert list(app.session.basket) == [marked[0], marked[2]]
        assert [o.id for o in listing.options] == [f"pmid-{marked[0]}", f"pmid-{marked[2]}"]
        assert "Export 2 marked" in str(app.screen.query_one("#basket-title", Label).content)
        app.screen.query_one("#format", Select).value = "ris"
        app.screen.query_one("#path", Input).value = str(target)
        app.screen.query_one("#path", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen.query_one(StatusBar).basket == 2
        marks = ["●" in rendered_row(results, i).split(".")[0] for i in range(3)]
        assert marks == [True, False, True]
    text = target.read_text(encoding="utf-8")
    assert text.count("TY  - ") == 2
    assert f"AN  - {marked[1]}" not in text and f"AN  - {marked[2]}" in text


def test_snapshot_of_reranked_hybrid_results(
    snap_compare: Callable[..., bool], vector_home: Path, tmp_path: Path
) -> None:
    """Hybrid rows (sources column), reranked, with the detail pane and the status bar."""
    home = tmp_path / "home"
    shutil.copytree(vector_home, home)
    app = MedsearchApp(Paths(home), show_timings=False)

    async def before(pilot: Pilot[Any]) -> None:
        await settle(app, pilot)
        await submit(app, pilot, "mortality")
        await settle(app, pilot)
        for widget in app.query(SearchBar):
            widget.cursor_blink = False
        app.clear_notifications()  # the "not MedCPT" toast times out on its own clock
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 36), run_before=before)


async def test_a_set_query_shows_its_set_and_counts_it(paths: Paths, oracle: Searcher) -> None:
    """Hybrid by default, the TUI shows only the set's articles and the set's size."""
    query = "mortality NOT sepsis"
    lexical = oracle.search(query, mode="lexical", k=RESULTS_K)
    members = {h.pmid for h in lexical.hits}
    assert 0 < lexical.total == len(members)
    app = MedsearchApp(paths)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await submit(app, pilot, query)
        await settle(app, pilot)
        results = app.screen.query_one(ResultsList)
        assert results.hits and set(pmids(results.hits)) <= members
        summary = app.screen.query_one(ModeBar).summary
        assert f"{lexical.total} matching · showing {len(results.hits)}" in summary
