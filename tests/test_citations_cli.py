"""``refs``, ``citedby`` and citation counts on a hand-built graph, ingested from XML:

1 (2018) cites 10, 11, 999 (not stored) and a DOI-only reference
2 (2019) cites 10, 1
3 (2020) cites 10, 1, 2
10 (2010), 11 (2011) cite nothing
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main

GRAPH = {1: [10, 11, 999], 2: [10, 1], 3: [10, 1, 2], 10: [], 11: []}
YEARS = {1: 2018, 2: 2019, 3: 2020, 10: 2010, 11: 2011}


def cited_xml(pmid: int, cites: list[int], year: int, doi_only: str | None = None) -> str:
    refs = "".join(
        f'<Reference><Citation>ref {c}</Citation><ArticleIdList><ArticleId IdType="pubmed">{c}'
        f'</ArticleId><ArticleId IdType="doi">10.9/ref.{c}</ArticleId></ArticleIdList></Reference>'
        for c in cites
    )
    if doi_only:
        refs += (
            "<Reference><Citation>a book</Citation><ArticleIdList>"
            f'<ArticleId IdType="doi">{doi_only}</ArticleId></ArticleIdList></Reference>'
        )
    xml = article_xml(pmid, f"Article {pmid} on heart failure", "Heart failure study.", year=year)
    return xml.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")


def run(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cites")
    xml = [cited_xml(p, c, YEARS[p], "10.1/only.doi" if p == 1 else None) for p, c in GRAPH.items()]
    source = pubmed_file(folder / "pubmed26n0001.xml", xml)
    run(folder / "home", "ingest", str(source), "--no-encode", "--jobs", "0")
    return folder / "home"


def pmids(out: dict[str, Any]) -> list[int]:
    return [h["pmid"] for h in out["hits"]]


def test_refs_lists_the_reference_list_in_order_with_outside_articles(home: Path) -> None:
    out = run(home, "refs", "1", "--json")
    assert pmids(out) == [10, 11, 999, 0]
    by_pmid = {h["pmid"]: h for h in out["hits"]}
    assert by_pmid[10]["in_corpus"] is True and by_pmid[10]["cited_by"] == 3
    assert by_pmid[999]["in_corpus"] is False and by_pmid[999]["doi"] == "10.9/ref.999"
    assert by_pmid[0]["doi"] == "10.1/only.doi"
    assert by_pmid[10]["source"] == "reference list"
    text = run(home, "refs", "1")
    assert "(not in this corpus)" in text and "cited by 3 in this corpus" in text


def test_citedby_sorts_and_filters(home: Path) -> None:
    assert pmids(run(home, "citedby", "10", "--json")) == [3, 2, 1]  # newest first
    assert pmids(run(home, "citedby", "10", "--sort", "cited", "--json")) == [1, 2, 3]
    # relevance: references shared with 1 (10, 11, 999): one each; 2, cited once, first
    assert pmids(run(home, "citedby", "1", "--sort", "relevance", "--json")) == [2, 3]
    assert pmids(run(home, "citedby", "10", "--year", "2019:2020", "--json")) == [3, 2]
    assert pmids(run(home, "citedby", "999", "--json")) == [1]  # a PMID outside the store
    assert pmids(run(home, "citedby", "12345", "--json")) == []


def test_search_hits_carry_counts_and_sort_by_them(home: Path) -> None:
    out = run(home, "search", "heart failure", "--sort", "cited", "--json")
    assert [(h["pmid"], h["cited_by"]) for h in out["hits"]][:3] == [(10, 3), (1, 2), (2, 1)]


def test_export_writes_the_stored_articles_of_a_list(home: Path) -> None:
    out = run(home, "refs", "1", "--export", "ris")
    assert out.count("TY  - ") == 2  # 10 and 11; 999 and the DOI-only one are not stored


@pytest.mark.thorough
def test_an_update_and_a_deletion_change_both_directions(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = pubmed_file(
        tmp_path / "pubmed26n0001.xml", [cited_xml(p, c, YEARS[p]) for p, c in GRAPH.items()]
    )
    run(home, "ingest", str(first), "--no-encode", "--jobs", "0")
    update = pubmed_file(tmp_path / "pubmed26n0002.xml", [cited_xml(1, [11], 2018)], deletions=[3])
    run(home, "ingest", str(update), "--no-encode", "--jobs", "0")
    assert pmids(run(home, "citedby", "10", "--json")) == [2]
    assert pmids(run(home, "citedby", "11", "--json")) == [1]
    assert pmids(run(home, "refs", "3", "--json")) == []
    assert [h["cited_by"] for h in run(home, "refs", "2", "--json")["hits"]] == [
        1,
        1,
    ]  # 3, which cited 1, is gone


def test_snowball_prints_prisma_counts_and_exports(home: Path, tmp_path: Path) -> None:
    screened = tmp_path / "screened.txt"
    screened.write_text("999\n")
    out = run(home, "snowball", "1", "--exclude", str(screened), "--json")
    assert out["counts"] == {"seeds": 1, "found": 5, "duplicates": 0, "excluded": 1, "new": 4}
    assert sorted(pmids(out)) == [2, 3, 10, 11]
    text = run(home, "snowball", "1", "--backward")
    assert "found 3 · duplicates 0 · excluded 0 · new 3" in text


def test_sql_reaches_the_graph(home: Path) -> None:
    rows = run(
        home,
        "sql",
        "--json",
        "SELECT pmid, cited_by(pmid) AS n FROM articles WHERE cited_by(pmid) > 0 ORDER BY pmid",
    )
    assert [(r["pmid"], r["n"]) for r in rows] == [(1, 2), (2, 1), (10, 3), (11, 1)]
    edges = run(
        home,
        "sql",
        "--json",
        "SELECT r.pmid AS citing, j.value AS cited FROM article_refs r,"
        " json_each(cited_pmids(r.edges)) j WHERE r.pmid = 3 ORDER BY cited",
    )
    assert [(e["citing"], e["cited"]) for e in edges] == [(3, 1), (3, 2), (3, 10)]


def test_similar_by_citations_needs_no_vectors(home: Path) -> None:
    assert pmids(run(home, "similar", "10", "--by", "citations", "--json")) == [1, 2, 11]


def test_citation_lists_say_what_their_order_is_not_a_rank_or_date_as_a_score(
    home: Path,
) -> None:
    """refs keep the list's order (no score); citedby by date shows the date; snowball
    scores only what is stored here (999 is not)."""
    refs = run(home, "refs", "1")
    assert "score" not in refs
    newest = run(home, "citedby", "10")
    assert "published 2020" in newest and "score" not in newest
    assert "1 reference(s) shared" in run(home, "citedby", "1", "--sort", "relevance")
    lines = run(home, "snowball", "1").splitlines()
    meta = {int(line.split("PMID ")[1].split()[0]): line for line in lines if "PMID " in line}
    assert "score" not in meta[999] and "score" in meta[10]


def test_similar_by_citations_says_why_it_found_nothing(home: Path, tmp_path: Path) -> None:
    alone = run(home, "similar", "12345", "--by", "citations")
    assert "PMID 12345 neither cites nor is cited by any article in this corpus" in alone
    filtered = run(home, "similar", "10", "--by", "citations", "--year", "1990", "--json")
    assert filtered["notes"] == [
        "4 article(s) share citations with PMID 10; none passes the filters"
    ]
    bare = tmp_path / "bare"
    source = pubmed_file(tmp_path / "pubmed26n0001.xml", [article_xml(5, "Gout", "Uric acid.")])
    run(bare, "ingest", str(source), "--no-encode", "--jobs", "0")
    out = run(bare, "similar", "5", "--by", "citations", "--json")
    assert out["hits"] == [] and out["notes"][0].startswith("this corpus has no citation data")


def test_an_article_outside_the_store_shows_its_citation_text(home: Path) -> None:
    """999 is not stored: refs, snowball and citedby give the text 1's reference list
    cites it by ("ref 999"), in --json and as text, instead of a bare PMID."""
    from medsearch.paths import Paths
    from medsearch.retrieval.citations import citation_texts, open_graph
    from medsearch.store import Store

    refs = {h["pmid"]: h for h in run(home, "refs", "1", "--json")["hits"]}
    assert refs[999]["citation"] == "ref 999" and "citation" not in refs[10]
    assert "citation: ref 999" in run(home, "refs", "1")
    ball = {h["pmid"]: h for h in run(home, "snowball", "1", "--json")["hits"]}
    assert ball[999]["citation"] == "ref 999"
    paths = Paths(home)
    with Store(paths.store, readonly=True) as store:
        graph = open_graph(paths.citations, store)
        # what citedby reads for a citing article outside the store: the text a stored
        # record citing it gives
        assert citation_texts(store, graph, [999, 4242]) == {999: "ref 999"}


@pytest.mark.parametrize("name", ["screened.ris", "screened.bib"])
def test_snowball_exclude_refuses_a_huge_pmid_field_in_one_line(
    home: Path, tmp_path: Path, name: str
) -> None:
    """A 5,000-digit PMID in a reference manager's file is not a PMID: one line naming
    the file, not an internal error from ``int()``."""
    screened = tmp_path / name
    digits = "9" * 5000
    screened.write_text(
        f"TY  - JOUR\nAN  - {digits}\nER  - \n"
        if name.endswith(".ris")
        else f"@article{{a,\n  pmid = {{{digits}}},\n}}\n"
    )
    result = CliRunner().invoke(
        main, ["--home", str(home), "snowball", "1", "--exclude", str(screened)]
    )
    assert result.exit_code == 2, result.output
    assert f"{screened}: '{'9' * 30}...' is not a PMID" in result.stderr
    assert "internal error" not in result.output


def test_every_export_says_alike_that_it_replaced_a_file(home: Path, tmp_path: Path) -> None:
    """``-o`` onto an existing file replaces it (people re-export as a search grows) and
    says so in the same words in export, search --export and refs/citedby --export."""
    target = tmp_path / "list.ris"
    target.write_text("an older export\n")
    runs = [
        ["refs", "1", "--export", "ris", "-o", str(target)],
        ["citedby", "10", "--export", "ris", "-o", str(target)],
        ["search", "heart failure", "--export", "ris", "-o", str(target)],
        ["export", "10", "-o", str(target), "--format", "ris"],
    ]
    for args in runs:
        result = CliRunner().invoke(main, ["--home", str(home), *args])
        assert result.exit_code == 0, (args, result.output)
        assert f"to {target} (it replaced the file that was there)" in result.stderr, args
    assert "an older export" not in target.read_text() and "TY  - JOUR" in target.read_text()


def test_an_export_that_cannot_be_written_leaves_the_earlier_file_and_no_debris(
    tmp_path: Path,
) -> None:
    from medsearch.commands.export import write_output
    from medsearch.errors import UsageError

    blocked = tmp_path / "a-folder.ris"
    blocked.mkdir()  # the rename over it fails as a full disk's write would
    with pytest.raises(UsageError, match="cannot write"):
        write_output(blocked, "text")
    assert blocked.is_dir() and sorted(p.name for p in tmp_path.iterdir()) == ["a-folder.ris"]
