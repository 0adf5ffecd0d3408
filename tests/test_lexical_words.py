"""Documents reach tantivy split by ``lexical_schema.words`` and queries by tantivy's regex
tokenizer: the two must make the same tokens at the same positions, or a query would miss
what the index holds. These tests are that contract."""

from __future__ import annotations

import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import tantivy
from hypothesis import given, settings
from hypothesis import strategies as st

from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex
from medsearch.query.normalize import normalize_text
from medsearch.records import AbstractSection, Article, Author, MeshHeading, PubDate

# the query side's tokenizer without its filters, which could hide a difference
REGEX = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(ls.TOKEN_PATTERN)).build()


def regex_tokens(text: str) -> list[str]:
    return [t.text for t in REGEX.pre_tokenize(text).tokens]


def test_compounds_split_as_the_query_side_splits_them() -> None:
    text = "COVID-19, IL6/IL-6 and BRCA1/2 in 5-HT(2A) cells; Müller's α-synuclein (n=12)"
    assert ls.words(text).split() == regex_tokens(text)
    assert ls.words("IL6").split() == ["IL", "6"]
    for short in ("Humans", "Smith JA", "O'Brien K", "Interleukin-6", "Müller M"):  # names, MeSH
        assert ls.words(short).split() == regex_tokens(short)
    assert ls.words("").split() == []
    for pad in ("", " z" * 20):  # a lone surrogate (JSON can hold one), both ways beyond ASCII
        assert ls.words("x\ud800y 5" + pad).split() == ["x", "y", "5"] + ["z"] * len(pad[1::2])
    assert ls.words("--- ;; ()").split() == []


PATHS = pytest.mark.parametrize(
    "few", [1.0, 0.0], ids=["characters classed one by one", "regex for text far from ASCII"]
)
"""``words`` has two ways for text beyond ASCII: each character classed, where there are
few, and the regex module's ``findall``. Each test takes both."""


