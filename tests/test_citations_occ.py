"""The Open Citation Collection imports from its real layout (a zip holding one CSV with
the header ``citing,referenced``), records each edge's source, resumes after a failure
and skips a file imported before."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

import ingest.citations as occ
from benchmarks.synth import article_xml, pubmed_file
from medsearch.index.citations import CitationGraph
from medsearch.paths import Paths
from medsearch.store import Store
from tests.test_citations_cli import cited_xml, pmids, run

ROWS = [(1, 10), (1, 12), (20, 10), (21, 10), (21, 1), (1, 10)]  # 1 -> 10 is in the list too


def occ_zip(path: Path, rows: list[tuple[int, int]]) -> Path:
    body = "citing,referenced\n" + "".join(f"{a},{b}\n" for a, b in rows)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("open_citation_collection.csv", body)
    return path


@pytest.fixture()
def home(tmp_path: Path) -> Path:
    xml = [cited_xml(1, [10, 11], 2018), article_xml(10, "Cited article", year=2010)]
    source = pubmed_file(tmp_path / "pubmed26n0001.xml", xml)
    run(tmp_path / "home", "ingest", str(source), "--no-encode", "--jobs", "0")
    return tmp_path / "home"


def test_the_collection_imports_with_sources_and_a_second_import_skips(
    home: Path, tmp_path: Path
) -> None:
    archive = occ_zip(tmp_path / "open_citation_collection.zip", ROWS)
    out = run(home, "ingest", "--citations", str(archive), "--no-encode", "--json")
    assert any("6 edges read" in n and "4 new" in n for n in out["notes"]), out["notes"]
    refs = {h["pmid"]: h["source"] for h in run(home, "refs", "1", "--json")["hits"]}
    assert refs == {10: "both", 11: "reference list", 12: "collection"}
    assert pmids(run(home, "citedby", "10", "--sort", "cited", "--json")) == [1, 21, 20]
    assert pmids(run(home, "refs", "21", "--json")) == [1, 10]  # a citing PMID not stored
    again = run(home, "ingest", "--citations", str(archive), "--no-encode", "--json")
    assert any("imported before; skipped" in n for n in again["notes"])


def test_an_import_that_failed_half_way_resumes(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    csv = tmp_path / "occ.csv"
    csv.write_text("referenced,citing\n" + "".join(f"{b},{a}\n" for a, b in ROWS))
    monkeypatch.setattr(occ, "BLOCK_BYTES", 8)  # a block of a row or two, a transaction each
    calls = 0
    real = Store.add_collection_edges

    def fail_on_third(self: Store, citing: object, cited: object) -> int:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError("the disk went away")
        return real(self, citing, cited)

    with Store(Paths(home).store) as store:
        monkeypatch.setattr(Store, "add_collection_edges", fail_on_third)
        with pytest.raises(OSError):
            occ.import_collection(store, csv)
        monkeypatch.setattr(Store, "add_collection_edges", real)
        report = occ.import_collection(store, csv)
        assert not report.skipped and report.edges_read < len(ROWS)  # it started past the start
        graph = CitationGraph.open(Paths(home).citations, store.conn)
        assert graph.cited_by(10).tolist() == [1, 20, 21]
        assert graph.references(1)[0].tolist() == [10, 11, 12]
        assert occ.import_collection(store, csv).skipped


def test_a_file_without_the_columns_is_refused(home: Path, tmp_path: Path) -> None:
    csv = tmp_path / "occ.csv"
    csv.write_text("a,b\n1,2\n")
    with Store(Paths(home).store) as store, pytest.raises(Exception, match="citing,referenced"):
        occ.import_collection(store, csv)
