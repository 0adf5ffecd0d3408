"""Citation export: each format exactly as the program that imports it expects.

The articles are built by hand so every awkward case is in plain sight: non-ASCII
names, a CollectiveName author, a structured abstract, LaTeX's special characters and
an article that has nothing but a PMID.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medsearch.errors import UsageError
from medsearch.export import (
    CSV_COLUMNS,
    FORMATS,
    bibtex_keys,
    export,
    medline_field,
    page_ranges,
    suffix_for,
    write_export,
)
from medsearch.records import (
    AbstractSection,
    Article,
    Author,
    MeshHeading,
    PubDate,
    Qualifier,
)
from medsearch.safe_text import csv_cell

FULL = Article(
    pmid=32678530,
    title="Dexamethasone in hospitalized patients with COVID-19.",
    abstract=(
        AbstractSection("Glucocorticoids may modulate lung injury.", "BACKGROUND", "BACKGROUND"),
        AbstractSection("A controlled, open-label trial & more.", "METHODS", "METHODS"),
        AbstractSection("Mortality was lower.", "RESULTS", "RESULTS"),
    ),
    authors=(
        Author("Horby", "Peter", "P", affiliations=("Nuffield Department of Medicine, Oxford.",)),
        Author("Lim", "Wei Shen", "WS"),
        Author(collective_name="RECOVERY Collaborative Group"),
    ),
    journal="The New England journal of medicine",
    journal_abbrev="N Engl J Med",
    issn="1533-4406",
    volume="384",
    issue="8",
    pages="693-704",
    pub_date=PubDate(year=2021, month=2, day=25),
    mesh=(
        MeshHeading("Humans"),
        MeshHeading(
            "COVID-19",
            major=True,
            qualifiers=(Qualifier("drug therapy", major=True), Qualifier("mortality")),
        ),
        MeshHeading("Dexamethasone", qualifiers=(Qualifier("therapeutic use", major=True),)),
    ),
    keywords=("SARS-CoV-2", "corticosteroids"),
    publication_types=("Journal Article", "Randomized Controlled Trial"),
    languages=("eng",),
    article_ids=(("doi", "10.1056/NEJMoa2021436"), ("pmc", "PMC7383595")),
)

NON_ASCII = Article(
    pmid=2,
    title="Ångström-scale imaging of the Øresund cohort",
    authors=(Author("Šimková", "Zuzana", "Z"), Author("Nguyễn", "Thị Minh", "TM")),
    pub_date=PubDate(year=2019),
)

COLLECTIVE_FIRST = Article(
    pmid=3,
    title="The global burden of disease",
    authors=(Author(collective_name="GBD 2019 Diseases and Injuries Collaborators"),),
    pub_date=PubDate(year=2020),
)

BARE = Article(pmid=4)

SPECIALS = Article(
    pmid=5,
    title="Cost & yield of 5% NaCl_2 at $10 #1 {draft} ~x^2 a\\b",
    abstract=(AbstractSection('Line one,\nline "two".\r\nLine three.'),),
    pub_date=PubDate(year=2001),
)


def braces_balance(text: str) -> bool:
    """BibTeX reads a field up to its matching brace: escaped braces must not count."""
    depth, chars = 0, iter(text)
    for char in chars:
        if char == "\\":
            next(chars, None)
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0


def parse_ris(text: str) -> list[dict[str, list[str]]]:
    """A deliberately simple RIS reader, like the line-based ones reference managers use."""
    records: list[dict[str, list[str]]] = []
    current: dict[str, list[str]] = {}
    for line in text.split("\n"):
        if not line:
            continue
        match = re.fullmatch(r"([A-Z][A-Z0-9])  - (.*)", line)
        assert match, f"not a RIS line: {line!r}"
        tag, value = match.groups()
        if tag == "ER":
            records.append(current)
            current = {}
        else:
            current.setdefault(tag, []).append(value)
    assert not current, "record without ER"
    return records


def medline_values(text: str) -> list[tuple[str, str]]:
    """(tag, value) pairs with continuation lines joined back, as PubMed readers do."""
    pairs: list[tuple[str, str]] = []
    for line in text.split("\n"):
        if line.startswith("      "):
            tag, value = pairs[-1]
            pairs[-1] = (tag, f"{value} {line[6:]}")
        elif line:
            match = re.fullmatch(r"([A-Z]{2,4}) *- (.*)", line)
            assert match and line[4:6] == "- ", f"not a MEDLINE line: {line!r}"
            pairs.append((match[1], match[2]))
    return pairs


# -- the catalogue ------------------------------------------------------------------------


def test_formats_and_suffixes() -> None:
    assert FORMATS == ("bibtex", "ris", "nbib", "csv")
    assert [suffix_for(f) for f in FORMATS] == [".bib", ".ris", ".nbib", ".csv"]


def test_an_unknown_format_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="bibtex, ris, nbib, csv"):
        export([FULL], "endnote")
    with pytest.raises(UsageError):
        suffix_for("docx")


@pytest.mark.parametrize("fmt", FORMATS)
def test_write_export_writes_exactly_the_export(fmt: str, tmp_path: Path) -> None:
    path = write_export([FULL, SPECIALS], fmt, tmp_path / f"refs{suffix_for(fmt)}")
    assert path.read_bytes() == export([FULL, SPECIALS], fmt).encode()


# -- BibTeX -------------------------------------------------------------------------------


def test_bibtex_entry() -> None:
    assert export([FULL], "bibtex") == (
        "@article{horby2021dexamethasone,\n"
        "  author = {Horby, Peter and Lim, Wei Shen and {RECOVERY Collaborative Group}},\n"
        "  title = {Dexamethasone in hospitalized patients with {COVID-19}},\n"
        "  journal = {The New England journal of medicine},\n"
        "  year = {2021},\n"
        "  volume = {384},\n"
        "  number = {8},\n"
        "  pages = {693--704},\n"
        "  doi = {10.1056/NEJMoa2021436},\n"
        "  pmid = {32678530},\n"
        "  pmcid = {PMC7383595},\n"
        "  abstract = {BACKGROUND: Glucocorticoids may modulate lung injury. METHODS: A "
        "controlled, open-label trial \\& more. RESULTS: Mortality was lower.}\n"
        "}\n"
    )


def test_bibtex_escapes_latex_specials_and_keeps_braces_balanced() -> None:
    entry = export([SPECIALS], "bibtex")
    title = re.search(r"  title = \{(.*)\},\n", entry)
    assert title is not None
    assert title[1] == (
        r"Cost \& yield of 5\% {NaCl\_2} at \$10 \#1 \{draft\} "
        r"\textasciitilde{}x\textasciicircum{}2 a\textbackslash{}b"
    )
    assert braces_balance(entry)
    assert 'abstract = {Line one, line "two". Line three.}' in entry


def test_bibtex_leaves_out_what_is_missing() -> None:
    assert export([BARE], "bibtex") == "@article{pmid4,\n  pmid = {4}\n}\n"


def test_bibtex_keys_fold_to_ascii_and_skip_leading_stopwords() -> None:
    keys = bibtex_keys([NON_ASCII, COLLECTIVE_FIRST, BARE, Article(pmid=6, title="On tea")])
    assert keys == ["simkova2019angstromscale", "gbd2020global", "pmid4", "anontea"]


def test_bibtex_keys_are_unique_with_letter_suffixes() -> None:
    twins = [FULL, NON_ASCII, FULL, FULL]
    keys = bibtex_keys(twins)
    assert keys == [
        "horby2021dexamethasonea",
        "simkova2019angstromscale",
        "horby2021dexamethasoneb",
        "horby2021dexamethasonec",
    ]
    assert bibtex_keys(twins) == keys  # stable
    many = bibtex_keys([FULL] * 30)
    assert len(set(many)) == 30 and many[26:28] == [
        "horby2021dexamethasoneaa",
        "horby2021dexamethasoneab",
    ]
    entries = export(twins, "bibtex")
    assert re.findall(r"@article\{(\w+),", entries) == keys


def test_bibtex_non_ascii_names_stay_unicode_in_fields() -> None:
    entry = export([NON_ASCII], "bibtex")
    assert "author = {Šimková, Zuzana and Nguyễn, Thị Minh}" in entry
    assert "title = {Ångström-scale imaging of the {Øresund} cohort}" in entry


def test_bibtex_an_and_inside_a_name_does_not_split_it() -> None:
    article = Article(pmid=8, authors=(Author("Smith and Wesson", "Ann"), Author("Lee", "Bo")))
    assert "author = {Smith {and} Wesson, Ann and Lee, Bo}" in export([article], "bibtex")


@pytest.mark.parametrize(
    ("pages", "ranges"),
    [
        ("693-704", [("693", "704")]),
        ("123-9", [("123", "129")]),
        ("1234-56", [("1234", "1256")]),
        ("e123", [("e123", "e123")]),
        ("S12-S15", [("S12", "S15")]),
        ("R45-7", [("R45", "R47")]),
        ("123-9, 145", [("123", "129"), ("145", "145")]),
        ("", []),
    ],
)
def test_medline_page_ranges_are_expanded(pages: str, ranges: list[tuple[str, str]]) -> None:
    assert page_ranges(pages) == ranges


# -- RIS ----------------------------------------------------------------------------------


def test_ris_record() -> None:
    assert export([FULL], "ris") == (
        "TY  - JOUR\n"
        "AU  - Horby, Peter\n"
        "AU  - Lim, Wei Shen\n"
        "AU  - RECOVERY Collaborative Group\n"
        "TI  - Dexamethasone in hospitalized patients with COVID-19.\n"
        "T2  - The New England journal of medicine\n"
        "JO  - The New England journal of medicine\n"
        "JA  - N Engl J Med\n"
        "PY  - 2021\n"
        "DA  - 2021/02/25\n"
        "VL  - 384\n"
        "IS  - 8\n"
        "SP  - 693\n"
        "EP  - 704\n"
        "SN  - 1533-4406\n"
        "DO  - 10.1056/NEJMoa2021436\n"
        "AN  - 32678530\n"
        "UR  - https://pubmed.ncbi.nlm.nih.gov/32678530/\n"
        "AB  - BACKGROUND: Glucocorticoids may modulate lung injury. METHODS: A controlled, "
        "open-label trial & more. RESULTS: Mortality was lower.\n"
        "LA  - eng\n"
        "KW  - SARS-CoV-2\n"
        "KW  - corticosteroids\n"
        "KW  - Humans\n"
        "KW  - COVID-19\n"
        "KW  - Dexamethasone\n"
        "ER  - \n"
    )


def test_ris_round_trips_through_a_line_parser() -> None:
    records = parse_ris(export([FULL, NON_ASCII, COLLECTIVE_FIRST, BARE, SPECIALS], "ris"))
    assert len(records) == 5
    full, non_ascii, collective, bare, specials = records
    assert full["AU"] == ["Horby, Peter", "Lim, Wei Shen", "RECOVERY Collaborative Group"]
    assert (full["TI"], full["AN"], full["DO"]) == ([FULL.title], ["32678530"], [FULL.doi])
    assert non_ascii["AU"] == ["Šimková, Zuzana", "Nguyễn, Thị Minh"]
    assert non_ascii["TI"] == [NON_ASCII.title] and "DA" not in non_ascii
    assert collective["AU"] == ["GBD 2019 Diseases and Injuries Collaborators"]
    assert set(bare) == {"TY", "AN", "UR"}
    assert specials["AB"] == ['Line one, line "two". Line three.']  # one line, always


# -- MEDLINE (nbib) -----------------------------------------------------------------------


def test_nbib_record() -> None:
    assert export([FULL], "nbib") == (
        "PMID- 32678530\n"
        "IS  - 1533-4406\n"
        "VI  - 384\n"
        "IP  - 8\n"
        "DP  - 2021 Feb 25\n"
        "TI  - Dexamethasone in hospitalized patients with COVID-19.\n"
        "PG  - 693-704\n"
        "LID - 10.1056/NEJMoa2021436 [doi]\n"
        "AB  - BACKGROUND: Glucocorticoids may modulate lung injury. METHODS: A controlled,\n"
        "      open-label trial & more. RESULTS: Mortality was lower.\n"
        "FAU - Horby, Peter\n"
        "AU  - Horby P\n"
        "AD  - Nuffield Department of Medicine, Oxford.\n"
        "FAU - Lim, Wei Shen\n"
        "AU  - Lim WS\n"
        "CN  - RECOVERY Collaborative Group\n"
        "LA  - eng\n"
        "PT  - Journal Article\n"
        "PT  - Randomized Controlled Trial\n"
        "TA  - N Engl J Med\n"
        "JT  - The New England journal of medicine\n"
        "MH  - Humans\n"
        "MH  - *COVID-19/*drug therapy/mortality\n"
        "MH  - Dexamethasone/*therapeutic use\n"
        "OT  - SARS-CoV-2\n"
        "OT  - corticosteroids\n"
        "PMC - PMC7383595\n"
        "AID - 10.1056/NEJMoa2021436 [doi]\n"
        "SO  - N Engl J Med. 2021 Feb 25;384(8):693-704. doi: 10.1056/NEJMoa2021436.\n"
    )


def test_nbib_records_are_separated_by_a_blank_line() -> None:
    text = export([NON_ASCII, BARE], "nbib")
    assert text.count("\n\nPMID- ") == 1
    assert medline_values(text.split("\n\n")[1]) == [("PMID", "4")]


def test_nbib_wraps_long_values_like_pubmed() -> None:
    """PubMed fills each line with up to 81 characters of text after the 6-column tag."""
    words = " ".join(f"word{i}" for i in range(60))
    lines = medline_field("AB", words)
    assert len(lines) > 3
    assert all(len(line) <= 87 for line in lines)
    assert all(
        len(line) + len(next_line[6:].split(" ")[0]) + 1 > 87
        for line, next_line in itertools.pairwise(lines)
    )  # filled, not early
    assert lines[0].startswith("AB  - ")
    assert all(line.startswith("      ") and line[6] != " " for line in lines[1:])
    assert " ".join([lines[0][6:], *(line[6:] for line in lines[1:])]) == words


def test_nbib_never_breaks_a_long_word() -> None:
    url = "https://example.org/" + "x" * 100
    assert medline_field("AB", f"See {url} now") == ["AB  - See", f"      {url}", "      now"]


def test_nbib_parses_back_into_the_same_values() -> None:
    values = medline_values(export([FULL, NON_ASCII], "nbib"))
    assert ("AB", FULL.abstract_text.replace("\n", " ")) in values
    assert ("FAU", "Šimková, Zuzana") in values and ("AU", "Nguyễn TM") in values
    assert values.count(("PMID", "32678530")) == 1


# -- CSV ----------------------------------------------------------------------------------


def test_csv_header_and_round_trip() -> None:
    text = export([FULL, SPECIALS, BARE], "csv")
    assert text.split("\r\n", 1)[0] == ",".join(CSV_COLUMNS)
    assert CSV_COLUMNS == (
        "pmid",
        "title",
        "authors",
        "journal",
        "year",
        "volume",
        "issue",
        "pages",
        "doi",
        "pmcid",
        "abstract",
        "notice",
    )
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == 3
    full, specials, bare = rows
    assert full["authors"] == "Horby P; Lim WS; RECOVERY Collaborative Group"
    assert (full["year"], full["pages"], full["pmcid"]) == ("2021", "693-704", "PMC7383595")
    assert full["abstract"] == FULL.abstract_text
    assert specials["title"] == SPECIALS.title
    assert specials["abstract"] == 'Line one,\nline "two".\r\nLine three.'
    assert bare == {column: "" for column in CSV_COLUMNS} | {"pmid": "4"}


def test_csv_of_nothing_is_just_the_header() -> None:
    assert export([], "csv") == ",".join(CSV_COLUMNS) + "\r\n"


# -- nothing breaks export ----------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(title=st.text(), abstract=st.text(), name=st.text(), label=st.none() | st.text())
def test_export_never_raises_and_stays_well_formed(
    title: str, abstract: str, name: str, label: str | None
) -> None:
    article = Article(
        pmid=7,
        title=title,
        abstract=(AbstractSection(abstract, label),),
        authors=(Author(last_name=name, fore_name=name), Author(collective_name=name)),
        pub_date=PubDate(year=2024),
    )
    documents = {fmt: export([article, article], fmt) for fmt in FORMATS}
    assert braces_balance(documents["bibtex"])
    assert len(parse_ris(documents["ris"])) == 2
    assert medline_values(documents["nbib"])[0] == ("PMID", "7")
    rows = list(csv.DictReader(io.StringIO(documents["csv"], newline="")))
    assert [r["title"] for r in rows] == [csv_cell(title)] * 2  # formulas neutralised
    assert rows[0]["abstract"] == csv_cell(article.abstract_text)
