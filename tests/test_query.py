"""The PubMed-style query language: grammar, field tags, biomedical words, errors.

Parsing is checked on the AST; meaning is checked by searching a small real index, since
what a user cares about is which articles a query finds.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medsearch.errors import QuerySyntaxError
from medsearch.index.lexical.index import LexicalIndex, LexicalResult
from medsearch.query import (
    And,
    Not,
    Or,
    Phrase,
    Prefix,
    Tagged,
    Term,
    YearRange,
    normalize_text,
    normalize_with_offsets,
    parse_plain,
    parse_query,
)
from medsearch.records import AbstractSection, Article, Author, Filters, MeshHeading, PubDate


def article(pmid: int, title: str, abstract: str = "", **fields: object) -> Article:
    return Article(
        pmid=pmid,
        title=title,
        abstract=(AbstractSection(abstract),) if abstract else (),
        **fields,  # type: ignore[arg-type]
    )


# One article per spelling, so "finds each other" is a statement about PMID sets.
BIOMEDICAL = [
    article(1, "COVID-19 outcomes in adults"),
    article(2, "covid19 vaccination uptake"),
    article(3, "COVID 19 and acute kidney injury"),
    article(4, "IL-6 signalling in sepsis"),
    article(5, "IL6 receptor antagonists"),
    article(6, "BRCA1/2 mutation carriers"),
    article(7, "The p53 pathway in apoptosis"),
    article(8, "5-HT(2A) receptor occupancy"),
    article(9, "5-HT2A antagonists in psychosis"),
    article(10, "Na+/K+-ATPase pump activity"),
    article(11, "Na,K-ATPase in the kidney"),
    article(12, "α-synuclein aggregation"),
    article(13, "Alpha-synuclein in Parkinson disease"),
    article(14, "T-cell exhaustion in tumours"),
    article(15, "T cells and checkpoint blockade"),
    article(16, "Tumour cell lines and culture media"),
    article(17, "TNFα blockade in arthritis"),
    article(18, "Benzo[a]pyrene exposure and lung cancer"),
    article(19, "Vitamin A deficiency and night blindness"),
    article(20, "Vitamin D deficiency and rickets"),
]

METADATA = [
    article(
        101,
        "Aspirin for primary prevention of stroke",
        "A randomized trial of aspirin in older adults. Aspirin did not reduce stroke.",
        authors=(Author("Smith", "John A", "JA"), Author("Jones", "Bob", "B")),
        journal="The New England Journal of Medicine",
        journal_abbrev="N Engl J Med",
        pub_date=PubDate(2018),
        publication_types=("Journal Article", "Randomized Controlled Trial"),
        languages=("eng",),
        mesh=(MeshHeading("Aspirin", major=True), MeshHeading("Stroke")),
        keywords=("primary prevention",),
    ),
    article(
        102,
        "Statins and stroke: a review",
        "We review statin therapy. Breast cancer was not studied.",
        authors=(Author("Jones", "Bob", "B"), Author("Smith", "John A", "JA")),
        journal="Lancet",
        journal_abbrev="Lancet",
        pub_date=PubDate(2012),
        publication_types=("Review",),
        languages=("eng",),
        mesh=(MeshHeading("Stroke", major=True), MeshHeading("Breast Neoplasms")),
    ),
    article(
        103,
        "Cancer du sein: dépistage",
        "Immunotherapy and immunology of breast cancer screening.",
        authors=(Author("Dupont", "Marie", "M"),),
        journal="Presse Medicale",
        journal_abbrev="Presse Med",
        pub_date=PubDate(2021),
        publication_types=("Journal Article",),
        languages=("fre",),
        mesh=(MeshHeading("Breast Neoplasms", major=True),),
    ),
]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalIndex]:
    idx = LexicalIndex.open(tmp_path_factory.mktemp("query") / "lexical")
    idx.upsert([*BIOMEDICAL, *METADATA])
    idx.commit()
    yield idx
    idx.close()


def found(index: LexicalIndex, query: str, **kwargs: object) -> set[int]:
    return {h.pmid for h in index.search(query, k=50, **kwargs).hits}  # type: ignore[arg-type]


# -- grammar -------------------------------------------------------------------------------


def test_plain_words_are_a_ranked_or() -> None:
    assert parse_query("aspirin stroke").node == Or(
        (Term("aspirin", 0), Term("stroke", 8)), words=True
    )


def test_operators_run_left_to_right_without_precedence_like_pubmed() -> None:
    node = parse_query("a OR b AND c").node
    assert node == And((Or((Term("a", 0), Term("b", 5))), Term("c", 11)))


def test_adjacent_words_bind_tighter_than_operators() -> None:
    node = parse_query("aspirin OR heart attack").node
    assert node == Or((Term("aspirin", 0), And((Term("heart", 11), Term("attack", 17)))))


def test_not_is_and_not_and_may_lead() -> None:
    assert parse_query("a NOT b").node == And((Term("a", 0), Not(Term("b", 6))))
    assert parse_query("NOT b").node == Not(Term("b", 4))


def test_lower_case_operators_are_words() -> None:
    assert parse_query("salt and pepper").node == Or(
        (Term("salt", 0), Term("and", 5), Term("pepper", 9)), words=True
    )


def test_parentheses_group_and_tags_apply_to_groups() -> None:
    node = parse_query("(stroke OR infarction)[ti]").node
    assert node == Or(
        (Tagged("ti", Term("stroke", 1), 22), Tagged("ti", Term("infarction", 11), 22))
    )


def test_phrase_and_prefix() -> None:
    assert parse_query('"breast cancer"').node == Phrase("breast cancer", 0)
    assert parse_query("immun*").node == Prefix("immun", 0)


def test_an_unclosed_quote_is_an_error_at_its_place_however_long_the_text() -> None:
    """Read to the end or dropped, a stray quote would change the strategy silently."""
    for text in ['"breast cancer', 'the so-called "lactate paradox in septic shock was studied']:
        with pytest.raises(QuerySyntaxError) as caught:
            parse_query(text)
        assert caught.value.problem == f"unclosed quote at {text.index(chr(34))}"


def test_tag_applies_to_the_run_of_words_before_it() -> None:
    assert parse_query("smith ja[au]").node == Tagged("au", Phrase("smith ja", 0), 8)
    assert parse_query("aspirin stroke[Title/Abstract]").node == Tagged(
        "tiab", Phrase("aspirin stroke", 0), 14
    )
    assert parse_query("stroke [Title]").node == Tagged("ti", Term("stroke", 0), 7)


def test_names_with_brackets_and_parentheses_stay_words() -> None:
    assert parse_query("5-HT(2A)").node == Term("5-HT(2A)", 0)
    assert parse_query("benzo[a]pyrene").node == Term("benzo[a]pyrene", 0)
    assert parse_query("(5-HT(2A) OR serotonin)").node == Or(
        (Term("5-HT(2A)", 1), Term("serotonin", 13))
    )


def test_restriction_tags_in_the_top_level_and_become_filters() -> None:
    parsed = parse_query("stroke AND 2015:2020[dp] AND review[pt] AND english[la]")
    assert parsed.node == Term("stroke", 0)
    assert parsed.filters == Filters(
        date_from=20150000, date_to=20201231, publication_types=("review",), languages=("eng",)
    )
    assert parse_query("N Engl J Med[ta]").filters == Filters(journals=("N Engl J Med",))
    assert parse_query("(review OR editorial)[pt]").filters == Filters(
        publication_types=("review", "editorial")
    )


def test_restriction_tags_elsewhere_stay_in_the_query() -> None:
    parsed = parse_query("stroke OR review[pt]")
    assert parsed.filters.empty
    assert parsed.node == Or((Term("stroke", 0), Tagged("pt", Term("review", 10), 16)))
    both = parse_query("lancet[ta] AND nature[ta]")  # both at once: not a filter's "any of"
    assert both.filters.empty


def test_dates() -> None:
    assert parse_query("2015[dp]").filters == Filters(date_from=20150000, date_to=20151231)
    assert parse_query("2015/03/01:2016/12[dp]").filters == Filters(
        date_from=20150301, date_to=20161231
    )
    assert parse_query("x OR 2015[dp]").node == Or((Term("x", 0), YearRange(2015, 2015, 5)))


def test_plain_parse_never_raises_on_prose() -> None:
    parsed = parse_plain("Aspirin (ASA) reduces stroke [12] AND")
    assert isinstance(parsed.node, Or)
    assert [t.text for t in parsed.node.children if isinstance(t, Term)][-2:] == ["[12]", "AND"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("(stroke OR aspirin", "unclosed parenthesis at 0"),
        ("stroke OR aspirin)", "unbalanced parenthesis at 17"),
        ("stroke AND", "nothing after AND at 7"),
        ("OR stroke", "nothing before OR at 0"),
        ("stroke[xx]", "unknown field tag [xx] at 6"),
        ("stroke[ti", "unclosed field tag at 6"),
        ("[ti]", "field tag [ti] has nothing before it at 0"),
        ("()", "empty parentheses at 0"),
        (
            "abc*",
            "truncated word 'abc*' at 0: PubMed needs at least 4 characters before the *;"
            " write the word's forms in full, joined by OR",
        ),
        ("soon[dp]", "bad date 'soon' for [dp] at 4"),
        ("2020:2010[dp]", "date range '2020:2010' ends before it starts at 9"),
        ("abc[pmid]", "[pmid] needs a number, not 'abc' at 3"),
        ("99999999999999999999[pmid]", "[pmid] needs a number, not '99999999999999999999' at 20"),
        ("review*[pt]", "truncation (*) does not work with [pt] at 7"),
    ],
)
def test_errors_say_what_and_where(query: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query(query)
    assert caught.value.problem == message
    assert caught.value.position is not None
    assert f"at {caught.value.position}" in message
    assert str(caught.value).splitlines()[0] == message  # the text and a caret follow


# -- biomedical words ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("COVID-19", {1, 2, 3}),
        ("covid19", {1, 2, 3}),
        ('"COVID 19"', {1, 2, 3}),
        ("IL-6", {4, 5}),
        ("IL6", {4, 5}),
        ("BRCA1/2", {6}),
        ("BRCA1", {6}),
        ("p53", {7}),
        ("P-53", {7}),
        ("5-HT(2A)", {8, 9}),
        ("5-HT2A", {8, 9}),
        ("Na+/K+-ATPase", {10, 11}),
        ("α-synuclein", {12, 13}),
        ("alpha-synuclein", {12, 13}),
        ("T-cell", {14, 15}),
        ('"T cells"', {14, 15}),
        ("TNF-alpha", {17}),
        ("benzo[a]pyrene", {18}),
    ],
)
def test_biomedical_spellings_find_each_other(
    index: LexicalIndex, query: str, expected: set[int]
) -> None:
    assert found(index, query) == expected


def test_unquoted_words_rank_articles_with_more_of_them_first(index: LexicalIndex) -> None:
    hits = index.search("COVID 19 kidney", k=10).hits
    assert hits[0].pmid == 3  # covid, 19 and kidney
    assert {1, 2, 3} <= {h.pmid for h in hits}


def test_lower_case_stop_words_are_dropped_capitalised_letters_kept(index: LexicalIndex) -> None:
    assert index.search("the effect of vitamin").terms == ("effect", "vitamin")
    assert index.search("vitamin A").hits[0].pmid == 19


def test_greek_letters_are_spelled_out_the_same_way_everywhere() -> None:
    assert normalize_text("α-synuclein") == "alpha-synuclein"
    assert normalize_text("TNFα") == "TNF alpha"
    assert normalize_text("no greek") == "no greek"
    assert normalize_text("αβ-crystallin, 5 µg/kg, IFNγR1 κB") == (
        "alphabeta-crystallin, 5 mu g/kg, IFN gamma R1 kappa B"
    )


@settings(max_examples=300, deadline=None)
@given(st.text(st.one_of(st.sampled_from("αβγµΔΩς aZ1-é"), st.characters()), max_size=40))
def test_normalising_alone_gives_the_text_the_offsets_are_for(text: str) -> None:
    """Ingest spells Greek out one substitution at a time; snippets map offsets character
    by character: the two must agree on every text."""
    assert normalize_text(text) == normalize_with_offsets(text)[0]


# -- meaning of each construct ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("aspirin AND stroke", {101}),
        ("aspirin OR statins", {101, 102}),
        ("stroke NOT aspirin", {102}),
        ("(aspirin OR statin) AND review[pt]", {102}),
        ('"breast cancer"', {102, 103}),
        ('"cancer breast"', set()),
        ("immun*", {103}),
        ("stroke[ti]", {101, 102}),
        ("screening[ab]", {103}),
        ("screening[ti]", set()),
        ("depistage[tiab]", {103}),
        ("smith ja[au]", {101, 102}),
        ("smith j[au]", {101, 102}),
        ("smith[1au]", {101}),
        ("jones b[1au]", {102}),
        ("breast neoplasms[mh]", {102, 103}),
        ("breast neoplasms[majr]", {103}),
        ("aspirin[majr]", {101}),
        ("primary prevention[kw]", {101}),
        ("randomized controlled trial[pt]", {101}),
        ("N Engl J Med[ta]", {101}),
        ('"the new england journal of medicine"[journal]', {101}),
        ("fre[la]", {103}),
        ("french[la]", {103}),
        ("2012:2018[dp]", {101, 102}),
        ("stroke AND 2018[dp]", {101}),
        ("stroke OR 2021[dp]", {101, 102, 103}),
        ("101[pmid]", {101}),
        ("NOT stroke AND breast", {103}),
        ("lancet[ta] OR presse med[ta]", {102, 103}),
    ],
)
def test_constructs_select_the_right_articles(
    index: LexicalIndex, query: str, expected: set[int]
) -> None:
    assert found(index, query) & {101, 102, 103} == expected


def test_query_filters_and_caller_filters_both_apply(index: LexicalIndex) -> None:
    result = index.search("stroke AND review[pt]", filters=Filters(year_from=2015))
    assert result.hits == ()
    assert result.filters == Filters(year_from=2015, publication_types=("review",))


def test_filter_only_query_lists_newest_pmid_first(index: LexicalIndex) -> None:
    assert [h.pmid for h in index.search("eng[la]").hits] == [102, 101]


# -- robustness ------------------------------------------------------------------------------

QUERY_PIECES = st.sampled_from(
    ["(", ")", "[", "]", '"', "*", ":", "-", "/", "+", " ", "AND", "OR", "NOT", "ti", "au",
     "dp", "[ti]", "[dp]", "[pt]", "[pmid]", "2015", "covid", "α", "IL-6", "\x00", "\\",
     "99999999999999999999", "²", "١٢", "[au]", "[la]", ":", "x*", "immu*", "[tiab:~2]", "~"]
)  # fmt: skip


def _search_or_syntax_error(index: LexicalIndex, text: str) -> None:
    try:
        result = index.search(text, k=5)
    except QuerySyntaxError as err:
        assert str(err)  # a message for the user, with a position
        return
    assert isinstance(result, LexicalResult)
    assert all(isinstance(h.pmid, int) and h.pmid > 0 for h in result.hits)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_any_text_gives_results_or_a_syntax_error(index: LexicalIndex, text: str) -> None:
    _search_or_syntax_error(index, text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(QUERY_PIECES, max_size=14).map("".join))
def test_any_mix_of_query_syntax_gives_results_or_a_syntax_error(
    index: LexicalIndex, text: str
) -> None:
    _search_or_syntax_error(index, text)


def test_plain_mode_accepts_anything(index: LexicalIndex) -> None:
    result = index.search('aspirin (stroke [12] "', syntax=False)
    assert result.hits[0].pmid == 101


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=80))
def test_plain_mode_never_raises(index: LexicalIndex, text: str) -> None:
    assert isinstance(index.search(text, k=3, syntax=False), LexicalResult)
