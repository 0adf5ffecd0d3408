"""PubMed's fields as PubMed defines them (issue 39, "What users get" 2).

The specification is PubMed's help page (https://pubmed.ncbi.nlm.nih.gov/help/):
``[tiab]`` is title, abstract, other abstracts and author keywords; ``[tw]`` the text
words (MeSH, publication types, substance names, personal names as subject, corporate
authors, secondary source IDs, comment/correction notes besides); ``[all]`` and an
untagged word every field, authors and journals too; the date tags read the record's
own dates. Each test parses real XML (or MEDLINE text) with our parsers, indexes it in a
real tantivy index and asks the query as a user types it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.medline import parse_file as parse_medline
from ingest.pubmed_xml import parse_file
from medsearch.errors import QuerySyntaxError
from medsearch.field_keys import print_span
from medsearch.index.lexical.index import LexicalIndex
from medsearch.query import YearRange, parse_query
from medsearch.query.field_notes import ACTION_NOTE, SUBHEADING_NOTE, mesh_note
from medsearch.records import Article, Filters


def pubmed_article(pmid: int, inner: str, *, data: str = "", article: str = "") -> str:
    return f"""
<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM">
    <PMID Version="1">{pmid}</PMID>
    {inner}
    <Article PubModel="Print-Electronic">
      <Journal><JournalIssue><PubDate><Year>2019</Year></PubDate></JournalIssue>
        <Title>Insect biochemistry and molecular biology</Title>
        <ISOAbbreviation>Insect Biochem. Mol. Biol.</ISOAbbreviation></Journal>
      <ArticleTitle>Record {pmid}</ArticleTitle>
      {article}
      <Language>eng</Language>
      <PublicationTypeList><PublicationType>Journal Article</PublicationType>
      </PublicationTypeList>
    </Article>
    <MedlineJournalInfo><MedlineTA>Insect Biochem Mol Biol</MedlineTA></MedlineJournalInfo>
  </MedlineCitation>
  <PubmedData>{data}</PubmedData>
