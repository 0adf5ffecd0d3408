"""PubMed's MEDLINE format (``.nbib``, MEDLINE ``.txt``): read into the XML parser's records.

A researcher with a PubMed export and no baseline ingests the export as it is. The
records must be the ones the XML of the same citations gives, as far as the format
carries them, and ``medsearch export --format nbib`` followed by ``medsearch ingest``
must give the stored records back.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, shared_data

from ingest import medline
from ingest.pubmed_xml import parse_file as parse_xml
from medsearch.cli import main
from medsearch.errors import ParseError
from medsearch.export import to_nbib
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths
from medsearch.records import (
    AbstractSection,
    Article,
    Author,
    Grant,
    MeshHeading,
    PubDate,
    Qualifier,
)
from medsearch.store import Store

EXPORT = FIXTURES / "pubmed_export.nbib"


def records(path: Path) -> dict[int, Article]:
    return {a.pmid: a for a in medline.parse_file(path)}


@pytest.fixture(scope="module")
def export() -> dict[int, Article]:
    return records(EXPORT)


def cli(home: Path, *args: str | Path) -> tuple[int, dict[str, object], str]:
    result = CliRunner().invoke(main, ["--home", str(home), *map(str, args)])
    try:
        summary = json.loads(result.stdout)
    except ValueError:
        summary = {}
    return result.exit_code, summary, result.stderr


# --- the fields of a PubMed export ------------------------------------------------------


def test_a_full_record_gives_every_field_the_xml_would(export: dict[int, Article]) -> None:
    article = export[35000001]
    assert article.title == (
        "Metformin and the risk of dementia in older adults with type 2 diabetes:"
        " a nationwide cohort study."
    )
    assert [s.label for s in article.abstract] == [
        "BACKGROUND",
        "METHODS",
        "RESULTS",
        "CONCLUSIONS",
    ]
    assert article.abstract[2].text == (
        "Dementia occurred in 2,109 participants (incidence 8.4 vs 10.2 per 1,000"
        " person-years; HR 0.82, 95% CI 0.75-0.90). The association held in users with eGFR"
        " below 60 mL/min/1.73 m(2)."
    )
    assert article.authors[0] == Author(
        "Müller",
        "Jürgen",
        "J",
        None,
        (
            "Department of Geriatric Medicine, Charité - Universitätsmedizin Berlin, Berlin,"
            " Germany.",
            "German Center for Diabetes Research (DZD), München-Neuherberg, Germany.",
        ),
    )
    assert [a.display for a in article.authors] == ["Müller J", "Ødegård SK", "García-López MJ"]
    assert article.authors[2].fore_name == "María José" and not article.authors[2].affiliations
    assert (article.journal, article.journal_abbrev) == (
        "Metabolism: clinical and experimental",
        "Metabolism",
    )
    assert (article.issn, article.volume, article.issue, article.pages) == (
        "1532-8600",
        "128",
        None,
        "155-64",
    )
    assert article.pub_date == PubDate(2022, 3, 15)
    assert article.journal_citation == "Metabolism. 2022 Mar 15;128:155-64."
    assert article.mesh[2] == MeshHeading(
        "Dementia",
        major=True,
        qualifiers=(Qualifier("epidemiology"), Qualifier("prevention & control")),
    )
    assert article.mesh[-1] == MeshHeading(  # a heading wrapped onto a second line
        "Sulfonylurea Compounds",
        qualifiers=(Qualifier("adverse effects"), Qualifier("therapeutic use", major=True)),
    )
    assert [m.descriptor for m in article.mesh if m.is_major] == [
        "Dementia",
        "Diabetes Mellitus, Type 2",
        "Hypoglycemic Agents",
        "Metformin",
        "Sulfonylurea Compounds",
    ]
    assert article.keywords == ("Alzheimer disease", "Cognitive decline", "Metformin")
    assert article.publication_types == ("Journal Article", "Research Support, N.I.H., Extramural")
    assert article.languages == ("eng",)
    assert (article.doi, article.pmcid) == ("10.1016/j.metabol.2022.155104", "PMC8912345")
    assert ("pii", "S0026-0495(22)00004-X") in article.article_ids
    assert article.chemicals == (
        "Hypoglycemic Agents",
        "Metformin",
        "AMP-Activated Protein Kinases (AMPK)",
    )
    assert article.kind == "article" and article.version == 1


def test_the_journal_keys_grants_and_status_are_read_as_the_xml_gives_them(
    export: dict[int, Article],
) -> None:
    """TA is the MedlineTA, every IS an ISSN ([ta] and --journal take each), GR a grant
    ([gr]) and STAT the citation status ([sb] medline / pubmed not medline)."""
    article = export[35000001]
    assert (article.medline_ta, article.issns) == ("Metabolism", ("1532-8600", "0026-0495"))
    assert article.grants == (Grant("R01 AG012345", "AG", "NIA NIH HHS", "United States"),)
    assert article.status == "MEDLINE"
    again = export[35000004]  # the same ISSN as electronic and linking: once
    assert (again.issns, again.status) == (("1471-2458",), "In-Process")
    assert (export[35000002].status, export[35000002].grants) == ("Publisher", ())


def test_a_grant_is_read_from_its_end_as_numbers_may_hold_slashes(tmp_path: Path) -> None:
    lines = [
        "089396/Wellcome Trust/United Kingdom",
        "MR/N003284/1/Medical Research Council/United Kingdom",
        "G0600338/MRC_/Medical Research Council/United Kingdom",
        "P30 CA046934/CA/NCI NIH HHS/United States",
    ]
    text = "PMID- 1\nTI  - A title.\n" + "".join(f"GR  - {line}\n" for line in lines)
    assert records(write(tmp_path, text))[1].grants == (
        Grant("089396", None, "Wellcome Trust", "United Kingdom"),
        Grant("MR/N003284/1", None, "Medical Research Council", "United Kingdom"),
        Grant("G0600338", "MRC_", "Medical Research Council", "United Kingdom"),
        Grant("P30 CA046934", "CA", "NCI NIH HHS", "United States"),
    )


def test_a_record_without_abstract_keeps_its_collective_author_and_non_ascii_title(
    export: dict[int, Article],
) -> None:
    article = export[35000002]
    assert article.title == "β-Lactam allergy labels and α-gal syndrome in tick-endemic regions."
    assert article.abstract == () and article.mesh == ()
    assert [a.display for a in article.authors] == ["Nakamura H", "ALLERGY-NET Study Group"]
    assert article.authors[0].affiliations == (
        "Division of Allergy and Immunology, Tōhoku University, Sendai, Japan.",
    )
    assert str(article.pub_date) == "2021 Nov-Dec" and article.year == 2021
    assert article.pub_date.month is None  # two months: as the XML's MedlineDate gives it


def test_an_older_record_with_initials_only_and_one_affiliation_for_the_record(
    export: dict[int, Article],
) -> None:
    article = export[9603456]
    assert [(a.last_name, a.fore_name, a.initials) for a in article.authors] == [
        ("Girerd", None, "X"),
        ("Hanon", None, "O"),
        ("Le Heuzey", None, "JY"),
    ]
    # as the XML's article-level <Affiliation>: the first author's
    assert article.authors[0].affiliations == ("Service de Cardiologie, Hôpital Broussais, Paris.",)
    assert article.pub_date == PubDate(1998, season="Spring")
    assert article.languages == ("fre",)
    assert article.title == "[Treatment of isolated systolic hypertension in the elderly]."
    # a colon inside an unstructured abstract is no section label
    assert [s.label for s in article.abstract] == [None]


def test_capitalised_labels_split_a_structured_abstract(export: dict[int, Article]) -> None:
    article = export[35000004]
    assert [s.label for s in article.abstract] == [
        "Background",
        "Methods",
        "Results",
        "Conclusions",
    ]
    assert article.abstract[1] == AbstractSection(
        "Survey of 1,204 adults aged 75+ and interviews with 30 of them.", "Methods"
    )
    assert [a.display for a in article.authors] == ["O'Brien A", "Ní Bhriain S"]
    assert article.pub_date == PubDate(2023)


def test_a_book_chapter_is_an_article_of_kind_book(export: dict[int, Article]) -> None:
    chapter = export[35000005]
    assert chapter.kind == "book"
    assert chapter.title == "Chronic Kidney Disease in Adults: Assessment and Management."
    assert chapter.journal == "Renal Care Guidelines"
    assert [a.display for a in chapter.authors] == ["Lewis R"]  # the editor is no author


def write(tmp_path: Path, text: str, name: str = "x.nbib") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("abstract", "labels"),
    [
        ("Osteoporosis is common: one woman in three. It is treatable.", [None]),
        ("BACKGROUND: HIV: a review. RESULTS: Fewer deaths.", ["BACKGROUND", "RESULTS"]),
        ('AIMS: To test "x." METHODS: A trial.', ["AIMS", "METHODS"]),
        ("Aim: one phrase alone, as a sentence might start.", [None]),
        ("Plain text without any label at all.", [None]),
    ],
)
def test_sections_are_split_only_at_labels(
    tmp_path: Path, abstract: str, labels: list[str | None]
) -> None:
    [article] = medline.parse_file(write(tmp_path, f"PMID- 1\nTI  - T\nAB  - {abstract}\n"))
    assert [s.label for s in article.abstract] == labels
    assert (
        " ".join(f"{s.label}: {s.text}" if s.label else s.text for s in article.abstract)
        == abstract
    )


def test_records_without_a_blank_line_between_them_are_told_apart_by_pmid(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "PMID- 1\nTI  - First\nPMID- 2\nTI  - Second\n")
    assert [(a.pmid, a.title) for a in medline.parse_file(path)] == [(1, "First"), (2, "Second")]


def test_the_pmid_follows_the_xml_parsers_rule(tmp_path: Path) -> None:
    path = write(tmp_path, "PMID- 12ab\nTI  - Not a PMID\n\nPMID- 7\nTI  - Kept\n")
    assert [a.pmid for a in medline.parse_file(path)] == [7]


# --- real exports -----------------------------------------------------------------------


def test_real_pubmed_exports_give_every_pmid() -> None:
    folder = shared_data("pubmed", "biopython-1.88")
    for path in sorted(folder.glob("pubmed_result*.txt")):
        expected = [int(p) for p in re.findall(r"^PMID- (\d+)", path.read_text(), re.MULTILINE)]
        parsed = list(medline.parse_file(path))
        assert [a.pmid for a in parsed] == expected
        assert all(a.title and a.journal and a.authors and a.year for a in parsed)
    article = records(folder / "pubmed_result2.txt")[16403221]
    assert [s.label for s in article.abstract] == ["BACKGROUND", "RESULTS", "CONCLUSION"]
    assert (article.doi, article.pmcid, article.issn) == (
        "10.1186/1471-2105-7-10",
        "PMC1373603",
        "1471-2105",
    )
    assert (article.medline_ta, article.issns, article.status) == (
        "BMC Bioinformatics",
        ("1471-2105",),
        "MEDLINE",
    )


# --- export -> ingest ---------------------------------------------------------------------


def carried(article: Article) -> dict[str, object]:
    """What the MEDLINE format carries of a record (no UIs, no section categories, no
    PMID version; a fore name only where the record has one)."""
    return {
        "pmid": article.pmid,
        "title": article.title,
        "abstract": article.abstract_text.replace("\n", " "),
        "authors": [
            (a.last_name, a.initials, a.collective_name, a.affiliations) for a in article.authors
        ],
        "fore names": [a.fore_name for a in article.authors if a.fore_name],
        "journal": (article.journal, article.journal_abbrev, article.issn),
        "issue": (article.volume, article.issue, article.pages),
        "date": (str(article.pub_date), article.year),
        "mesh": [
            (m.descriptor, m.major, [(q.name, q.major) for q in m.qualifiers]) for m in article.mesh
        ],
        "terms": (article.keywords, article.publication_types, article.languages),
        "ids": (article.doi, article.pmcid),
    }


def round_trip(articles: list[Article], tmp_path: Path) -> dict[int, Article]:
    return records(write(tmp_path, to_nbib(articles), "export.nbib"))


def test_export_then_read_gives_back_what_the_format_carries(tmp_path: Path) -> None:
    articles = [a for a in parse_xml(FIXTURES / "tricky_articles.xml") if isinstance(a, Article)]
    back = round_trip(articles, tmp_path)
    assert [carried(back[a.pmid]) for a in articles] == [carried(a) for a in articles]
    labelled = [a for a in articles if any(s.label for s in a.abstract)]
    assert labelled and all(
        [(s.label, s.text) for s in back[a.pmid].abstract]
        == [(s.label, s.text) for s in a.abstract]
        for a in labelled
    )


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_every_real_record_survives_export_and_read(tmp_path: Path) -> None:
    root = shared_data("pubmed")
    articles = [
        a
        for path in sorted(root.rglob("*.xml*"))
        for a in parse_xml(path)
        if isinstance(a, Article)
    ]
    assert len(articles) > 900
    back = round_trip(articles, tmp_path)
    assert [carried(back[a.pmid]) for a in articles] == [carried(a) for a in articles]
    sections_differ = {
        a.pmid
        for a in articles
        if [(s.label, s.text) for s in back[a.pmid].abstract]
        != [(s.label, s.text) for s in a.abstract]
    }
    # 31388316-9 hold "Background: ... Methods: ..." in one unlabelled AbstractText (the
    # format cannot tell it from four sections); 26253018's last label follows "(".
    assert sections_differ == {31388316, 31388317, 31388318, 31388319, 26253018}


def test_the_export_command_and_ingest_round_trip_through_the_store(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    code, _, err = cli(first, "ingest", FIXTURES / "tricky_articles.xml", "--no-encode", "--json")
    assert code == 0, err
    with Store(Paths(first).store) as store:
        stored = {a.pmid: a for batch in store.iter_articles(batch=100) for a in batch}
    exported = tmp_path / "export.nbib"
    code, _, err = cli(
        first, "export", *map(str, sorted(stored)), "--format", "nbib", "-o", exported
    )
    assert code == 0, err
    code, summary, err = cli(second, "ingest", exported, "--no-encode", "--json", "-j", "2")
    assert code == 0, err
    assert (summary["ingested"], summary["articles"]) == (1, len(stored))
    with Store(Paths(second).store) as store:
        again = {a.pmid: a for batch in store.iter_articles(batch=100) for a in batch}
        [entry] = store.files.entries()
    assert entry.name == "export.nbib" and entry.status == "done"
    assert [carried(again[p]) for p in sorted(stored)] == [
        carried(stored[p]) for p in sorted(stored)
    ]


# --- the ingest pipeline ------------------------------------------------------------------


def test_an_export_is_ingested_and_searchable_and_a_txt_export_is_known_by_content(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    shutil.copyfile(EXPORT, folder / "citations.nbib")
    shutil.copyfile(
        shared_data("pubmed", "biopython-1.88", "pubmed_result1.txt"), folder / "pubmed_result1.txt"
    )
    (folder / "notes.txt").write_text("PMIDs to read later: 35000001\n", encoding="utf-8")
    home = tmp_path / "home"
    code, summary, err = cli(home, "ingest", folder, "--no-encode", "--json", "-j", "2")
    assert code == 0, err
    assert (summary["ingested"], summary["articles"], summary["books"]) == (2, 6, 1)
    assert summary["ignored_files"] == [
        {"file": str(folder / "notes.txt"), "reason": "not PubMed XML"}
    ]
    index = LexicalIndex.open(Paths(home).lexical_index, create=False)
    try:
        assert {h.pmid for h in index.search("metformin dementia", k=10).hits} == {35000001}
        assert {h.pmid for h in index.search("toolkits", k=10).hits} == {12230038}
    finally:
        index.close()
    code, again, _ = cli(home, "ingest", folder, "--no-encode", "--json")
    assert code == 0 and (again["skipped"], again["ingested"]) == (2, 0)


def test_a_malformed_export_fails_alone_naming_the_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "exports"
    folder.mkdir()
    shutil.copyfile(EXPORT, folder / "good.nbib")
    lines = EXPORT.read_text(encoding="utf-8").splitlines()
    lines[6] = "this line lost its tag"
    bad = write(folder, "\n".join(lines) + "\n", "bad.nbib")
    home = tmp_path / "home"
    code, summary, _ = cli(home, "ingest", folder, "--no-encode", "--json")
    assert code == 1
    assert summary["failures"] == [
        {
            "file": str(bad),
            "error": f"{bad}: not a MEDLINE line (expected 'TAG - value') at line 7",
        }
    ]
    with Store(Paths(home).store) as store:
        assert store.count() == 5
        entry = store.files.latest("bad.nbib")
        assert entry is not None and entry.status == "failed"


@pytest.mark.parametrize(
    ("content", "problem", "position"),
    [
        (
            b"TY  - JOUR\nTI  - A RIS file\nER  - \n",
            "a MEDLINE record starts with its PMID line, not 'TY'",
            "line 1",
        ),
        (b"PMID- 1\nTI  - One\n\n      stray\n", "a continuation line outside any field", "line 4"),
        (b"PMID- 1\nTI  - Caf\xe9\n", "not UTF-8 text (byte 10 of the line)", "line 2"),
        (b"", "no MEDLINE record (no line starting 'PMID- ')", None),
        (
            b"PMID- 1\nAB  - " + b"x" * 1_000_001 + b"\n",
            "the AB field is longer than 1,000,000 characters",
            "line 2",
        ),
    ],
    ids=["ris", "stray continuation", "latin-1", "empty", "field past the limit"],
)
def test_what_is_not_medline_fails_with_its_line(
    tmp_path: Path, content: bytes, problem: str, position: str | None
) -> None:
    path = tmp_path / "x.nbib"
    path.write_bytes(content)
    with pytest.raises(ParseError) as info:
        list(medline.parse_file(path))
    assert (info.value.path, info.value.problem, info.value.position) == (
        str(path),
        problem,
        position,
    )
