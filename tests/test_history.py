"""The search history: what a researcher can reproduce, report and combine.

One home is built once from a hand-made baseline file, searched through the CLI, then
brought up to date with a hand-made update file that adds an article, revises two and
deletes one; every test reads what those searches left behind.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.errors import QuerySyntaxError
from medsearch.history.entries import pack_pmids, unpack_pmids
from medsearch.history.store import open_history
from medsearch.paths import Paths
from medsearch.query import parse_query
from medsearch.query.nodes import Node, Not, Or, Phrase, Prefix, Tagged, Term, YearRange
from medsearch.query.printer import format_query
from medsearch.records import Filters

BASELINE = [
    article_xml(101, "Aspirin for stroke prevention", "Aspirin reduced stroke.", year=2019),
    article_xml(102, "Aspirin and bleeding", "Bleeding on aspirin.", year=2020),
    article_xml(103, "Statins after myocardial infarction", "Statins helped.", year=2021),
    article_xml(104, "Warfarin versus aspirin in stroke", "A trial.", year=2018),
]
UPDATE = [
    article_xml(105, "Aspirin in stroke: a new trial", "New.", year=2022),
    article_xml(
        101, "Aspirin for stroke prevention (corrected)", "Corrected.", year=2019, version=2
    ),
    article_xml(102, "Aspirin, stroke and bleeding", "Revised.", year=2020, version=2),
]


@dataclass(frozen=True)
class Home:
    paths: Paths
    outputs: dict[str, str]
    """Each CLI call's standard output, by a short name."""


