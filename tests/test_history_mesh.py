"""The search history with MeSH installed: each line records the query that actually
ran (automatic term mapping, exploded headings), ``#N`` re-runs to the same set, and the
PRISMA log prints the translation. ``cite`` is recorded with its suggestions as the set.

Real PubMed records (the 1975 baseline file, when ../shared has it) and the fixture MeSH
(tests/fixtures/mesh: the records' organisms and enzymes, with their descriptor UIs).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from medsearch.cli import main
from medsearch.history.entries import Entry, reads_back
from medsearch.history.recording import record_search, resolver
from medsearch.history.store import MIGRATIONS, now, open_history
from medsearch.paths import Paths
from medsearch.query.field_notes import MESH_NOTE, mesh_note
from medsearch.query.parser import parse_query
from medsearch.retrieval.searcher import Searcher, open_searcher
from tests.conftest import FIXTURES, SHARED_DATA

MESH = FIXTURES / "mesh"
RECORDS = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser" / "pubmed21n0001.xml.gz"


@dataclass(frozen=True)
class Homes:
    plain: Paths
    """The records without MeSH."""
    mesh: Paths
    """The same records with the fixture MeSH imported."""


def cli(home: Paths, *args: str) -> str:
    result = CliRunner().invoke(main, ["--home", str(home.home), *args])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Homes:
    if not RECORDS.exists():
        pytest.skip(f"shared data not available: {RECORDS}")
    plain = Paths(tmp_path_factory.mktemp("plain") / "home")
    cli(plain, "ingest", str(RECORDS), "--no-encode")
    mesh = Paths(tmp_path_factory.mktemp("mesh") / "home")
    shutil.copytree(plain.home, mesh.home)
    cli(mesh, "mesh", "import", str(MESH / "desc2025.xml"), str(MESH / "supp2025.xml"))
    return Homes(plain, mesh)


@pytest.fixture(scope="module")
def searcher(homes: Homes) -> Iterator[Searcher]:
    with open_searcher(homes.mesh) as opened:
        yield opened


def pmids(searcher: Searcher, paths: Paths, query: str) -> set[int]:
    result = searcher.search(
        query, mode="lexical", k=1000, rerank="none", snippets=False, history=resolver(paths)
    )
    assert result.total == len(result.hits)
    return {h.pmid for h in result.hits}


def unbracketed(text: str) -> str:
    return " ".join(text.replace("(", " ").replace(")", " ").split())


def last_line(home: Paths) -> dict[str, Any]:
    lines: list[dict[str, Any]] = json.loads(cli(home, "history", "--json"))["lines"]
    return lines[-1]


def test_a_search_records_its_mesh_translation_as_the_query_as_run(homes: Homes) -> None:
    answer = json.loads(cli(homes.mesh, "search", "lysozyme OR rats", "--json"))
    line = last_line(homes.mesh)
    assert line["query_typed"] == "lysozyme OR rats"
    assert line["translation"] == answer["translation"]
    assert line["query_as_run"] == answer["translation"]
    assert '"Muramidase"[MeSH Terms]' in line["query_as_run"]
    assert line["hash_expands_to"] == answer["translation"]  # it reads back
    assert line["count"] == answer["total"]


def test_without_mesh_the_query_as_run_is_the_query_as_read(homes: Homes) -> None:
    cli(homes.plain, "search", "lysozyme  OR rats", "--count")
    line = last_line(homes.plain)
    assert line["translation"] is None
    assert line["query_as_run"] == line["hash_expands_to"] == "lysozyme OR rats"


@pytest.mark.parametrize(
    "query",
    [
        "rats AND 1975[dp]",
        "hydrolases[mh]",
        "hydrolases[mh:noexp]",
        "mouse[mh] OR lysozyme",
        "(lysozyme OR pepsin)[tiab] NOT mice",
        "mammals[majr]",
        "lysozyme",  # plain words: ranked; #N is the set of every word, translated
    ],
)
def test_hash_n_expands_to_the_translation_and_re_runs_to_the_same_set(
    homes: Homes, searcher: Searcher, query: str
) -> None:
    paths = homes.mesh
    result = searcher.search(query, mode="lexical", k=1000, rerank="none", snippets=False)
    translation = result.translation
    number = record_search(paths, searcher, query, result)
    assert number is not None
    assert resolver(paths)(number) == translation
    rerun = searcher.search(
        f"#{number}", mode="lexical", k=1000, rerank="none", history=resolver(paths)
    )
    assert rerun.total == result.total
    if result.counted == "set":
        assert {h.pmid for h in rerun.hits} == {h.pmid for h in result.hits}
        again = rerun.translation  # words not mapped twice:
        assert unbracketed(again) == unbracketed(translation)  # A OR (B OR C) is A OR B OR C


def test_hash_n_combines_translated_lines(homes: Homes, searcher: Searcher) -> None:
    paths = homes.mesh
    numbers = []
    for query in ("hydrolases[mh]", "rats"):
        result = searcher.search(query, mode="lexical", k=1000, rerank="none", snippets=False)
        numbers.append(record_search(paths, searcher, query, result))
    first, second = numbers
    both = pmids(searcher, paths, f"#{first} AND #{second}")
    assert both == pmids(searcher, paths, "hydrolases[mh] AND rats")
    assert both  # the records hold rats' enzymes


def test_a_translation_that_does_not_read_back_is_kept_but_hash_n_runs_the_query_as_read(
    homes: Homes,
) -> None:
    assert reads_back('("Rats"[MeSH Terms] OR rats) AND 1975[dp]')
    assert not reads_back('"Rats"[MeSH Terms')  # not query syntax
    assert not reads_back(":1975[dp]")  # parses, but not as printed (1000:1975)
    entry = Entry(
        number=0,
        at=now(),
        command="search",
        typed="rats",
        query="rats",
        mode="lexical",
        total=1,
        counted="set",
        translation='"Rats"[MeSH Terms',
    )
    history = open_history(homes.mesh)
    assert history is not None
    with history:
        number = history.record(entry)
    assert resolver(homes.mesh)(number) == "rats"
    line = last_line(homes.mesh)
    assert (line["query_as_run"], line["hash_expands_to"]) == ('"Rats"[MeSH Terms', "rats")


def test_a_rerun_of_a_translated_line_finds_the_same_set(homes: Homes) -> None:
    cli(homes.mesh, "search", "hydrolases[mh] AND rats", "--count")
    number = last_line(homes.mesh)["number"]
    history = open_history(homes.mesh, write=False)
    assert history is not None
    with history:
        entry = history.get(number)
    assert entry is not None and entry.pmids is not None
    searched = json.loads(
        cli(homes.mesh, "search", "hydrolases[mh] AND rats", "-k", "1000", "--json")
    )
    assert set(entry.pmids.tolist()) == {h["pmid"] for h in searched["hits"]}  # the set counted
    assert len(entry.pmids) == searched["total"]
    report = json.loads(cli(homes.mesh, "history", "rerun", str(number), "--json"))
    assert report["diff_available"]
    assert report["now"]["count"] == report["then"]["count"] > 0
    assert not (report["added"] or report["removed"] or report["replaced"])
    assert report["now"]["translation"] == report["then"]["translation"]


def test_the_prisma_log_prints_the_translation(homes: Homes, tmp_path: Path) -> None:
    cli(homes.mesh, "search", "mouse[mh]", "--count")
    cli(homes.mesh, "history", "--export", "prisma", "-o", str(tmp_path))
    markdown = (tmp_path / "search-log.md").read_text(encoding="utf-8")
    table = (tmp_path / "search-log.csv").read_text(encoding="utf-8")
    assert '`"Mice"[MeSH Terms]`' in markdown
    assert '"""Mice""[MeSH Terms]",mouse[mh]' in table  # as run, then as typed