@pytest.mark.thorough  # every character Python knows, through tantivy: seconds
@PATHS
def test_every_character_python_knows_splits_as_tantivy_splits_it(
    few: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each assigned code point between a letter and a digit: a letter joins the ``a``, a
    number the ``1``, anything else stands apart. Characters assigned after the Unicode
    version of Python's tables are left out: the ``regex`` module may know them as
    letters where tantivy does not yet, and such a token only ever matches itself."""
    monkeypatch.setattr(ls, "_FEW", few)
    monkeypatch.setattr(ls, "_CLASS_OF", {})  # not a million entries kept after the test
    assigned = [
        c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) not in ("Cn", "Cs")
    ]
    step = 20_000
    for lo in range(0, len(assigned), step):
        text = " ".join(f"a{chr(c)}1" for c in assigned[lo : lo + step])
        if ls.words(text).split() != regex_tokens(text):  # find the character to name it
            for c in assigned[lo : lo + step]:
                one = f"a{chr(c)}1"
                assert ls.words(one).split() == regex_tokens(one), hex(c)


def test_text_mostly_beyond_ascii_goes_to_the_regex_and_a_few_characters_do_not() -> None:
    """What the parametrised tests rely on: the default threshold picks each way."""
    few = "Müller's 10⁶ cells ± 5% in a long enough abstract about nothing else at all"
    assert len(few.encode()) - len(few) <= ls._FEW * len(few.encode())
    cyrillic = "Исследование 5-НТ рецепторов"
    assert len(cyrillic.encode()) - len(cyrillic) > ls._FEW * len(cyrillic.encode())
    for text in (few, cyrillic):
        assert ls.words(text).split() == regex_tokens(text)


def test_ascii_text_takes_its_own_path_and_splits_alike() -> None:
    """Most of PubMed is ASCII and skips the regex: every pair of ASCII characters."""
    text = " ".join(chr(a) + chr(b) + chr(a) for a in range(128) for b in range(128))
    assert text.isascii()
    assert ls.words(text).split() == regex_tokens(text)


ASSIGNED = st.characters(exclude_categories=("Cn", "Cs"))
TEXTS = st.one_of(
    st.text(st.characters(max_codepoint=127), max_size=80),  # ASCII: the fast path
    st.text(
        st.one_of(
            st.sampled_from("aZ09 -/().,;'\u00a0\u2009µαβΔéü\u0301١٢ⅣÆß"),
            ASSIGNED,
        ),
        max_size=80,
    ),
)


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_indexed_tokens_are_the_query_tokens_at_the_same_positions(text: str) -> None:
    """Filters included (lower-casing, folding, long tokens dropped, stemming): a phrase
    matches by positions, so the positions must agree too."""
    presplit = ls._analyzer(stem=True, presplit=True)
    normalized = normalize_text(text)
    expected = ls.analyzers().tokens(text)
    default = ls._FEW
    try:
        for few in (1.0, 0.0):  # both ways for text beyond ASCII (see PATHS)
            ls._FEW = few
            split = ls.words(normalized)
            assert [(t.position, t.text) for t in presplit.pre_tokenize(split).tokens] == expected
    finally:
        ls._FEW = default


def test_long_tokens_are_dropped_without_shifting_the_next_position() -> None:
    text = "alpha " + "x" * 60 + " beta"
    presplit = ls._analyzer(stem=True, presplit=True)
    indexed = [(t.position, t.text) for t in presplit.pre_tokenize(ls.words(text)).tokens]
    assert indexed == ls.analyzers().tokens(text) == [(0, "alpha"), (2, "beta")]


ARTICLES = [
    Article(
        pmid=1,
        title="COVID-19 and IL-6 in Müller glia",
        abstract=(AbstractSection("TNFα drives α-synuclein; 5-HT(2A) receptors, n=12."),),
        authors=(Author(last_name="Østergaard", fore_name="Jørn"),),
        mesh=(MeshHeading("Interleukin-6", major=True),),
    ),
    Article(
        pmid=2,
        title="covid19 outcomes with IL6 blockade",
        abstract=(AbstractSection("Tocilizumab (anti-IL6R) in 1,024 patients; BRCA1/2 carriers."),),
        keywords=("SARS-CoV-2", "cytokine storm"),
    ),
    Article(
        pmid=3,
        title="Serotonin 5HT2A agonists",
        authors=(Author(last_name="Muller", initials="A"),),
    ),
    Article(pmid=4, title="Studies of alpha synuclein aggregation"),
]
QUERIES = [
    "covid 19",
    '"covid-19"',
    "IL6",
    '"IL-6 blockade"',
    "muller",
    "Müller",
    "α-synuclein",
    '"alpha synuclein"',
    "5-HT2A",
    "BRCA1",
    "Ostergaard[au]",
    "interleukin 6",
    "sars cov 2",
    "1,024 patients",
    "study",
]


def _hits(index: LexicalIndex) -> list[list[tuple[int, float]]]:
    return [[(h.pmid, h.score) for h in index.search(q, k=10).hits] for q in QUERIES]


def test_an_index_built_with_the_regex_tokenizer_answers_as_one_built_from_split_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Data homes indexed before documents were split keep working, with the same scores."""
    new = LexicalIndex.open(tmp_path / "new")
    new.upsert(ARTICLES)
    new.commit()
    expected = _hits(new)
    new.close()
    assert all(expected), [q for q, hits in zip(QUERIES, expected, strict=True) if not hits]

    def regex_register(index: Any) -> None:  # the tokenizers of an index built from unsplit text
        index.register_tokenizer(ls.TEXT_ANALYZER, ls._analyzer(stem=True))
        index.register_tokenizer(ls.NAME_ANALYZER, ls._analyzer(stem=False))

    with monkeypatch.context() as patch:
        patch.setattr(ls, "words", lambda text: text)
        patch.setattr(ls, "register", regex_register)
        old = LexicalIndex.open(tmp_path / "old")
        old.upsert(ARTICLES)
        old.commit()
        old.close()
    reopened = LexicalIndex.open(tmp_path / "old", create=False)
    assert _hits(reopened) == expected
    reopened.close()


def test_documents_sent_as_json_index_as_the_fields_themselves(tmp_path: Path) -> None:
    """The parsers send each document as JSON (``ls.document``) for tantivy's
    ``add_json``; the index answers as one given the same fields as a ``Document``."""
    from tantivy import Document

    articles = [
        *ARTICLES,
        Article(pmid=5, title="Dated", journal="N Engl J Med", pub_date=PubDate(2020)),
    ]
    via_json = LexicalIndex.open(tmp_path / "json")
    via_json.upsert(articles)
    via_json.commit()
    direct = LexicalIndex.open(tmp_path / "direct")
    writer = direct._writer_or_open()
    for article in articles:
        writer.add_document(Document.from_dict(ls.article_fields(article), direct._schema))
    direct.commit()
    queries = [*QUERIES, "N Engl J Med[ta]", "2020[dp]"]
    assert [h.pmid for h in via_json.search("N Engl J Med[ta] 2020[dp]").hits] == [5]
    for query in queries:
        assert [(h.pmid, h.score) for h in via_json.search(query, k=10).hits] == [
            (h.pmid, h.score) for h in direct.search(query, k=10).hits
        ], query
    assert via_json.count() == direct.count() == len(articles)
    via_json.close()
    direct.close()
