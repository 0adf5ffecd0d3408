"""PubMed's term rules (https://pubmed.ncbi.nlm.nih.gov/help/), each checked by searching.

- terms side by side are ANDed once a query is a set query (an operator, a tag, a
  phrase or a truncation); plain words alone stay ranked;
- a tag after several words searches them as a phrase;
- ``term*`` needs four characters before the ``*``;
- ``"a b"[tiab:~N]``: the words in any order with at most N words between them.

Each expected set is computed here from the records' text by a plain reading of words
and positions, independent of the index's analyzer and query translation.
"""

from __future__ import annotations

import gzip
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from itertools import pairwise, product
from pathlib import Path

import pytest
from conftest import shared_data

from ingest.pubmed_xml import parse_file
from medsearch.errors import QuerySyntaxError
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.lexical.terms import MAX_EXPANSIONS
from medsearch.query import And, Or, Phrase, Prefix, Tagged, Term, parse_query
from medsearch.records import AbstractSection, Article
from medsearch.retrieval.query_text import truncated_note


def article(pmid: int, title: str, abstract: str = "") -> Article:
    return Article(
        pmid=pmid,
        title=title,
        abstract=(AbstractSection(abstract),) if abstract else (),
    )


ARTICLES = [
    article(1, "Cataract outcomes in adults", "An intraocular lens was implanted."),
    article(2, "Cataract outcomes in children", "Lens opacity was graded."),
    article(3, "Cataract registry report", "Intraocular pressure rose after the operation."),
    article(4, "Glaucoma and the intraocular lens", "Pressure was measured."),
    article(5, "Cataract surgery in older adults", "Visual acuity improved."),
    article(6, "Visual acuity after day-case operations", "Surgery for cataract was safe."),
    article(7, "Hip pain in runners", "Pain in the right hip was common."),
    article(8, "Hip joint pain after arthroplasty"),
    article(9, "Pain of the knee and hip"),
    article(10, "Hip fractures", "Chronic pain followed in a third of patients with fractures."),
    article(11, "Immunotherapy for melanoma", "Immune checkpoints were blocked."),
    article(12, "Immunology of the gut", "Imaging of the gut wall."),
    article(13, "Imaging the retina", "The immediate effects were measured."),
    article(14, "Hip knee or ankle pain"),
]
TEXT = {a.pmid: (a.title, " ".join(s.text for s in a.abstract)) for a in ARTICLES}


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def has_all(pmid: int, wanted: list[str], *, title_only: bool = False) -> bool:
    title, abstract = TEXT[pmid]
    present = set(words(title if title_only else f"{title} {abstract}"))
    return all(w in present for w in wanted)


def has_phrase(pmid: int, phrase: str) -> bool:
    pattern = " ".join(words(phrase))
    return any(f" {pattern} " in f" {' '.join(words(field))} " for field in TEXT[pmid])


def near_all(pmid: int, wanted: list[str], gap: int) -> bool:
    """All words in one field, and some order of them in the text with at most ``gap``
    words between each neighbour."""
    for field in TEXT[pmid]:
        tokens = words(field)
        places = [[i for i, t in enumerate(tokens) if t == w] for w in wanted]
        for chosen in product(*places):
            ordered = sorted(chosen)
            if len(set(ordered)) == len(wanted) and all(
                b - a - 1 <= gap for a, b in pairwise(ordered)
            ):
                return True
    return False


def near(pmid: int, first: str, second: str, gap: int, *, title_only: bool = False) -> bool:
    """Both words in one field with at most ``gap`` words between them, either order."""
    fields = TEXT[pmid][:1] if title_only else TEXT[pmid]
    for field in fields:
        tokens = words(field)
        at = {w: [i for i, t in enumerate(tokens) if t == w] for w in (first, second)}
        if any(abs(i - j) - 1 <= gap for i in at[first] for j in at[second]):
            return True
    return False


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalIndex]:
    idx = LexicalIndex.open(tmp_path_factory.mktemp("rules") / "lexical")
    idx.upsert(ARTICLES)
    idx.commit()
    yield idx
    idx.close()


def found(index: LexicalIndex, query: str) -> set[int]:
    result = index.search(query, k=50)
    assert result.total == len(result.hits)
    return {h.pmid for h in result.hits}


# -- implicit AND --------------------------------------------------------------------------


def test_words_beside_a_tagged_term_are_all_required(index: LexicalIndex) -> None:
    expected = {
        p
        for p in TEXT
        if has_all(p, ["cataract"], title_only=True) and has_all(p, ["intraocular", "lens"])
    }
    assert expected == {1}
    assert found(index, "cataract[ti] AND intraocular lens") == expected


def test_words_side_by_side_in_a_set_query_are_anded_and_bind_tighter_than_or() -> None:
    assert parse_query("intraocular lens AND cataract").node == And(
        (Term("intraocular", 0), Term("lens", 12), Term("cataract", 21))
    )
    assert parse_query("glaucoma OR intraocular lens").node == Or(
        (Term("glaucoma", 0), And((Term("intraocular", 12), Term("lens", 24))))
    )
    assert parse_query('"visual acuity" cataract').node == And(
        (Phrase("visual acuity", 0), Term("cataract", 16))
    )