def test_cite_is_recorded_with_its_suggestions_as_the_set(homes: Homes, tmp_path: Path) -> None:
    paragraph = tmp_path / "paragraph.txt"
    paragraph.write_text(
        "Lysozyme activity rose in rats [1]. Pepsin digests protein (Smith et al., 1975).",
        encoding="utf-8",
    )
    answer = json.loads(cli(homes.plain, "cite", "--file", str(paragraph), "-k", "3", "--json"))
    suggested = {hit["pmid"] for c in answer["citances"] for hit in c["hits"]}
    line = last_line(homes.plain)
    assert line["command"] == "cite" and line["set_kept"]
    assert line["query_typed"].startswith("Lysozyme activity rose in rats [1].")
    assert line["query_as_run"] == "references suggested for 2 citing sentences, top 3 each"
    assert line["count"] == len(suggested) > 0
    history = open_history(homes.plain, write=False)
    assert history is not None
    with history:
        entry = history.get(line["number"])
    assert entry is not None and entry.pmids is not None
    assert set(entry.pmids.tolist()) == suggested
    result = CliRunner().invoke(
        main, ["--home", str(homes.plain.home), "search", f"#{entry.number}"]
    )
    assert result.exit_code == 2 and "is a list of suggested references" in result.stderr


def test_noexp_headings_do_not_get_the_note_about_narrower_headings(homes: Homes) -> None:
    assert mesh_note(parse_query("cataract[mh:noexp]")) is None
    assert mesh_note(parse_query("cataract[majr:noexp] AND lens[ti]")) is None
    assert mesh_note(parse_query("cataract[mh:noexp] OR lens[mh]")) == MESH_NOTE
    with open_searcher(homes.plain) as plain:
        result = plain.search("hydrolases[mh:noexp]", mode="lexical", k=10, rerank="none")
        assert result.total > 0 and MESH_NOTE not in result.notes


def test_a_history_from_before_translations_is_read_and_then_migrated(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    paths.home.mkdir()
    with sqlite3.connect(paths.history_db) as conn:
        conn.executescript(MIGRATIONS[0])
        conn.execute(
            "INSERT INTO searches(at, source, command, typed, query) VALUES (?, ?, ?, ?, ?)",
            ("2026-01-01T00:00:00+00:00", "cli", "search", "rats", "rats"),
        )
        conn.execute("PRAGMA user_version = 1")
    conn.close()
    reader = open_history(paths, write=False)  # reading never migrates
    assert reader is not None
    with reader:
        (old,) = reader.entries()
    assert (old.translation, old.as_run, old.line) == (None, "rats", "rats")
    writer = open_history(paths)
    assert writer is not None
    with writer:
        assert writer.version == len(MIGRATIONS)
        assert [e.typed for e in writer.entries()] == ["rats"]