def cli(paths: Paths, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("history")
    paths = Paths(root / "home")
    first = pubmed_file(root / "pubmed26n0001.xml", BASELINE)
    update = pubmed_file(root / "pubmed26n0002.xml", UPDATE, deletions=[104])
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([first])
    out = {
        "set": cli(paths, "search", "aspirin AND stroke", "--json"),  # 1
        "ranked": cli(paths, "search", "aspirin stroke", "--year", "2018:2020", "--json"),  # 2
        "title": cli(paths, "search", "statins[ti]", "--count"),  # 3
        "combined": cli(paths, "search", "#1 OR #3", "--json"),  # 4
        "not": cli(paths, "search", "#1 NOT warfarin[ti]", "--count"),  # 5
    }
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([update])
    out["rerun"] = cli(paths, "history", "rerun", "1", "--json")  # 6
    out["rerun_ranked"] = cli(paths, "history", "rerun", "2")  # 7
    out["list"] = cli(paths, "history", "--json")
    out["export"] = cli(paths, "history", "--export", "prisma", "-o", str(root / "log"))
    return Home(paths, out)


def test_each_search_is_a_numbered_line_with_its_query_as_run_count_and_snapshot(
    home: Home,
) -> None:
    lines = json.loads(home.outputs["list"])["lines"]
    assert [(x["number"], x["query_typed"], x["query_as_run"], x["count"]) for x in lines[:5]] == [
        (1, "aspirin AND stroke", "aspirin AND stroke", 2),
        (2, "aspirin stroke", "(aspirin stroke) AND 2018:2020[dp]", 2),
        (3, "statins[ti]", "statins[ti]", 1),
        (4, "#1 OR #3", "(aspirin AND stroke) OR statins[ti]", 3),
        (5, "#1 NOT warfarin[ti]", "aspirin AND stroke NOT warfarin[ti]", 1),
    ]
    first = lines[0]
    assert first["snapshot"] == {
        "baseline_year": 2026,
        "last_file": "pubmed26n0001.xml",
        "file_mark": 1,
        "articles": 4,
    }
    assert (first["mode"], first["counted"], first["set_kept"]) == ("lexical", "set", True)
    assert (lines[1]["counted"], lines[1]["set_kept"]) == ("all_words", False)
    assert lines[1]["filters"] == {"year_from": 2018, "year_to": 2020}
    assert lines[6]["snapshot"]["last_file"] == "pubmed26n0002.xml"
    assert home.paths.history_db.stat().st_mode & 0o777 == 0o600  # private to its owner


def test_hash_n_combines_the_sets_of_earlier_searches(home: Home) -> None:
    combined = json.loads(home.outputs["combined"])
    assert sorted(h["pmid"] for h in combined["hits"]) == [101, 103, 104]
    assert home.outputs["not"].strip() == "1"  # 101: the one without warfarin in its title


def test_a_rerun_after_an_update_reports_exactly_what_each_file_changed(home: Home) -> None:
    report = json.loads(home.outputs["rerun"])
    assert (report["then"]["count"], report["now"]["count"], report["now"]["number"]) == (2, 3, 6)
    assert report["now"]["query_typed"] == "#1"
    assert report["diff_available"] is True
    changed = {
        kind: [(c["pmid"], c["file"], c["why"]) for c in report[kind]]
        for kind in ("added", "removed", "replaced")
    }
    assert changed == {
        "added": [
            (102, "pubmed26n0002.xml", "new or revised article now in the set"),
            (105, "pubmed26n0002.xml", "new or revised article now in the set"),
        ],
        "removed": [(104, "pubmed26n0002.xml", "deleted")],
        "replaced": [(101, "pubmed26n0002.xml", "revised by a later file")],
    }


def test_plain_words_rerun_compares_counts_and_says_why_there_is_no_diff(home: Home) -> None:
    text = home.outputs["rerun_ranked"]
    assert "#2: (aspirin stroke) AND 2018:2020[dp]" in text
    assert "no article-level diff: plain words are ranked, not a set" in text


def test_the_prisma_log_lists_each_search_as_run_with_date_count_and_snapshot(
    home: Home,
) -> None:
    folder = Path(home.outputs["export"].split()[1]).parent
    md = (folder / "search-log.md").read_text()
    assert md.startswith("# Search log (PRISMA-S)\n")
    rows = [line for line in md.splitlines() if line.startswith("| 4 |")]
    assert len(rows) == 1
    assert "`(aspirin AND stroke) OR statins[ti]` | 3 | 2026, pubmed26n0001.xml, 4 |" in rows[0]
    table = list(csv.DictReader(io.StringIO((folder / "search-log.csv").read_text())))
    assert [r["number"] for r in table] == [str(n) for n in range(1, 8)]
    assert table[5] | {"date": ""} == {
        "number": "6",
        "date": "",
        "query_as_run": "aspirin AND stroke",
        "query_typed": "#1",
        "mode": "lexical",
        "count": "3",
        "counted": "set",
        "baseline_year": "2026",
        "last_file": "pubmed26n0002.xml",
        "articles_in_corpus": "4",
    }


def test_clear_forgets_every_search_and_leaves_no_query_text_on_disk(
    home: Home, tmp_path: Path
) -> None:
    import shutil

    copy = Paths(tmp_path / "copy")
    shutil.copytree(home.paths.home, copy.home)
    assert "cleared 7 searches" in cli(copy, "history", "clear")
    assert json.loads(cli(copy, "history", "--json"))["lines"] == []
    written = b"".join(p.read_bytes() for p in copy.home.glob("history.sqlite*"))
    assert b"aspirin" not in written
    cli(copy, "search", "statins[ti]", "--count")
    assert json.loads(cli(copy, "history", "--json"))["lines"][0]["number"] == 1


def test_an_unknown_hash_n_is_a_syntax_error_naming_it(home: Home) -> None:
    result = CliRunner().invoke(main, ["--home", str(home.paths.home), "search", "#42"])
    assert result.exit_code == 2
    assert result.stderr == (
        "medsearch: error: no search #42 in the history (see: medsearch history)\n  #42\n  ^\n"
    )


# -- the parts, without a home ------------------------------------------------------------


def test_hash_n_expands_to_the_query_as_run_in_parentheses() -> None:
    runs = {1: "heart failure", 2: '"atrial fibrillation"[ti]'}

    def resolve(n: int) -> str:
        if n not in runs:
            raise QuerySyntaxError(f"no search #{n} in the history")
        return runs[n]

    parsed = parse_query("#1 AND #2 NOT 2019[dp]", history=resolve)
    assert parsed.text == '(heart failure) AND ("atrial fibrillation"[ti]) NOT 2019[dp]'
    assert format_query(parsed) == 'heart AND failure AND "atrial fibrillation"[ti] NOT 2019[dp]'
    assert parse_query("#1", history=resolve).set_query is False  # plain words stay ranked
    with pytest.raises(QuerySyntaxError, match="#1 at 0 refers to search 1 of the history"):
        parse_query("#1")  # no history to read: never silently the word "#1"
    with pytest.raises(QuerySyntaxError) as unknown:
        parse_query("#1 OR #3", history=resolve)
    # the #N, not "at 6": the caret under the text shows the place
    assert str(unknown.value).splitlines()[0] == "no search #3 in the history"
    assert unknown.value.position == 6  # where the TUI puts the cursor


QUERIES = [
    "aspirin stroke prevention",
    "(heart OR kidney) failure AND 2015:2020[dp]",
    'smith ja[au] "heart attack*"[tiab] NOT review[pt]',
    '"hip pain"[tiab:~2] OR 1 2 3[pmid]',
    "immun* AND 2019/08[dp] AND english[la] AND (nature[ta] OR science[ta])",
    "brca1[ti] AND (NOT mouse OR rat) AND 2015/03/01:2016/02[dp]",
    "5-HT(2A) benzo[a]pyrene[tiab]",
    "cancer[mh] AND medline[sb] AND therapy[sh] AND 10.1000/xyz[aid]",
    "cataract[mh:noexp] OR (lens OR eye)[majr:noexp]",
]


def _bare(node: Node | None) -> object:
    """``node`` without positions (dates as their bounds): what parsing must agree on."""
    if node is None or isinstance(node, Term | Phrase | Prefix):
        return node if node is None else replace(node, pos=0)
    if isinstance(node, YearRange):
        return node.bounds
    if isinstance(node, Tagged):
        return ("tag", node.tag, node.noexp, _bare(node.node))
    if isinstance(node, Not):
        return ("not", _bare(node.child))
    kind = "or" if isinstance(node, Or) else "and"
    return (kind, isinstance(node, Or) and node.words, [_bare(c) for c in node.children])


@pytest.mark.parametrize("query", QUERIES)
def test_the_query_as_run_parses_back_to_the_same_query(query: str) -> None:
    parsed = parse_query(query)
    again = parse_query(format_query(parsed))
    assert (_bare(again.node), again.filters, again.set_query) == (
        _bare(parsed.node),
        parsed.filters,
        parsed.set_query,
    )


def test_command_line_filters_are_written_as_the_tags_they_mean() -> None:
    flags = Filters(year_from=2015, journals=("BMJ", "Lancet"), publication_types=("Review",))
    text = format_query(parse_query("sepsis"), flags)
    assert text == 'sepsis AND 2015:3000[dp] AND "Review"[pt] AND ("BMJ"[ta] OR "Lancet"[ta])'
    assert parse_query(text).filters == Filters(
        date_from=20150000,
        date_to=30001231,
        journals=("BMJ", "Lancet"),
        publication_types=("Review",),
    )


def test_a_set_packs_to_a_few_bytes_a_pmid_and_back() -> None:
    rng = np.random.default_rng(0)
    pmids = np.unique(rng.integers(30_000_000, 41_000_000, 10_000))
    blob = pack_pmids(pmids)
    assert np.array_equal(unpack_pmids(blob), pmids)
    assert len(blob) < 3 * len(pmids)
    huge = np.array([1, 2**40, 2**50], dtype=np.int64)  # PMIDs far past NCBI's 8 digits
    assert np.array_equal(unpack_pmids(pack_pmids(huge)), huge)
    assert unpack_pmids(pack_pmids(np.zeros(0, dtype=np.int64))).size == 0


def test_no_history_file_until_something_is_searched(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "fresh")
    assert open_history(paths, write=False) is None
    assert json.loads(cli(paths, "history", "--json"))["lines"] == []


@pytest.mark.thorough
def test_a_home_the_reader_may_not_write_searches_and_lists_but_records_nothing(
    home: Home,
) -> None:
    from test_readonly_home import copy_of, listing, lock, run_as_reader

    with copy_of(home.paths.home) as copy:
        lock(copy)
        before = listing(copy)
        search, combined, history = run_as_reader(
            copy,
            ["search", "aspirin", "--mode", "lexical", "--count"],
            ["search", "#3", "--count"],
            ["history", "--json"],
        )
        assert (search[0], search[2], combined[:3]) == (0, "", (0, "1\n", ""))
        assert history[0] == 0
        assert len(json.loads(history[1])["lines"]) == 7  # what the owner recorded, unchanged
        assert listing(copy) == before


def test_a_second_prisma_export_to_the_same_folder_says_it_replaced_the_log(
    home: Home,
) -> None:
    folder = home.paths.home.parent / "log"
    assert (folder / "search-log.md").exists()
    again = cli(home.paths, "history", "--export", "prisma", "-o", str(folder))
    assert again.strip().endswith("search-log.csv (it replaced the earlier log)")
    assert "(it replaced" not in home.outputs["export"]