def test_plain_words_without_syntax_stay_ranked_retrieval(index: LexicalIndex) -> None:
    assert isinstance(parse_query("intraocular lens").node, Or)
    assert not parse_query("intraocular lens (IOL) outcomes").set_query  # prose has ( )
    for syntax in ("lens AND iol", "lens[ti]", '"intraocular lens"', "intraoc*", "NOT lens"):
        assert parse_query(syntax).set_query, syntax
    any_word = {p for p in TEXT if has_all(p, ["intraocular"]) or has_all(p, ["lens"])}
    assert found(index, "intraocular lens") == any_word == {1, 2, 3, 4}


def test_anded_words_inside_an_or_alternative_must_all_appear(index: LexicalIndex) -> None:
    both = {p for p in TEXT if has_all(p, ["intraocular", "lens"])}
    glaucoma = {p for p in TEXT if has_all(p, ["glaucoma"])}
    assert found(index, "glaucoma OR intraocular lens") == glaucoma | both == {1, 4}


def test_lower_case_stop_words_between_anded_terms_are_ignored(index: LexicalIndex) -> None:
    assert found(index, "cataract[ti] AND the lens") == found(index, "cataract[ti] AND lens")
    assert found(index, "cataract[ti] AND the lens") == {1, 2}


# -- a tag after several words -------------------------------------------------------------


def test_a_tag_after_several_words_searches_the_phrase(index: LexicalIndex) -> None:
    assert parse_query("cataract surgery[tiab]").node == Tagged(
        "tiab", Phrase("cataract surgery", 0), 16
    )
    expected = {p for p in TEXT if has_phrase(p, "cataract surgery")}
    assert expected == {5}  # 6 has both words, not the phrase
    assert found(index, "cataract surgery[tiab]") == expected
    assert found(index, '"cataract surgery"[tiab]') == expected
    assert found(index, "visual acuity[ti]") == {6}
    assert found(index, "intraocular lens[ti]") == {4}
    assert found(index, "pain of the knee[ti]") == {9}  # stop words stay in a phrase


def test_a_truncated_last_word_after_a_tag_is_a_truncated_phrase(index: LexicalIndex) -> None:
    assert parse_query("cataract surg*[tiab]").node == Tagged(
        "tiab", Prefix("cataract surg", 0), 14
    )
    assert found(index, "cataract surg*[tiab]") == {5}


# -- truncation ----------------------------------------------------------------------------


def test_truncation_finds_every_word_with_the_prefix_in_a_tagged_field(
    index: LexicalIndex,
) -> None:
    prefixed = {p for p in TEXT if any(w.startswith("immun") for w in words(" ".join(TEXT[p])))}
    assert prefixed == {11, 12}
    assert found(index, "immun*") == prefixed
    assert found(index, "immun*[ti]") == {11, 12}
    assert found(index, "immun*[ab]") == {11}
    assert found(index, "immun*[tiab] AND gut") == {12}


def test_truncation_needs_four_characters_before_the_star() -> None:
    assert parse_query("immu*").node == Prefix("immu", 0)
    with pytest.raises(QuerySyntaxError, match="'imm\\*' at 0: PubMed needs at least 4 characters"):
        parse_query("imm*")


# -- proximity -----------------------------------------------------------------------------


@pytest.mark.parametrize("gap", [0, 1, 3, 4])
def test_proximity_finds_the_words_in_any_order_within_n_words(
    index: LexicalIndex, gap: int
) -> None:
    expected = {p for p in TEXT if near(p, "hip", "pain", gap)}
    assert found(index, f'"hip pain"[tiab:~{gap}]') == expected
    in_title = {p for p in TEXT if near(p, "hip", "pain", gap, title_only=True)}
    assert found(index, f'"hip pain"[ti:~{gap}]') == in_title


def test_proximity_examples() -> None:
    # the cases the parametrized test covers: adjacent (7), one word between (8), four
    # words between in reverse order only (9), far apart (10)
    assert [{p for p in TEXT if near(p, "hip", "pain", gap)} for gap in (0, 1, 3, 4)] == [
        {7},
        {7, 8},
        {7, 8, 14},
        {7, 8, 9, 14},
    ]
    assert parse_query('"hip pain"[Title/Abstract:~2]').node == Tagged(
        "tiab", Phrase("hip pain", 0, near=2), 10
    )


