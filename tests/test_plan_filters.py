"""The command line's restrictions (``--year``, ``--journal``, ``--type``, ``--date``) are
part of the one plan, not passed beside it: the search, ``--explain``, the history's
kept set and ``history rerun`` all restrict alike.

A home of four hand-made records, searched through the CLI, then updated.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.records import Filters
from medsearch.retrieval.explain import details, explain_tree
from medsearch.retrieval.searcher import open_searcher

BASELINE = [
    article_xml(101, "Aspirin for stroke", "Aspirin reduced stroke.", year=2019),
    article_xml(102, "Aspirin and bleeding", "Bleeding on aspirin.", year=2020),
]
UPDATE = [
    article_xml(103, "Aspirin in the elderly", "Older patients.", year=2019),
    article_xml(104, "Aspirin in 2022", "A later trial.", year=2022),
]
YEAR = Filters(year_from=2019, year_to=2019)


def cli(paths: Paths, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_search_with_year_keeps_the_year_in_its_plan_explain_and_rerun(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "pubmed26n0001.xml", BASELINE)])
    first = json.loads(cli(paths, "search", "aspirin[ti]", "--year", "2019", "--json"))
    assert [h["pmid"] for h in first["hits"]] == [101]

    with open_searcher(paths) as searcher:
        result = searcher.search("aspirin[ti]", mode="lexical", filters=YEAR, rerank="none")
        assert result.plan is not None and result.plan.filters == YEAR
        assert details(result.plan) == "aspirin[ti] AND 2019[dp]"
        tree = explain_tree(result.plan, searcher.lexical)  # no filters passed: the plan's
        assert tree.count == result.total == 1
        assert [(c.text, c.count) for c in tree.children] == [
            ("aspirin[ti]", 2),
            ("2019[dp]", 1),
        ]

    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "pubmed26n0002.xml", UPDATE)])
    report = json.loads(cli(paths, "history", "rerun", "1", "--json"))
    assert (report["then"]["count"], report["now"]["count"]) == (1, 2)
    assert [c["pmid"] for c in report["added"]] == [103]  # 104 (2022) stays out
    lines = json.loads(cli(paths, "history", "--json"))["lines"]
    assert [x["query_as_run"] for x in lines] == ["(aspirin[ti]) AND 2019[dp]"] * 2
