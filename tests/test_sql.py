"""`medsearch sql`: the store as SQL tables, read-only, streamed as CSV or JSON.

What a researcher relies on: `articles` holds one row per stored article with plain
columns that match the parsed record; updates replace the row and deletions remove it;
the command never changes the store; CSV and JSON come out exactly; an older store is
filled in (resumably) before it answers.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, shared_data

from benchmarks.synth import article_xml, pubmed_file
from ingest.pubmed_xml import parse_file
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.store import Store, codec
from medsearch.store.backfill import fill
from medsearch.store.columns import NAMES
from medsearch.store.rows import row_of
from medsearch.store.schema import RECORDS_SCHEMA, migrate


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def ingest(home: Path, *inputs: Path) -> None:
    code, _, err = cli(home, "ingest", *map(str, inputs), "--no-encode", "--json")
    assert code == 0, err


def rows(home: Path, query: str) -> list[dict[str, Any]]:
    code, out, err = cli(home, "sql", "--json", query)
    assert code == 0, err
    parsed: list[dict[str, Any]] = json.loads(out)
    return parsed


def expected(article: Article) -> dict[str, Any]:
    """The `articles` row of a parsed record, as docs/sql.md documents each column."""
    authors = [a.display for a in article.authors]
    return {
        "pmid": article.pmid,
        "title": article.title or None,
        "year": article.pub_date.year,
        "journal": article.journal or None,
        "journal_iso": article.journal_abbrev or None,
        "first_author": (authors[0] or None) if authors else None,
        "last_author": (authors[-1] or None) if authors else None,
        "doi": next((v for k, v in article.article_ids if k == "doi"), None),
        "pmcid": next((v for k, v in article.article_ids if k == "pmc"), None),
        "language": list(article.languages),
        "publication_types": list(article.publication_types),
        "mesh_major": [
            m.descriptor for m in article.mesh if m.major or any(q.major for q in m.qualifiers)
        ],
        **expected_notices(article),
    }


NOTICE_LINKS = {  # (status, link on the article, link on the notice), strongest first
    "retracted": (("RetractionIn", "RetractedandRepublishedIn"), ("RetractionOf",)),
    "expression of concern": (("ExpressionOfConcernIn",), ("ExpressionOfConcernFor",)),
    "corrected": (
        ("ErratumIn", "PartialRetractionIn", "CorrectedandRepublishedIn"),
        ("ErratumFor",),
    ),
    "updated": (("UpdateIn",), ("UpdateOf",)),
}


NOTICE_TYPES = {
    "retracted": "Retraction of Publication",
    "expression of concern": "Expression of Concern",
    "corrected": "Published Erratum",
}


def expected_notices(article: Article) -> dict[str, Any]:
    """The notice columns as docs/retractions.md describes them."""
    about = [
        {"status": status, "type": c.ref_type, "pmid": c.pmid}
        for status, (links, _) in NOTICE_LINKS.items()
        for c in article.corrections
        if c.ref_type in links
    ]
    if "Retracted Publication" in article.publication_types and not any(
        n["status"] == "retracted" for n in about
    ):
        about.insert(0, {"status": "retracted", "type": "Retracted Publication", "pmid": None})
    notice_for = [
        {"status": status, "type": c.ref_type, "pmid": c.pmid}
        for status, (_, links) in NOTICE_LINKS.items()
        for c in article.corrections
        if c.ref_type in links
    ]
    for status, kind in NOTICE_TYPES.items():
        if kind in article.publication_types and not any(n["status"] == status for n in notice_for):
            notice_for.append({"status": status, "type": kind, "pmid": None})
    notice_for.sort(key=lambda n: list(NOTICE_LINKS).index(n["status"]))
    return {
        "retracted": int(bool(about) and about[0]["status"] == "retracted"),
        "notice": about[0]["status"] if about else None,
        "notices": about,
        "notice_for": notice_for,
    }


def stored(home: Path) -> dict[int, dict[str, Any]]:
    out = {}
    for row in rows(home, "SELECT * FROM articles ORDER BY pmid"):
        for key in ("language", "publication_types", "mesh_major", "notices", "notice_for"):
            row[key] = json.loads(row[key])
        out[row["pmid"]] = row
    return out


def latest(*paths: Path) -> dict[int, Article]:
    """What the store should hold after ingesting ``paths`` in order."""
    from medsearch.records import Deletion

    out: dict[int, Article] = {}
    for path in paths:
        for item in parse_file(path):
            if isinstance(item, Deletion):
                for pmid in item.pmids:
                    out.pop(pmid, None)
            else:
                out[item.pmid] = item
    return out


def fingerprint(home: Path) -> dict[str, str]:
    """The store's content: the database and its write-ahead log (a reader may create an
    empty log and the shared-memory index; neither holds data)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.glob("store.sqlite*"))
        if not p.name.endswith("-shm") and p.stat().st_size
    }


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A store with three articles that exercise every column."""
    path = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [
            article_xml(
                1,
                'Metformin, "quoted", and\nα-synuclein — Ünïcode',
                year=2016,
                journal="The Lancet",
                abbrev="Lancet",
                pub_types=("Journal Article", "Review"),
                authors=(("Smith", "JA"), ("Müller", "K"), ("Lee", "B")),
                mesh=(("Metformin", True, False), ("Humans", False, False), ("Aging", False, True)),
                languages=("eng", "ger"),
                pmcid="PMC1234567",
            ),
            article_xml(
                2,
                "A trial",
                year=2014,
                journal="The Lancet",
                abbrev="Lancet",
                pub_types=("Randomized Controlled Trial",),
                mesh=(("Metformin", True, True),),
            ),
            article_xml(3, "No authors", year=2020, authors=(), doi=None, languages=()),
        ],
    )
    home = tmp_path / "home"
    ingest(home, path)
    return home


# -- the articles table ----------------------------------------------------------------------


def test_articles_has_the_documented_columns_with_the_records_values(home: Path) -> None:
    got = stored(home)
    assert list(rows(home, "SELECT * FROM articles LIMIT 1")[0]) == list(NAMES)
    assert got[1] == {
        "pmid": 1,
        "title": 'Metformin, "quoted", and α-synuclein — Ünïcode',
        "year": 2016,
        "journal": "The Lancet",
        "journal_iso": "Lancet",
        "first_author": "Smith JA",
        "last_author": "Lee B",
        "doi": "10.5555/test.1",
        "pmcid": "PMC1234567",
        "language": ["eng", "ger"],
        "publication_types": ["Journal Article", "Review"],
        "mesh_major": ["Metformin", "Aging"],  # a major qualifier makes the heading major
        "retracted": 0,
        "notice": None,
        "notices": [],
        "notice_for": [],
    }
    assert got[3]["first_author"] is None and got[3]["doi"] is None
    assert got[3]["language"] == [] and got[3]["mesh_major"] == []


def test_side_tables_list_each_article_under_its_headings_and_types(home: Path) -> None:
    metformin = rows(
        home,
        "SELECT pmid FROM articles_mesh_major WHERE heading = 'Metformin' ORDER BY pmid",
    )
    assert [r["pmid"] for r in metformin] == [1, 2]
    reviews = rows(
        home,
        "SELECT a.pmid FROM articles a JOIN articles_publication_types t USING (pmid)"
        " WHERE t.publication_type = 'Review' AND a.journal_iso = 'Lancet' AND a.year >= 2015",
    )
    assert reviews == [{"pmid": 1}]


def test_the_queries_researchers_ask_are_answered_from_indexes(home: Path) -> None:
    def plan(query: str) -> str:
        found = rows(home, "EXPLAIN QUERY PLAN " + query)
        return " | ".join(r["detail"] for r in found)

    assert "articles_year" in plan("SELECT year, COUNT(*) FROM articles GROUP BY year")
    assert "articles_journal_iso_year" in plan(
        "SELECT pmid FROM articles WHERE journal_iso = 'Lancet' AND year >= 2015"
    )
    assert "PRIMARY KEY" in plan("SELECT pmid FROM articles_mesh_major WHERE heading = 'Aging'")


@pytest.mark.parametrize("jobs", ["0", "2"])
def test_every_fixture_article_has_a_row_equal_to_its_parsed_record(
    tmp_path: Path, jobs: str
) -> None:
    files = [
        FIXTURES / "tricky_articles.xml",
        FIXTURES / "medline_citation_set.xml",
        FIXTURES / "book.xml",
    ]
    home = tmp_path / "home"
    code, _, err = cli(home, "ingest", *map(str, files), "--no-encode", "--jobs", jobs)
    assert code == 0, err
    want = latest(*sorted(files, key=lambda p: p.name))
    assert stored(home) == {p: expected(a) for p, a in want.items()}


def test_real_pubmed_baseline_files_fill_every_column(tmp_path: Path) -> None:
    folder = shared_data("pubmed", "net-synergy-pubmedparser")
    home = tmp_path / "home"
    ingest(home, folder)
    want = latest(*sorted(folder.glob("*.xml.gz")))
    got = stored(home)
    assert got == {p: expected(a) for p, a in want.items()}
    assert sum(1 for r in got.values() if r["mesh_major"]) > len(got) / 2


def test_an_update_replaces_the_row_and_a_deletion_removes_it(tmp_path: Path, home: Path) -> None:
    update = pubmed_file(
        tmp_path / "pubmed26n0002.xml",
        [
            article_xml(
                1,
                "Corrected title",
                year=2017,
                version=2,
                journal="BMJ",
                abbrev="BMJ",
                mesh=(("Diabetes Mellitus", True, False),),
            )
        ],
        deletions=[2],
    )
    ingest(home, update)
    got = stored(home)
    assert sorted(got) == [1, 3]
    assert (got[1]["title"], got[1]["journal_iso"], got[1]["mesh_major"]) == (
        "Corrected title",
        "BMJ",
        ["Diabetes Mellitus"],
    )
    assert rows(home, "SELECT heading, pmid FROM articles_mesh_major ORDER BY heading") == [
        {"heading": "Diabetes Mellitus", "pmid": 1}
    ]
    assert rows(home, "SELECT * FROM articles_publication_types WHERE pmid = 2") == []


def test_a_pmid_given_twice_in_one_file_keeps_the_side_rows_of_its_last_record(
    tmp_path: Path,
) -> None:
    path = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [
            article_xml(7, "First", mesh=(("Asthma", True, False),), pub_types=("Letter",)),
            article_xml(7, "Second", version=2, mesh=(("Cough", True, False),)),
        ],
    )
    home = tmp_path / "home"
    ingest(home, path)
    assert rows(home, "SELECT heading, pmid FROM articles_mesh_major") == [
        {"heading": "Cough", "pmid": 7}
    ]
    assert rows(home, "SELECT publication_type FROM articles_publication_types") == [
        {"publication_type": "Journal Article"}
    ]


# -- read-only ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "refused"),
    [
        ("INSERT INTO articles(pmid) VALUES (99)", "INSERT into articles"),
        ("UPDATE articles SET title = 'x'", "UPDATE of articles"),
        ("DELETE FROM articles", "DELETE from articles"),
        ("DROP TABLE files", "DROP TABLE files"),
        ("DROP VIEW IF EXISTS articles", "DROP VIEW articles"),
        ("CREATE TEMP TABLE t AS SELECT 1", "CREATE TABLE t"),
        ("ATTACH DATABASE 'attached.sqlite' AS other", "ATTACH (or VACUUM INTO)"),
        ("VACUUM INTO 'copy.sqlite'", "ATTACH (or VACUUM INTO)"),
        ("PRAGMA user_version = 7", "PRAGMA user_version = 7"),
        ("PRAGMA journal_mode = DELETE", "PRAGMA journal_mode = DELETE"),
        ("PRAGMA optimize", "PRAGMA optimize"),
        ("BEGIN IMMEDIATE", "BEGIN"),
        ("REINDEX", "REINDEX"),
        # SQLite's own refusal, also before anything runs
        ("DELETE FROM sqlite_master", "SQL: table sqlite_master may not be modified"),
    ],
)
def test_a_query_that_would_write_is_refused_before_it_runs(
    home: Path, query: str, refused: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(home)
    before = fingerprint(home)
    code, out, err = cli(home, "sql", query)
    assert code == 2
    assert out == ""
    if not refused.startswith("SQL: "):
        refused = f"medsearch sql only reads; {refused} is refused (the query did not run)"
    assert err == f"medsearch: error: {refused}\n"
    assert fingerprint(home) == before
    assert not (home / "attached.sqlite").exists() and not (home / "copy.sqlite").exists()


def test_reading_pragmas_and_table_functions_are_allowed(home: Path) -> None:
    columns = rows(home, "SELECT name FROM pragma_table_info('articles')")
    assert [c["name"] for c in columns] == list(NAMES)
    assert rows(home, "PRAGMA user_version") == [{"user_version": 0}]
    counts = rows(
        home,
        "SELECT value AS type, COUNT(*) AS n FROM articles, json_each(publication_types)"
        " GROUP BY value ORDER BY value",
    )
    assert counts == [
        {"type": "Journal Article", "n": 2},
        {"type": "Randomized Controlled Trial", "n": 1},
        {"type": "Review", "n": 1},
    ]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("SELEC pmid FROM articles", 'SQL: near "SELEC": syntax error'),
        ("SELECT * FROM nowhere", "SQL: no such table: nowhere"),
        ("SELECT 1; SELECT 2", "SQL: You can only execute one statement at a time."),
        ("SELECT value FROM json_each('not json')", "SQL: malformed JSON"),
    ],
)
def test_bad_sql_is_one_line_and_a_non_zero_exit(home: Path, query: str, message: str) -> None:
    code, out, err = cli(home, "sql", query)
    assert code == 2
    assert err == f"medsearch: error: {message}\n"
    assert "Traceback" not in out + err


def test_a_query_runs_while_an_ingest_holds_a_write_transaction(home: Path) -> None:
    with Store(Paths(home).store) as writer, writer.transaction():
        writer.upsert([Article(pmid=50, title="Not committed yet")])
        assert rows(home, "SELECT COUNT(*) AS n FROM articles") == [{"n": 3}]
    assert rows(home, "SELECT COUNT(*) AS n FROM articles") == [{"n": 4}]


def test_a_data_home_whose_path_has_uri_characters_is_read(tmp_path: Path) -> None:
    path = pubmed_file(tmp_path / "pubmed26n0001.xml", [article_xml(1, "One")])
    home = tmp_path / "data #1?x=%20"
    ingest(home, path)
    assert rows(home, "SELECT pmid FROM articles") == [{"pmid": 1}]


# -- output formats ----------------------------------------------------------------------------


def test_csv_quotes_commas_quotes_newlines_and_keeps_unicode(home: Path) -> None:
    code, out, err = cli(home, "sql", "SELECT pmid, title, doi, mesh_major FROM articles")
    assert code == 0, err
    parsed = list(csv.reader(io.StringIO(out, newline="")))
    assert parsed[0] == ["pmid", "title", "doi", "mesh_major"]
    assert parsed[1] == [
        "1",
        'Metformin, "quoted", and α-synuclein — Ünïcode',
        "10.5555/test.1",
        '["Metformin","Aging"]',
    ]
    assert parsed[3][2] == ""  # NULL
    assert '"Metformin, ""quoted"", and α-synuclein — Ünïcode"' in out
    assert cli(home, "sql", "--csv", "SELECT pmid, title, doi, mesh_major FROM articles")[1] == out


def test_json_is_an_array_one_object_per_line_and_nl_is_one_object_per_line(home: Path) -> None:
    query = "SELECT pmid, title, year FROM articles WHERE pmid < 3 ORDER BY pmid"
    _, out, _ = cli(home, "sql", "--json", query)
    lines = out.splitlines()
    assert lines[0] == "[" and lines[-1] == "]" and len(lines) == 4
    assert json.loads(out)[0]["title"] == 'Metformin, "quoted", and α-synuclein — Ünïcode'
    _, nl, _ = cli(home, "sql", "--nl", query)
    assert [json.loads(line) for line in nl.splitlines()] == json.loads(out)
    _, empty, _ = cli(home, "sql", "--json", "SELECT pmid FROM articles WHERE pmid = 0")
    assert json.loads(empty) == []
    _, nothing, _ = cli(home, "sql", "--nl", "SELECT pmid FROM articles WHERE pmid = 0")
    assert nothing == ""


def test_json_keys_are_unique_and_blobs_are_base64(home: Path) -> None:
    got = rows(
        home,
        "SELECT a.pmid, m.pmid, x'00ff' AS raw FROM articles a"
        " JOIN articles_mesh_major m USING (pmid) WHERE a.pmid = 2",
    )
    assert got == [{"pmid": 2, "pmid_2": 2, "raw": {"$base64": True, "encoded": "AP8="}}]


def test_a_large_answer_streams_every_row(home: Path) -> None:
    query = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000)"
        " SELECT i FROM n"
    )
    code, out, _ = cli(home, "sql", "--nl", query)
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 25000 and json.loads(lines[-1]) == {"i": 25000}


# -- the schema --------------------------------------------------------------------------------


def test_schema_describes_every_public_table_and_column(home: Path) -> None:
    code, out, _ = cli(home, "sql", "--schema", "--json")
    assert code == 0
    tables = {t["name"]: t for t in json.loads(out)["tables"]}
    assert set(tables) == {"articles", "articles_mesh_major", "articles_publication_types"}
    articles = tables["articles"]
    assert [c["name"] for c in articles["columns"]] == list(NAMES)
    assert all(c["description"] for t in tables.values() for c in t["columns"])
    assert {"year"} in [set(i["columns"]) for i in articles["indexes"]]
    code, text, _ = cli(home, "sql", "--schema")
    assert code == 0
    assert all(name in text for name in NAMES) and "json_each" in text


def test_schema_is_printed_before_anything_is_ingested(tmp_path: Path) -> None:
    code, out, _ = cli(tmp_path / "empty", "sql", "--schema", "--json")
    assert code == 0
    assert [c["name"] for c in json.loads(out)["tables"][0]["columns"]] == list(NAMES)


def test_the_sql_page_documents_every_column() -> None:
    from conftest import REPO

    page = (REPO / "docs" / "sql.md").read_text()
    contract = page.split("## The column contract", 1)[1].split("\n## ", 1)[0]
    assert all(f"`{name}`" in contract for name in NAMES)


def test_the_store_opens_in_the_sqlite_utils_cli(home: Path) -> None:
    pytest.importorskip("sqlite_utils")
    found = subprocess.run(
        [sys.executable, "-m", "sqlite_utils", "rows", str(Paths(home).store), "articles"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [r["pmid"] for r in json.loads(found.stdout)] == [1, 2, 3]


# -- a store written by an older medsearch -----------------------------------------------------


def old_store(home: Path, articles: list[Article]) -> Path:
    """A data home as medsearch wrote it before `articles` was a table of columns."""
    path = Paths(home).ensure().store
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn, target=RECORDS_SCHEMA - 1)
    conn.executemany(
        "INSERT INTO articles(pmid, version, year, content_hash, data) VALUES (?,?,?,?,?)",
        [(*row_of(a)[:4], codec.compress(row_of(a)[4])) for a in articles],
    )
    conn.close()
    return path


def old_articles() -> list[Article]:
    return list(latest(FIXTURES / "tricky_articles.xml").values())


def test_an_older_store_is_filled_by_ingest_and_refused_until_then(tmp_path: Path) -> None:
    home = tmp_path / "home"
    articles = old_articles()
    old_store(home, articles)
    with Store(Paths(home).store, readonly=True) as reader:  # searches go on meanwhile
        assert reader.get(articles[0].pmid) == articles[0]
    code, _, err = cli(home, "sql", "SELECT COUNT(*) FROM articles")
    assert code == 1
    assert "run `medsearch ingest --no-encode` once" in err
    assert f"(schema {RECORDS_SCHEMA - 1})" in err
    code, _, err = cli(home, "ingest", "--no-encode")
    assert code == 0, err
    assert stored(home) == {a.pmid: expected(a) for a in articles}


def test_an_interrupted_fill_resumes_where_it_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medsearch.progress import NullProgress
    from medsearch.store import backfill

    home = tmp_path / "home"
    articles = old_articles()
    old_store(home, articles)
    monkeypatch.setattr(backfill, "BATCH", 3)

    class Interrupted(NullProgress):
        def update(
            self, key: str, *, completed: int | None = None, total: int | None = None
        ) -> None:
            raise KeyboardInterrupt

    with Store(Paths(home).store) as store, pytest.raises(KeyboardInterrupt):
        fill(store, Interrupted())
    code, _, err = cli(home, "sql", "SELECT COUNT(*) FROM articles")
    third = sorted(a.pmid for a in articles)[2]
    last = max(a.pmid for a in articles)
    assert code == 1 and f"(up to PMID {third:,} of {last:,})" in err
    with Store(Paths(home).store) as store:
        assert fill(store) == len(articles) - 3
        assert fill(store) == 0
    assert stored(home) == {a.pmid: expected(a) for a in articles}