@pytest.mark.parametrize("gap", [0, 1, 2, 3])
def test_proximity_of_three_words_bounds_every_gap(index: LexicalIndex, gap: int) -> None:
    """14: "Hip knee or ankle pain": no word between hip and knee, two before pain."""
    expected = {p for p in TEXT if near_all(p, ["pain", "hip", "knee"], gap)}
    assert found(index, f'"pain hip knee"[ti:~{gap}]') == expected
    assert (14 in expected) == (gap >= 2)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ('"hip pain"[mh:~2]', "proximity search works only as [ti:~N], [tiab:~N], [ad:~N]"),
        ("(hip OR knee)[tiab:~2]", "[tiab:~2] needs quoted words before it"),
        ('"a b c d e f"[tiab:~2]', "proximity search takes at most 5 words at 0"),
    ],
)
def test_proximity_errors_say_what_is_wrong(query: str, message: str) -> None:
    with pytest.raises(QuerySyntaxError, match=re.escape(message)):
        parse_query(query)


# -- the bound on a truncation's variations ------------------------------------------------

CONSONANTS = "bcdfghjklmnpqrtvwxz"
VARIANTS = [f"zeta{a}{b}{c}" for a in CONSONANTS for b in CONSONANTS for c in CONSONANTS][:700]


@pytest.fixture(scope="module")
def variants(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalIndex]:
    """700 words starting with ``zeta``, one title each, ``heart`` before them in half."""
    idx = LexicalIndex.open(tmp_path_factory.mktemp("variants") / "lexical")
    idx.upsert(
        article(i + 1, f"heart {word} study" if i % 2 else f"{word} study")
        for i, word in enumerate(VARIANTS)
    )
    idx.commit()
    yield idx
    idx.close()


def test_truncation_searches_at_most_600_variations_and_says_so(variants: LexicalIndex) -> None:
    result = variants.search("zeta*[ti]", k=1)
    assert result.total == MAX_EXPANSIONS == 600  # one article per variation
    assert result.truncated == ("zeta*",)
    assert "zeta*" in truncated_note(result.truncated) and "600" in truncated_note(("x*",))


def test_truncation_within_the_bound_searches_every_variation(variants: LexicalIndex) -> None:
    expected = sum(w.startswith("zetab") for w in VARIANTS)
    assert 50 < expected < 600
    result = variants.search("zetab*[ti]", k=1)
    assert (result.total, result.truncated) == (expected, ())


def test_a_truncated_phrase_finds_more_than_fifty_variations(variants: LexicalIndex) -> None:
    """tantivy's phrase prefix alone would stop at 50 variations of the last word."""
    expected = sum(w.startswith("zetab") for i, w in enumerate(VARIANTS) if i % 2)
    assert expected > 50
    result = variants.search("heart zetab*[ti]", k=1)
    assert (result.total, result.truncated) == (expected, ())
    assert variants.search('"heart zetab*"', k=1).total == expected


# -- on the real records -------------------------------------------------------------------


def xml_files() -> list[Path]:
    root = shared_data("pubmed")
    return sorted(p for p in root.rglob("*") if p.name.endswith((".xml", ".xml.gz")))


def read_with_elementtree() -> dict[int, tuple[str, str, str]]:
    """PMID -> (title, abstract, MeSH and keywords), read without our parser."""
    found: dict[int, tuple[str, str, str]] = {}
    for path in xml_files():
        opener = gzip.open if path.name.endswith(".gz") else open
        try:
            with opener(path, "rb") as handle:
                root = ET.parse(handle).getroot()
        except ET.ParseError:
            continue
        for cit in root.iter("MedlineCitation"):
            texts = [
                " ".join("".join(e.itertext()) for tag in tags for e in cit.iter(tag))
                for tags in (("ArticleTitle",), ("AbstractText",), ("DescriptorName", "Keyword"))
            ]
            found[int(cit.findtext("PMID") or 0)] = (texts[0], texts[1], texts[2])
    return found


def stems(text: str) -> list[str]:
    """Words, a plural ``s`` cut as the index's stemmer does (``lenses`` = ``lens``)."""
    return [w.rstrip("s") if len(w) > 3 else w for w in words(text)]


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LexicalIndex]:
    idx = LexicalIndex.open(tmp_path_factory.mktemp("real") / "lexical")
    idx.upsert(a for path in xml_files() for a in parse_file(path) if isinstance(a, Article))
    idx.commit()
    yield idx
    idx.close()


def test_the_issue_queries_give_pubmeds_sets_on_the_real_records(real: LexicalIndex) -> None:
    records = read_with_elementtree()
    anded = {
        p
        for p, (title, abstract, other) in records.items()
        if "cataract" in stems(title)
        and {"intraocular", "len"} <= set(stems(f"{title} {abstract} {other}"))
    }
    phrase = {
        p
        for p, (title, abstract, _) in records.items()
        if any(" cataract surgery " in f" {' '.join(stems(f))} " for f in (title, abstract))
    }
    assert (len(anded), len(phrase)) == (4, 18)  # PubMed's counts (the OR reading gave 7, 81)
    assert {h.pmid for h in real.search("cataract[ti] AND intraocular lens", k=50).hits} == anded
    assert {h.pmid for h in real.search("cataract surgery[tiab]", k=50).hits} == phrase