</PubmedArticle>"""


RICH = pubmed_article(
    1,
    """<DateCompleted><Year>2019</Year><Month>10</Month><Day>02</Day></DateCompleted>
    <DateRevised><Year>2020</Year><Month>03</Month><Day>15</Day></DateRevised>
    <ChemicalList>
      <Chemical><RegistryNumber>0</RegistryNumber>
        <NameOfSubstance UI="D1">Insect Proteins</NameOfSubstance></Chemical>
      <Chemical><RegistryNumber>EC 1.14.18.1</RegistryNumber>
        <NameOfSubstance UI="D2">pro-phenoloxidase</NameOfSubstance></Chemical>
    </ChemicalList>
    <CommentsCorrectionsList><CommentsCorrections RefType="CommentIn">
      <RefSource>Insect Biochem. 2020</RefSource><PMID Version="1">99</PMID>
      <Note>Verbatim quibble</Note></CommentsCorrections></CommentsCorrectionsList>
    <PersonalNameSubjectList><PersonalNameSubject><LastName>Freud</LastName>
      <ForeName>Sigmund</ForeName></PersonalNameSubject></PersonalNameSubjectList>
    <OtherAbstract Type="Publisher" Language="spa"><AbstractText>Resumen sobre
      hemolinfa.</AbstractText></OtherAbstract>
    <KeywordList Owner="NOTNLM"><Keyword>alirocumab</Keyword></KeywordList>
    <MeshHeadingList><MeshHeading><DescriptorName>Vertigo</DescriptorName>
      <QualifierName>rehabilitation</QualifierName></MeshHeading></MeshHeadingList>""",
    article="""<Abstract><AbstractText>Melanization in moths.</AbstractText></Abstract>
      <AuthorList><Author><LastName>Gorostiaga</LastName><ForeName>Esteban</ForeName>
        <Initials>E</Initials></Author>
        <Author><CollectiveName>Moth Consortium</CollectiveName></Author></AuthorList>
      <DataBankList><DataBank><DataBankName>ClinicalTrials.gov</DataBankName>
        <AccessionNumberList><AccessionNumber>NCT00585195</AccessionNumber>
        </AccessionNumberList></DataBank></DataBankList>
      <ArticleDate DateType="Electronic"><Year>2019</Year><Month>06</Month>
        <Day>28</Day></ArticleDate>""",
    data="""<History>
      <PubMedPubDate PubStatus="received"><Year>2019</Year><Month>04</Month><Day>17</Day>
      </PubMedPubDate>
      <PubMedPubDate PubStatus="entrez"><Year>2019</Year><Month>08</Month><Day>08</Day>
        <Hour>6</Hour></PubMedPubDate>
      <PubMedPubDate PubStatus="pubmed"><Year>2019</Year><Month>08</Month><Day>09</Day>
      </PubMedPubDate>
      <PubMedPubDate PubStatus="medline"><Year>2019</Year><Month>10</Month><Day>03</Day>
      </PubMedPubDate></History>""",
)
PLAIN = pubmed_article(
    2,
    "",
    article="""<Abstract><AbstractText>Moths and their hemolymph.</AbstractText></Abstract>
      <AuthorList><Author><LastName>Smith</LastName><Initials>J</Initials></Author>
      </AuthorList>""",
)


@pytest.fixture(scope="module")
def articles(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Article]:
    path = tmp_path_factory.mktemp("xml") / "fields.xml"
    path.write_text(f"<PubmedArticleSet>{RICH}{PLAIN}</PubmedArticleSet>")
    return {a.pmid: a for a in parse_file(path) if isinstance(a, Article)}


@pytest.fixture(scope="module")
def index(
    tmp_path_factory: pytest.TempPathFactory, articles: dict[int, Article]
) -> Iterator[LexicalIndex]:
    found = LexicalIndex.open(tmp_path_factory.mktemp("lexical") / "index")
    found.upsert(list(articles.values()))
    found.commit()
    yield found
    found.close()


def pmids(index: LexicalIndex, query: str) -> set[int]:
    return {h.pmid for h in index.search(query, k=10, snippets=0).hits}


def test_the_parser_reads_what_pubmeds_fields_search(articles: dict[int, Article]) -> None:
    rich = articles[1]
    assert rich.other_abstracts == ("Resumen sobre hemolinfa.",)
    assert dict(rich.record_dates) == {
        "datecompleted": 20191002,
        "daterevised": 20200315,
        "received": 20190417,
        "entrez": 20190808,
        "pubmed": 20190809,
        "medline": 20191003,
    }
    assert rich.registry_numbers == ("EC 1.14.18.1",)  # "0": no number assigned
    assert rich.personal_subjects == ("Freud Sigmund",)
    assert rich.secondary_sources == ("ClinicalTrials.gov/NCT00585195",)
    assert rich.corrections[0].note == "Verbatim quibble"
    assert Article.from_dict(rich.to_dict()) == rich


def test_a_record_stored_before_these_fields_still_reads(articles: dict[int, Article]) -> None:
    stored = articles[1].to_dict()
    for key in (
        "other_abstracts",
        "record_dates",
        "registry_numbers",
        "personal_subjects",
        "secondary_sources",
    ):
        del stored[key]
    for correction in stored["corrections"]:
        del correction["note"]  # written only where a link has one
    old = Article.from_dict(stored)
    assert (old.other_abstracts, old.record_dates, old.corrections[0].note) == ((), (), None)
    assert old.title == articles[1].title


def test_medline_text_gives_the_same_fields(tmp_path: Path) -> None:
    path = tmp_path / "record.nbib"
    path.write_text(
        "PMID- 7\nDCOM- 20191002\nLR  - 20200315\nTI  - Moths.\n"
        "AB  - Melanization.\nOAB - Resumen sobre hemolinfa.\n"
        "RN  - EC 1.14.18.1 (pro-phenoloxidase)\nRN  - 0 (Insect Proteins)\n"
        "PS  - Freud Sigmund\nSI  - ClinicalTrials.gov/NCT00585195\n"
        "EDAT- 2019/08/09 06:00\nMHDA- 2019/10/03 06:00\nCRDT- 2019/08/08 06:00\n"
        "PHST- 2019/04/17 00:00 [received]\nPHST- 2019/08/09 06:00 [pubmed]\n"
        "DP  - 2019\n\n"
    )
    (record,) = list(parse_medline(path))
    assert record.other_abstracts == ("Resumen sobre hemolinfa.",)
    assert record.registry_numbers == ("EC 1.14.18.1",)
    assert record.chemicals == ("pro-phenoloxidase", "Insect Proteins")
    assert (record.personal_subjects, record.secondary_sources) == (
        ("Freud Sigmund",),
        ("ClinicalTrials.gov/NCT00585195",),
    )
    assert dict(record.record_dates) == {
        "datecompleted": 20191002,
        "daterevised": 20200315,
        "entrez": 20190808,
        "pubmed": 20190809,
        "medline": 20191003,
        "received": 20190417,
    }


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # [tiab]: title, abstract, other abstracts, author keywords
        ("alirocumab[tiab]", {1}),
        ("hemolinfa[tiab]", {1}),
        ("hemolinfa[ab]", set()),  # [ab] is the abstract alone
        ("moths[tiab]", {1, 2}),
        # [tw]: text words
        ("pro-phenoloxidase[tw]", {1}),
        ("Insect Proteins[Text Word]", {1}),
        ("journal article[tw]", {1, 2}),  # a publication type
        ("freud[tw]", {1}),  # a personal name as subject
        ("moth consortium[tw]", {1}),  # a corporate author
        ("NCT00585195[tw]", {1}),  # a secondary source ID
        ("quibble[tw]", {1}),  # a comment/correction note
        ("rehabilitation[tw]", {1}),  # a MeSH subheading
        ("gorostiaga[tw]", set()),  # an author is not a text word
        ("insect biochem[tw]", set()),  # nor a journal
        # [all] and untagged: every field
        ("gorostiaga[all]", {1}),
        ("gorostiaga", {1}),
        ("Esteban[All Fields]", {1}),
        ("insect biochem mol biol[all]", {1, 2}),
        ("smith AND hemolymph", {2}),
        ("freud", {1}),
        # [ptyp], [rn]
        ("journal article[ptyp]", {1, 2}),
        ("EC 1.14.18.1[rn]", {1}),
        ("ec 1.14.18.1[EC/RN Number]", {1}),
        ("0[rn]", set()),
        # heading/subheading, spaced as librarians type it
        ('"Vertigo /rehabilitation"[mh]', {1}),
        ("Vertigo / rehabilitation[mh]", {1}),
        ('"vertigo/ Rehabilitation"[MeSH Terms]', {1}),
    ],
)
def test_pubmeds_text_fields(index: LexicalIndex, query: str, expected: set[int]) -> None:
    assert pmids(index, query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("2019/08/08[crdt]", {1}),  # the entrez date
        ("2019/08/08[Date - Create]", {1}),
        ("2019/08/09[edat]", {1}),  # the pubmed date
        ("2019/08/01:2019/08/31[Date - Entrez]", {1}),
        ("2019/10[mhda]", {1}),
        ("2019/10/03[Date - MeSH]", {1}),
        ("2019/10/02[dcom]", {1}),
        ("2019[Date - Completion]", {1}),
        ("2020/03[lr]", {1}),
        ("2019[lr]", set()),
        ("2020[Date - Last Revision]", {1}),
        ("2019/06/28[epdat]", {1}),
        ("2019/06[Date - Electronic Publication]", {1}),
        # print "2019" alone, electronic 2019/06/28: the record is dated 2019/06/28
        ("2019/08[ppdat]", {2}),
        ("2019/06[ppdat]", {1, 2}),  # a year alone, without one, is the whole year
        ("2019/08[dp]", {2}),
        ("2019/06[dp]", {1, 2}),
        ("2019[dp]", {1, 2}),
        ("2019[Date - Print Publication]", {1, 2}),
        ("moths[tiab] AND 2019/08[crdt]", {1}),
    ],
)
def test_date_tags_read_the_record_dates(
    index: LexicalIndex, query: str, expected: set[int]
) -> None:
    assert pmids(index, query) == expected


def test_a_year_alone_is_the_electronic_date_in_that_year(articles: dict[int, Article]) -> None:
    assert print_span(articles[1]) == (20190628, 20190628)
    assert print_span(articles[2]) == (20190000, 20191231)  # no electronic date: the year
    august = Filters(date_from=20190801, date_to=20190831)
    assert (august.accepts(articles[1]), august.accepts(articles[2])) == (False, True)


def test_a_date_tag_is_a_range_node_that_names_it() -> None:
    node = parse_query("2015/01/01:2016/12/31[Date - Create]").node
    assert node == YearRange(2015, 2016, 0, 20150101, 20161231, tag="crdt")
    lifted = parse_query("moths AND 2015[dp]")
    assert lifted.filters.date_from == 20150000  # [dp] alone becomes a filter
    kept = parse_query("moths AND 2015[edat]")
    assert kept.filters.empty and isinstance(kept.node, object)
    with pytest.raises(QuerySyntaxError, match=r"bad date '2015/13' for \[lr\]"):
        parse_query("2015/13[lr]")
    with pytest.raises(QuerySyntaxError, match=r"truncation \(\*\) does not work with \[rn\]"):
        parse_query("53-59*[rn]")


def test_pubmeds_other_tag_spellings() -> None:
    typed, short = parse_query("review[ptyp]"), parse_query("review[pt]")
    assert (typed.node, typed.filters) == (short.node, short.filters)
    assert parse_query("Vertigo[mesh:no exp]").node == parse_query("Vertigo[mh:noexp]").node
    assert parse_query("x[tw]").node != parse_query("x[all]").node


def test_what_runs_without_mesh_data_is_said() -> None:
    assert mesh_note(parse_query("therapy[sh]")) == SUBHEADING_NOTE
    assert mesh_note(parse_query("therapy[sh:noexp]")) is None
    assert mesh_note(parse_query("anti-bacterial agents[pa]")) == ACTION_NOTE
    assert mesh_note(parse_query("review[tw]")) is None


def test_the_search_notes_each_field_that_runs_without_mesh_data(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from medsearch.cli import main

    source = tmp_path / "fields.xml"
    source.write_text(f"<PubmedArticleSet>{RICH}{PLAIN}</PubmedArticleSet>")
    home = str(tmp_path / "home")
    runner = CliRunner()
    ingested = runner.invoke(main, ["--home", home, "ingest", str(source), "--no-encode"])
    assert ingested.exit_code == 0, ingested.output
    found = runner.invoke(
        main, ["--home", home, "search", "rehabilitation[sh] OR Insect Proteins[pa]", "--json"]
    )
    assert found.exit_code == 0, found.output
    data = json.loads(found.stdout)
    assert [h["pmid"] for h in data["hits"]] == [1] and data["total"] == 1
    assert SUBHEADING_NOTE in data["notes"] and ACTION_NOTE in data["notes"]
