"""A data home for the service's tests: a real baseline file's records (when ../shared
has them) beside a small citation graph, ingested once per module with ``--no-encode``.

Graph: 90000001 (2018) cites 90000010 and 90000011; 90000002 (2019) cites 90000010 and
90000001; 90000003 (2020) cites 90000010, 90000001 and 90000002.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from tests.conftest import FIXTURES, SHARED_DATA

GRAPH = {
    90000001: [90000010, 90000011],
    90000002: [90000010, 90000001],
    90000003: [90000010, 90000001, 90000002],
    90000010: [],
    90000011: [],
}
YEARS = {90000001: 2018, 90000002: 2019, 90000003: 2020, 90000010: 2010, 90000011: 2011}
REAL = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser" / "pubmed21n0001.xml.gz"


def cited_xml(pmid: int, cites: list[int]) -> str:
    refs = "".join(
        f'<Reference><Citation>ref {c}</Citation><ArticleIdList><ArticleId IdType="pubmed">{c}'
        "</ArticleId></ArticleIdList></Reference>"
        for c in cites
    )
    xml = article_xml(
        pmid,
        f"Cardiac remodelling in heart failure, part {pmid % 100}",
        "Heart failure with reduced ejection fraction was studied in a cohort.",
        year=YEARS[pmid],
        journal="Journal of Cardiac Failure",
        abbrev="J Card Fail",
    )
    return xml.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")


def build_home(folder: Path) -> Path:
    """Ingest the graph file and the real (or the tricky fixture) file into one home."""
    graph = pubmed_file(folder / "graph.xml", [cited_xml(p, c) for p, c in GRAPH.items()])
    other = REAL if REAL.exists() else FIXTURES / "tricky_articles.xml"
    home = folder / "home"
    result = CliRunner().invoke(
        main, ["--home", str(home), "ingest", str(other), str(graph), "--no-encode", "--jobs", "0"]
    )
    assert result.exit_code == 0, result.output
    return home
