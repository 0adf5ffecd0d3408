"""Installing MeSH: NLM's descriptor, supplementary and qualifier XML into the store's
tables.

The fixture (tests/fixtures/mesh) is written in NLM's format: DescriptorRecordSet with
the DTD's DOCTYPE, a heading with every optional element the DTD allows (Hydrolases,
with its PharmacologicalActionList), a SupplementalRecordSet with HeadingMappedToList
and PharmacologicalActionList, and a QualifierRecordSet with TreeNumberList and the
abbreviations on the terms.
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from httpserver import LocalServer, serve

from ingest.mesh_xml import MAX_RECORD_ROWS, mesh_year, parse_mesh
from medsearch.cli import main
from medsearch.errors import ParseError
from medsearch.mesh.records import (
    AllowedQualifier,
    Descriptor,
    MappedHeading,
    Subheading,
    Supplemental,
)
from tests.conftest import FIXTURES

MESH = FIXTURES / "mesh"
DESC = MESH / "desc2025.xml"
SUPP = MESH / "supp2025.xml"
QUAL = MESH / "qual2025.xml"


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_descriptor_with_every_optional_element_keeps_what_search_needs() -> None:
    hydrolases = next(r for r in parse_mesh(DESC) if r.name == "Hydrolases")
    assert isinstance(hydrolases, Descriptor)
    assert hydrolases.ui == "D006867"
    assert hydrolases.tree_numbers == ("D08.811.277",)
    assert hydrolases.scope_note == (
        "Any enzyme that catalyzes the hydrolysis of a chemical bond (EC 3)."
    )
    assert hydrolases.terms == ("Hydrolases", "Hydrolase")
    assert AllowedQualifier("Q000378", "metabolism", "ME") in hydrolases.qualifiers
    assert len(hydrolases.qualifiers) == 10


def test_entry_terms_come_from_every_concept_the_name_first() -> None:
    mice = next(r for r in parse_mesh(DESC) if r.name == "Mice")
    assert mice.terms[0] == "Mice"
    assert set(mice.terms) == {"Mice", "Mouse", "Mus musculus", "Mus"}


def test_supplementary_concepts_map_to_headings_with_nlms_major_star() -> None:
    concepts = {r.ui: r for r in parse_mesh(SUPP)}
    lysozyme = concepts["C014347"]
    assert isinstance(lysozyme, Supplemental)
    assert lysozyme.synonyms == ("hen egg-white lysozyme", "HEWL", "lysozyme, hen egg white")
    assert lysozyme.headings == (MappedHeading("D009113", "Muramidase", None, True),)
    hexosaminidase = concepts["C040029"]
    assert MappedHeading("D005696", "Galactosidases", "Q000378", False) in hexosaminidase.headings


def test_pharmacological_actions_come_from_descriptors_and_concepts() -> None:
    hydrolases = next(r for r in parse_mesh(DESC) if r.name == "Hydrolases")
    alkylsulfatase = next(r for r in parse_mesh(SUPP) if r.name == "alkylsulfatase")
    assert hydrolases.actions == alkylsulfatase.actions == ("D004798",)  # Enzymes
    assert sum(1 for r in parse_mesh(DESC) if r.actions) == 1


def test_the_qualifier_file_gives_each_subheading_its_tree_numbers() -> None:
    records = {r.name: r for r in parse_mesh(QUAL)}
    assert records["metabolism"] == Subheading("Q000378", "metabolism", "ME", ("Y10",))
    assert records["pharmacokinetics"].tree_numbers == ("Y10.300", "Y08.600")
    assert records["drug therapy"] == Subheading("Q000188", "drug therapy", "DT", ("Y04.010",))
    assert mesh_year(QUAL) == 2025


def test_a_qualifier_or_action_list_past_the_caps_fails_the_file(tmp_path: Path) -> None:
    """The record caps hold for the new lists too: a hostile file fails, it never fills
    the memory."""
    trees = "".join(f"<TreeNumber>Y{i}</TreeNumber>" for i in range(MAX_RECORD_ROWS + 1))
    many = tmp_path / "qual2025.xml"
    many.write_text(
        "<QualifierRecordSet><QualifierRecord><QualifierUI>Q1</QualifierUI><QualifierName>"
        f"<String>x</String></QualifierName><TreeNumberList>{trees}</TreeNumberList>"
        "</QualifierRecord></QualifierRecordSet>"
    )
    with pytest.raises(ParseError, match="MeSH record Q1 has 10,001"):
        list(parse_mesh(many))
    action = (
        "<PharmacologicalAction><DescriptorReferredTo><DescriptorUI>D{}</DescriptorUI>"
        "</DescriptorReferredTo></PharmacologicalAction>"
    )
    listed = "".join(action.format(i) for i in range(MAX_RECORD_ROWS + 1))
    drugs = tmp_path / "supp2025.xml"
    drugs.write_text(
        "<SupplementalRecordSet><SupplementalRecord><SupplementalRecordUI>C1"
        "</SupplementalRecordUI><SupplementalRecordName><String>x</String>"
        f"</SupplementalRecordName><PharmacologicalActionList>{listed}"
        "</PharmacologicalActionList></SupplementalRecord></SupplementalRecordSet>"
    )
    with pytest.raises(ParseError, match="MeSH record C1 has 10,002"):
        list(parse_mesh(drugs))


def test_the_year_comes_from_the_dtd_and_gzip_reads_the_same(tmp_path: Path) -> None:
    packed = tmp_path / "mesh-descriptors.xml.gz"
    packed.write_bytes(gzip.compress(DESC.read_bytes()))
    assert mesh_year(DESC) == mesh_year(packed) == 2025
    assert list(parse_mesh(packed)) == list(parse_mesh(DESC))


def test_a_file_that_is_not_mesh_is_refused_by_name(tmp_path: Path) -> None:
    other = tmp_path / "desc2025.xml"
    other.write_text("<PubmedArticleSet><PubmedArticle/></PubmedArticleSet>")
    with pytest.raises(ParseError, match="not a MeSH descriptor, supplementary or qualifier"):
        list(parse_mesh(other))


def test_junk_outside_the_records_stops_within_the_ingest_limits(tmp_path: Path) -> None:
    bomb = tmp_path / "desc2025.xml.gz"
    junk = b"<x/>" * (2 * 1024 * 1024 // 4)
    bomb.write_bytes(gzip.compress(b"<DescriptorRecordSet>" + junk + b"</DescriptorRecordSet>"))
    with pytest.raises(ParseError, match="outside any"):
        list(parse_mesh(bomb))


def _table(home: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(home / "store.sqlite")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_import_fills_the_tables_that_sql_reads_and_stats_shows_the_year(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, err = cli(home, "mesh", "import", str(DESC), str(SUPP), "--json")
    assert code == 0, err
    counts = json.loads(out)
    assert (counts["year"], counts["descriptors"], counts["supplementals"]) == (2025, 59, 5)
    code, out, _ = cli(
        home, "sql", "--json", "SELECT ui FROM mesh_tree_numbers WHERE tree_number = 'D08.811.277'"
    )
    assert code == 0 and json.loads(out) == [{"ui": "D006867"}]
    assert json.loads(cli(home, "stats", "--json")[1])["mesh"] == "MeSH 2025"


def test_import_installs_the_actions_and_the_subheading_tree_each_with_its_file(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    code, out, err = cli(home, "mesh", "import", str(DESC), str(SUPP), str(QUAL), "--json")
    assert code == 0, err
    counts = json.loads(out)
    assert (counts["actions"], counts["subheadings"]) == (2, 19)
    assert _table(home, "SELECT action_ui, ui FROM mesh_actions ORDER BY ui") == [
        ("D004798", "C019244"),
        ("D004798", "D006867"),
    ]
    under = (
        "SELECT ui FROM mesh_subheading_trees WHERE tree_number > 'Y04.' AND tree_number < 'Y04/'"
    )
    assert len(_table(home, under)) == 4  # therapy's: drug therapy, diet therapy ...
    # a supplementary file replaces the concepts' actions only, a qualifier file the tree
    fewer = tmp_path / "supp2026.xml"
    actions = re.compile(r"<PharmacologicalActionList>.*?</PharmacologicalActionList>", re.S)
    fewer.write_text(actions.sub("", SUPP.read_text()))
    assert cli(home, "mesh", "import", str(fewer))[0] == 0
    assert _table(home, "SELECT ui FROM mesh_actions") == [("D006867",)]  # the heading's stays
    broken = tmp_path / "qual2026.xml"
    broken.write_text(QUAL.read_text().replace("</QualifierRecord>", "", 1))
    code, _, err = cli(home, "mesh", "import", str(broken))
    assert code != 0 and "malformed XML" in err
    assert _table(home, "SELECT COUNT(*) FROM mesh_subheadings") == [(19,)]


def test_a_new_year_replaces_the_old_in_one_transaction(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "mesh", "import", str(DESC), str(SUPP))[0] == 0
    text = DESC.read_text().replace("_20250101.dtd", "_20260101.dtd")
    cut = text.index('<DescriptorRecord DescriptorClass = "1">\n <DescriptorUI>D045762')
    smaller = tmp_path / "desc2026.xml"
    smaller.write_text(text[:cut] + "</DescriptorRecordSet>\n")
    broken = tmp_path / "desc2027.xml"
    broken.write_text(text[:cut] + "<DescriptorRecord><DescriptorUI>D1</Descr")

    code, _, err = cli(home, "mesh", "import", str(broken))
    assert code != 0 and "malformed XML" in err
    assert _table(home, "SELECT COUNT(*) FROM mesh_descriptors") == [(59,)]

    assert cli(home, "mesh", "import", str(smaller))[0] == 0
    assert _table(home, "SELECT COUNT(*) FROM mesh_descriptors") == [(30,)]
    assert _table(home, "SELECT value FROM meta WHERE key = 'mesh_year'") == [("2026",)]
    assert _table(home, "SELECT COUNT(*) FROM mesh_supplementals") == [(5,)]  # not replaced
    assert _table(home, "SELECT COUNT(*) FROM mesh_terms WHERE ui = 'D006867'") == [(0,)]


def test_show_walks_the_tree_from_an_entry_term(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "mesh", "import", str(DESC))[0] == 0
    code, out, err = cli(home, "mesh", "show", "mouse", "--json")
    assert code == 0, err
    mice = json.loads(out)
    assert (mice["ui"], mice["name"]) == ("D051379", "Mice")
    assert mice["broader"] == [{"ui": "D051188", "name": "Murinae"}]
    assert [q["abbreviation"] for q in mice["qualifiers"]] == ["AH", "EN", "GE", "ME", "PH"]
    code, out, _ = cli(home, "mesh", "show", "Hydrolases")
    assert "narrower: Amidohydrolases; Esterases; Glycoside Hydrolases; Peptide Hydrolases" in out


def test_without_mesh_show_says_how_to_install_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli(home, "mesh", "import", str(SUPP))
    code, _, err = cli(home, "mesh", "show", "Mice")
    assert code != 0 and "medsearch ingest --download mesh" in err


@pytest.fixture
def nlm(tmp_path: Path) -> Iterator[LocalServer]:
    """NLM's xmlmesh folder on a local server: last year's file and this year's pair,
    each gzipped and plain."""
    folder = tmp_path / "xmlmesh"
    folder.mkdir()
    for name, source in (("desc2025", DESC), ("supp2025", SUPP), ("desc2024", DESC)):
        (folder / f"{name}.xml").write_bytes(source.read_bytes())
        (folder / f"{name}.gz").write_bytes(gzip.compress(source.read_bytes()))
    (folder / "qual2025.xml").write_bytes(QUAL.read_bytes())  # NLM lists it as XML alone
    with serve(folder) as server:
        yield server


def test_download_mesh_fetches_the_newest_year_gzipped_and_installs_it(
    tmp_path: Path, nlm: LocalServer
) -> None:
    home = tmp_path / "home"
    code, out, err = cli(home, "ingest", "--download", "mesh", "--mirror", nlm.url, "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert (answer["year"], answer["supplementals"], answer["subheadings"]) == (2025, 5, 19)
    assert [r.path for r in nlm.requests if r.path.endswith((".gz", ".xml"))] == [
        "/desc2025.gz",
        "/supp2025.gz",
        "/qual2025.xml",
    ]
    assert sorted(p.name for p in (home / "downloads" / "mesh").iterdir()) == [
        "desc2025.gz",
        "qual2025.xml",
        "supp2025.gz",
    ]


def test_a_cut_download_resumes_where_it_stopped(tmp_path: Path, nlm: LocalServer) -> None:
    nlm.cut_short("/desc2025.gz", after=1000)
    home = tmp_path / "home"
    code, _, err = cli(home, "ingest", "--download", "mesh", "--mirror", nlm.url)
    assert code == 0, err
    ranges = [r.range for r in nlm.requests_for("/desc2025.gz")]
    assert ranges == [None, "bytes=1000-"]
    assert _table(home, "SELECT COUNT(*) FROM mesh_descriptors") == [(59,)]
