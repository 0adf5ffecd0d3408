"""The lexical index as the pipeline and the searcher use it: write, commit, search, filter."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medsearch.errors import StoreError, UsageError
from medsearch.index.lexical.index import LexicalIndex, snippet_spans
from medsearch.index.lexical.snippets import mark
from medsearch.records import AbstractSection, Article, Author, Filters, PubDate


def article(pmid: int, title: str, abstract: str = "", **fields: object) -> Article:
    return Article(
        pmid=pmid,
        title=title,
        abstract=(AbstractSection(abstract),) if abstract else (),
        **fields,  # type: ignore[arg-type]
    )


def pmids(index: LexicalIndex, query: str, **kwargs: object) -> set[int]:
    return {h.pmid for h in index.search(query, k=500, **kwargs).hits}  # type: ignore[arg-type]


class Texts:
    """What the article store does for snippets: (title, abstract) by PMID."""

    def __init__(self) -> None:
        self.articles: dict[int, Article] = {}

    def __call__(self, pmids: object) -> dict[int, tuple[str, str]]:
        found = (self.articles.get(p) for p in pmids)  # type: ignore[attr-defined]
        return {a.pmid: (a.title, a.abstract_text) for a in found if a is not None}


@pytest.fixture
def index(tmp_path: Path) -> Iterator[LexicalIndex]:
    texts = Texts()
    idx = LexicalIndex.open(tmp_path / "lexical", texts=texts)
    upsert = idx.upsert

    def remembering(articles: list[Article]) -> None:
        texts.articles.update((a.pmid, a) for a in articles)
        upsert(articles)

    idx.upsert = remembering  # type: ignore[method-assign]
    yield idx
    idx.close()


# -- writing ---------------------------------------------------------------------------------


def test_upsert_replaces_the_earlier_document_for_a_pmid(index: LexicalIndex) -> None:
    index.upsert([article(1, "Aspirin and stroke"), article(2, "Statins")])
    index.commit()
    index.upsert([article(1, "Warfarin and bleeding")])
    index.commit()
    assert index.count() == 2
    assert pmids(index, "aspirin") == set()
    assert pmids(index, "warfarin") == {1}


def test_the_last_version_wins_within_one_batch(index: LexicalIndex) -> None:
    index.upsert([article(1, "first version"), article(1, "second version")])
    index.commit()
    assert index.count() == 1
    assert pmids(index, "second") == {1}
    assert pmids(index, "first") == set()


def test_delete_removes_and_ignores_unknown_pmids(index: LexicalIndex) -> None:
    index.upsert([article(1, "Aspirin"), article(2, "Aspirin again")])
    index.commit()
    index.delete([1, 999])
    index.commit()
    assert pmids(index, "aspirin") == {2}
    assert index.count() == 1


def test_changes_are_invisible_until_commit_and_rollback_drops_them(index: LexicalIndex) -> None:
    index.upsert([article(1, "Aspirin")])
    index.commit()
    index.upsert([article(2, "Aspirin too")])
    index.delete([1])
    assert pmids(index, "aspirin") == {1}  # staged, not yet visible
    index.rollback()
    index.commit()
    assert pmids(index, "aspirin") == {1}
    assert index.count() == 1


def test_commit_payload_round_trips_and_survives_reopening(tmp_path: Path) -> None:
    path = tmp_path / "lexical"
    idx = LexicalIndex.open(path)
    assert idx.last_commit_payload() is None
    idx.upsert([article(1, "Aspirin")])
    idx.commit("pubmed26n0001.xml.gz")
    assert idx.last_commit_payload() == "pubmed26n0001.xml.gz"
    idx.delete([1])
    idx.commit()  # no payload: the resume point is kept
    assert idx.last_commit_payload() == "pubmed26n0001.xml.gz"
    idx.close()
    reopened = LexicalIndex.open(path, create=False)
    assert reopened.last_commit_payload() == "pubmed26n0001.xml.gz"
    assert reopened.count() == 0  # the bookkeeping document is not an article
    assert pmids(reopened, "NOT aspirin") == set()
    reopened.close()


def test_close_releases_the_writer_for_the_next_opener(tmp_path: Path) -> None:
    path = tmp_path / "lexical"
    first = LexicalIndex.open(path)
    first.upsert([article(1, "Aspirin")])
    first.commit()
    reader = LexicalIndex.open(path)  # a searcher: never takes the writer lock
    assert pmids(reader, "aspirin") == {1}
    first.close()
    second = LexicalIndex.open(path)
    second.upsert([article(2, "Aspirin again")])
    second.commit()
    second.close()
    reader.close()
    assert pmids(LexicalIndex.open(path, create=False), "aspirin") == {1, 2}


def test_a_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "lexical"
    first = LexicalIndex.open(path)
    first.upsert([article(1, "Aspirin")])
    second = LexicalIndex.open(path)
    with pytest.raises(StoreError, match="being written by another process"):
        second.upsert([article(2, "Statins")])
    first.close()


def test_missing_corrupt_or_outdated_indexes_are_store_errors(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no lexical index"):
        LexicalIndex.open(tmp_path / "absent", create=False)
    corrupt = tmp_path / "corrupt"
    LexicalIndex.open(corrupt).close()
    (corrupt / "meta.json").write_text("{not json")
    with pytest.raises(StoreError, match="cannot be opened"):
        LexicalIndex.open(corrupt)
    old = tmp_path / "old"
    LexicalIndex.open(old).close()
    (old / "medsearch-lexical.json").write_text('{"schema": 0}')
    with pytest.raises(StoreError, match="schema version 0"):
        LexicalIndex.open(old)


# -- reading ---------------------------------------------------------------------------------


def test_an_empty_index_finds_nothing(index: LexicalIndex) -> None:
    result = index.search("aspirin")
    assert result.hits == ()
    assert result.total == 0
    assert index.count() == 0
    assert index.size_bytes() > 0


def test_total_counts_every_match_or_is_a_lower_bound(index: LexicalIndex) -> None:
    index.upsert([article(i, f"aspirin trial {i}") for i in range(1, 31)])
    index.commit()
    assert index.search("aspirin", k=5).total == 30
    assert index.search("aspirin", k=5, count=False).total == 5
    with pytest.raises(UsageError):
        index.search("aspirin", k=0)


def test_ranking_puts_more_terms_and_title_matches_first(index: LexicalIndex) -> None:
    filler = " ".join(["placebo"] * 30)
    in_abstract = [
        article(i, f"Statins trial {i}", f"aspirin was not studied. {filler}") for i in range(1, 5)
    ]
    index.upsert(
        [
            *in_abstract,
            article(5, "Aspirin dosing", filler),
            article(6, "Aspirin and stroke prevention", filler),
        ]
    )
    index.commit()
    ranked = [h.pmid for h in index.search("aspirin stroke").hits]
    assert ranked[:2] == [6, 5]
    assert set(ranked[2:]) == {1, 2, 3, 4}


def test_snippets_mark_matched_terms_in_the_best_window(index: LexicalIndex) -> None:
    before = "Background sentence without the word. " * 12
    index.upsert(
        [
            article(
                1,
                "α-Synuclein and COVID-19",
                before + "Here alpha-synuclein meets SARS-CoV-2 (covid19) in neurons. <b>x</b>",
            )
        ]
    )
    index.commit()
    hit = index.search("alpha synuclein covid-19").hits[0]
    text, spans = snippet_spans(hit.snippet)
    assert [text[s:e] for s, e in spans] == ["alpha-synuclein", "covid19"]
    assert text.startswith("…") and "Here alpha-synuclein" in text
    assert "<b>x</b>" not in hit.snippet  # literal markup in the text is not a highlight
    title, title_spans = snippet_spans(hit.title)
    assert title == "α-Synuclein and COVID-19"
    assert [title[s:e] for s, e in title_spans] == ["α-Synuclein", "COVID-19"]


def test_highlight_finds_query_terms_in_any_text(index: LexicalIndex) -> None:
    terms = index.search("studies immun*").terms
    assert terms == ("studi", "immun*")
    text = "Two studies of immunology; one study of immune cells."
    assert [text[s:e] for s, e in index.highlight(text, terms)] == [
        "studies",
        "immunology",
        "study",
        "immune",
    ]


@st.composite
def text_and_spans(draw: st.DrawFn) -> tuple[str, list[tuple[int, int]]]:
    text = draw(st.text(max_size=40).filter(lambda t: "<b>" not in t and "</b>" not in t))
    cuts = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=6))))
    pairs = list(zip(cuts[::2], cuts[1::2], strict=False))
    return text, [(s, e) for s, e in pairs if s < e]


@given(text_and_spans())
def test_snippet_spans_inverts_marking(case: tuple[str, list[tuple[int, int]]]) -> None:
    text, spans = case
    assert snippet_spans(mark(text, spans)) == (text, spans)


def test_snippet_spans_round_trips_plain_text() -> None:
    assert snippet_spans("a <b>b</b> c <b>d</b>") == ("a b c d", [(2, 3), (6, 7)])
    assert snippet_spans("no marks") == ("no marks", [])
    assert snippet_spans("dangling <b>open") == ("dangling <b>open", [])


# -- filters agree with Filters.accepts ------------------------------------------------------

JOURNALS = [("Nature Medicine", "Nat Med"), ("The Lancet", "Lancet"), ("BMJ", "BMJ")]
TYPES = ["Journal Article", "Review", "Randomized Controlled Trial"]
LANGS = ["eng", "fre", "ger"]
CORPUS = [
    article(
        pmid,
        f"common words study {pmid}",
        journal=JOURNALS[pmid % 3][0],
        journal_abbrev=JOURNALS[pmid % 3][1],
        pub_date=PubDate(None if pmid % 11 == 0 else 2000 + pmid % 23),
        publication_types=tuple(TYPES[: 1 + pmid % 3]),
        languages=(LANGS[pmid % 5 % 3],),
        authors=(Author("Smith", "J", "J"),),
    )
    for pmid in range(1, 121)
]


@pytest.fixture(scope="module")
def corpus_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalIndex]:
    idx = LexicalIndex.open(tmp_path_factory.mktemp("filters") / "lexical")
    idx.upsert(CORPUS)
    idx.commit()
    yield idx
    idx.close()


def _case(name: str) -> st.SearchStrategy[str]:
    return st.sampled_from([name, name.upper(), name.lower()])


filters_strategy = st.builds(
    Filters,
    year_from=st.none() | st.integers(1998, 2025),
    year_to=st.none() | st.integers(1998, 2025),
    journals=st.lists(st.sampled_from([n for pair in JOURNALS for n in pair]).flatmap(_case),
                      max_size=2).map(tuple),
    publication_types=st.lists(st.sampled_from(TYPES).flatmap(_case), max_size=2).map(tuple),
    languages=st.lists(st.sampled_from([*LANGS, "spa"]), max_size=2).map(tuple),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(filters=filters_strategy)
def test_index_filters_agree_with_filters_accepts(
    corpus_index: LexicalIndex, filters: Filters
) -> None:
    expected = {a.pmid for a in CORPUS if filters.accepts(a)}
    assert pmids(corpus_index, "common", filters=filters) == expected
    if not filters.empty:
        assert pmids(corpus_index, "", filters=filters) == expected  # filters alone
        # What dense search restricted to a filter asks: the whole set when small ...
        listed, total = corpus_index.matching_pmids(filters, len(CORPUS))
        assert listed is not None and set(listed.tolist()) == expected
        assert total == len(expected) == len(listed)
        if expected:
            over, counted = corpus_index.matching_pmids(filters, len(expected) - 1)
            assert over is None and counted == len(expected)
        # ... and which of some candidates pass, when it is large.
        some = [a.pmid for a in CORPUS[::3]] + [999_999]
        assert corpus_index.accepted(some, filters) == expected.intersection(some)


def test_filters_do_not_change_scores(corpus_index: LexicalIndex) -> None:
    plain = {h.pmid: h.score for h in corpus_index.search("study", k=200).hits}
    filtered = corpus_index.search("study", k=200, filters=Filters(year_from=2010)).hits
    assert filtered and all(h.score == pytest.approx(plain[h.pmid]) for h in filtered)


def test_journal_filter_by_full_name_or_abbreviation(corpus_index: LexicalIndex) -> None:
    by_name = pmids(corpus_index, "common", filters=Filters(journals=("nature medicine",)))
    by_abbrev = pmids(corpus_index, "common", filters=Filters(journals=("NAT MED",)))
    assert by_name == by_abbrev == {a.pmid for a in CORPUS if a.journal == "Nature Medicine"}


def test_indexing_threads_leave_half_the_cores_to_the_parsers() -> None:
    from medsearch.index.lexical.index import writer_threads

    assert [writer_threads(n) for n in (None, 1, 2, 3, 4, 8, 64)] == [1, 1, 1, 1, 2, 4, 4]
