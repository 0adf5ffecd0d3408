"""One query, one plan: the search's count, the history's kept set and ``rerun``,
watches, exports and sorts all read the query as it ran (MeSH exploded, every plain
word required for the count), never a second reading of the text.

A small synthetic home (hand-made PubMed records indexed under the fixture MeSH's
enzyme headings: tests/fixtures/mesh) and an update file that adds an article under a
heading narrower than the one searched.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.history.store import open_history
from medsearch.paths import Paths
from medsearch.retrieval.searcher import open_searcher
from medsearch.tui.jobs import Request, answer
from tests.conftest import FIXTURES

MESH = FIXTURES / "mesh"


def cli(paths: Paths, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def enzyme_home(tmp_path: Path) -> Paths:
    """Three records: one under Hydrolases itself, two under narrower headings; MeSH
    installed."""
    paths = Paths(tmp_path / "home")
    records = [
        article_xml(1, "Enzyme one", "", mesh=(("Hydrolases", False, False),)),
        article_xml(2, "Enzyme two", "", mesh=(("Peptide Hydrolases", False, False),)),
        article_xml(3, "Enzyme three", "", mesh=(("Carboxylic Ester Hydrolases", False, False),)),
        article_xml(5, "Unrelated", "", mesh=(("Rats", False, False),)),
    ]
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", records)])
    cli(paths, "mesh", "import", str(MESH / "desc2025.xml"), str(MESH / "supp2025.xml"))
    return paths


def update(paths: Paths, tmp_path: Path) -> None:
    """An update file adding PMID 4 under Muramidase, a heading under Hydrolases."""
    added = article_xml(4, "Enzyme four", "", mesh=(("Muramidase", False, False),))
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "b.xml", [added])])


def kept_set(paths: Paths, number: int) -> set[int]:
    history = open_history(paths, write=False)
    assert history is not None
    with history:
        entry = history.get(number)
    assert entry is not None and entry.pmids is not None
    return set(entry.pmids.tolist())


def test_the_history_keeps_the_set_the_search_counted_for_an_exploded_heading(
    tmp_path: Path,
) -> None:
    paths = enzyme_home(tmp_path)
    whole = json.loads(cli(paths, "search", "hydrolases[mh]", "-k", "100", "--json"))
    counted = {hit["pmid"] for hit in whole["hits"]}
    assert whole["total"] == len(counted) == 3  # the heading and the two under it
    cli(paths, "search", "hydrolases[mh]", "-k", "1")  # fewer hits than the set: listed
    number = json.loads(cli(paths, "history", "--json"))["lines"][-1]["number"]
    assert kept_set(paths, number) == counted


def test_an_article_under_a_narrower_heading_is_news_to_rerun_and_watch_run(
    tmp_path: Path,
) -> None:
    paths = enzyme_home(tmp_path)
    assert cli(paths, "search", "hydrolases[mh]", "--count").strip() == "3"
    cli(paths, "watch", "add", "enzymes", "hydrolases[mh]")
    number = json.loads(cli(paths, "history", "--json"))["lines"][-1]["number"]
    update(paths, tmp_path)
    assert cli(paths, "search", "hydrolases[mh]", "--count").strip() == "4"
    report = json.loads(cli(paths, "history", "rerun", str(number), "--json"))
    assert (report["then"]["count"], report["now"]["count"]) == (3, 4)
    assert [row["pmid"] for row in report["added"]] == [4]
    digest = json.loads(cli(paths, "watch", "run", "--json"))
    (news,) = [w for w in digest["watches"] if w["name"] == "enzymes"]
    assert [hit["pmid"] for hit in news["hits"]] == [4]


def test_an_export_and_a_date_sort_cover_exactly_the_counted_words(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    records = [
        article_xml(1, "Epidermis and hydrolases", "", year=2001),
        article_xml(2, "Epidermis alone", "", year=2024),
        article_xml(3, "Hydrolases alone", "", year=2023),
    ]
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", records)])
    assert cli(paths, "search", "epidermis hydrolases", "--count").strip() == "1"
    ranked = json.loads(cli(paths, "search", "epidermis hydrolases", "--json"))
    assert len(ranked["hits"]) == 3  # relevance ranks in articles with some of the words
    out = tmp_path / "x.csv"
    args = ["search", "epidermis hydrolases", "--export", "csv", "-o", str(out)]
    result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8") as handle:
        assert [row["pmid"] for row in csv.DictReader(handle)] == ["1"]
    assert "the hits are the articles counted (every word)" in result.stderr
    by_date = json.loads(cli(paths, "search", "epidermis hydrolases", "--sort", "date", "--json"))
    assert [hit["pmid"] for hit in by_date["hits"]] == [1]  # not the newer partial matches
    assert by_date["total"] == 1
    assert any("articles counted" in note for note in by_date["notes"])
    with open_searcher(paths) as searcher:  # the TUI's date sort: the same rule
        tui = answer(searcher, Request("search", "epidermis hydrolases", sort="date"), paths)
    assert [hit.pmid for hit in tui.result.hits] == [1]


def test_explain_counts_every_clause_and_prints_the_query_as_the_history_does(
    tmp_path: Path,
) -> None:
    paths = enzyme_home(tmp_path)
    query = "hydrolases[mh] AND enzyme NOT rats[mh]"
    answer = json.loads(cli(paths, "search", query, "--explain", "--json", "--count"))
    tree = answer["explain"]["tree"]
    line = json.loads(cli(paths, "history", "--json"))["lines"][-1]
    assert line["query_as_run"] == answer["explain"]["details"] == tree["text"]
    assert tree["count"] == answer["count"] == 3
    texts = [child["text"] for child in tree["children"]]
    assert texts == ['"Hydrolases"[MeSH Terms]', "enzyme", 'NOT "Rats"[MeSH Terms]']
    assert [child["count"] for child in tree["children"]] == [3, 3, 1]  # NOT: what it excludes
    for child in tree["children"]:  # each clause's count is that clause searched alone
        alone = child["text"].removeprefix("NOT ")
        assert int(cli(paths, "search", alone, "--count")) == child["count"]
    text = CliRunner().invoke(main, ["--home", str(paths.home), "search", query, "--explain"])
    assert f"search details: {tree['text']}" in text.stderr
    assert '           1    NOT "Rats"[MeSH Terms]' in text.stderr.splitlines()


def test_one_printer_writes_dates_as_typed_in_both_spellings() -> None:
    from medsearch.query.parser import parse_query
    from medsearch.query.printer import format_query, translation_text

    parsed = parse_query("cancer[tiab] AND 2019/08[dp] AND review[pt]")
    assert format_query(parsed) == 'cancer[tiab] AND 2019/08[dp] AND "review"[pt]'
    assert translation_text(parsed) == (
        '"cancer"[tiab] AND 2019/08[dp] AND "review"[Publication Type]'
    )  # MeSH's own printer wrote 2019/08:2019/08/31[dp] and "review"[pt]
    assert parse_query(translation_text(parsed)).filters == parsed.filters
