"""`medsearch check FILE --watch NAME`: a manuscript's references, re-checked on every
`watch run` (so after every `update`). A reference that a later update file retracts,
puts under an expression of concern or corrects is reported once, with the notice's
PMID, in the digest, `--json`, the Atom feed and `watch show`; a notice the reference
already had when it was watched is never news."""

from __future__ import annotations

import json
import sqlite3
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.watches.book import WatchBook

ATOM = "{http://www.w3.org/2005/Atom}"


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def linked(pmid: int, title: str, links: dict[str, int], *, pub_types: tuple[str, ...] = ()) -> str:
    """A record with a ``CommentsCorrectionsList`` (RefType -> the other PMID)."""
    refs = "".join(
        f'<CommentsCorrections RefType="{kind}"><RefSource>Notice</RefSource>'
        f'<PMID Version="1">{other}</PMID></CommentsCorrections>'
        for kind, other in links.items()
    )
    xml = article_xml(pmid, title, pub_types=pub_types)
    return xml.replace(
        "<MeshHeadingList>",
        f"<CommentsCorrectionsList>{refs}</CommentsCorrectionsList><MeshHeadingList>",
    )


@dataclass(frozen=True)
class Home:
    paths: Paths
    out: dict[str, tuple[int, str, str]]
    """What each step's command returned: exit code, stdout, stderr."""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    """A home whose reference list is watched, then two update files: the first retracts
    one reference by a notice record alone and corrects another; the second re-issues
    the retracted reference with the same link and retracts the corrected one."""
    tmp = tmp_path_factory.mktemp("checkwatch")
    paths = Paths(tmp / "home")
    steps: dict[str, tuple[int, str, str]] = {}
    with Ingestor(paths, jobs=0) as ingestor:
        first = [
            article_xml(1, "Statins after stroke"),
            article_xml(2, "Aspirin in the elderly"),
            article_xml(3, "Gout flares in winter"),
            article_xml(4, "Unrelated cohort"),
            linked(
                5, "A fabricated trial", {"RetractionIn": 9}, pub_types=("Retracted Publication",)
            ),
        ]
        ingestor.run([pubmed_file(tmp / "a.xml", first)])
        pmids = tmp / "refs.txt"
        pmids.write_text("1\n2\n3\n5\n")
        steps["check"] = cli(paths.home, "check", str(pmids), "--watch", "paper", "--json")
        steps["quiet"] = cli(paths.home, "watch", "run", "--json")
        second = [
            linked(
                100,
                "Retraction: Statins after stroke",
                {"RetractionOf": 1},
                pub_types=("Retraction of Publication",),
            ),
            linked(2, "Aspirin in the elderly", {"ErratumIn": 101}),
            article_xml(4, "Unrelated cohort, revised"),
        ]
        ingestor.run([pubmed_file(tmp / "b.xml", second)])
        steps["run"] = cli(paths.home, "watch", "run", "--json")
        steps["show"] = cli(paths.home, "watch", "show", "paper")
        third = [
            linked(1, "Statins after stroke", {"RetractionIn": 100}),
            linked(2, "Aspirin in the elderly", {"ErratumIn": 101, "RetractionIn": 102}),
        ]
        ingestor.run([pubmed_file(tmp / "c.xml", third)])
        steps["again"] = cli(paths.home, "watch", "run")
    steps["list"] = cli(paths.home, "watch", "list")
    steps["taken"] = cli(paths.home, "check", "1", "--watch", "paper")
    steps["threshold"] = cli(paths.home, "watch", "threshold", "paper", "3.5")
    return Home(paths, steps)


def test_check_saves_the_resolved_references_as_a_watch(home: Home) -> None:
    code, out, _ = home.out["check"]
    assert code == 4  # reference 5 was retracted already: check says so, as without --watch
    saved = json.loads(out)["watch"]
    assert saved["kind"] == "references" and saved["query"] == "4 references from refs.txt"
    code, out, _ = home.out["list"]
    assert code == 0 and "paper\t" in out and "reference list" in out
    code, out, err = home.out["taken"]
    assert code == 2 and out == "" and "a watch called 'paper' exists" in err
    code, _, err = home.out["threshold"]
    assert code == 2 and "is a reference list" in err


def test_nothing_is_news_before_an_update_and_a_known_retraction_never_is(
    home: Home,
) -> None:
    code, out, _ = home.out["quiet"]
    assert code == 0 and json.loads(out)["watches"][0]["new"] == 0


def test_a_retraction_and_an_erratum_from_an_update_are_reported_with_their_notices(
    home: Home,
) -> None:
    code, out, _ = home.out["run"]
    assert code == 0
    (paper,) = json.loads(out)["watches"]
    found = [(h["pmid"], h["change"], h["notice"]) for h in paper["hits"]]
    assert found == [(1, "retracted", 100), (2, "corrected", 101)]
    code, out, _ = home.out["show"]
    assert "PMID 1 RETRACTED (notice PMID 100)  Statins after stroke" in out
    assert "PMID 2 CORRECTED (notice PMID 101)" in out


def test_a_reference_is_reported_again_only_for_a_new_notice(
    home: Home,
) -> None:
    """Reference 1 comes back with the retraction already reported: not news. Reference
    2, corrected before, is now retracted: news, with the retraction's PMID."""
    code, out, _ = home.out["again"]
    assert code == 0
    assert out.splitlines()[0] == "paper (4 references from refs.txt): 1 newly flagged reference"
    assert "PMID 2 RETRACTED (notice PMID 102)  Aspirin in the elderly" in out
    assert "PMID 1 " not in out


def test_the_feed_lists_each_flagged_reference_once(home: Home) -> None:
    paths = home.paths
    feed = ET.parse(paths.feeds / "paper.atom").getroot()
    summaries = [e.findtext(f"{ATOM}summary") for e in feed.iter(f"{ATOM}entry")]
    assert sorted(s.split(";")[0] for s in summaries if s) == [
        "retracted: notice PMID 100",
        "retracted: notice PMID 102",
    ]


def test_a_book_made_before_reference_lists_is_upgraded_keeping_its_hits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "watches.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE watches (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
            " query TEXT NOT NULL, kind TEXT NOT NULL CHECK (kind IN ('set', 'ranked')),"
            " mode TEXT, filters TEXT NOT NULL DEFAULT '{}', threshold REAL,"
            " replaced INTEGER NOT NULL DEFAULT 0, created TEXT NOT NULL, last_run TEXT,"
            " last_change INTEGER NOT NULL DEFAULT 0);"
            "CREATE TABLE hits (watch_id INTEGER NOT NULL REFERENCES watches(id)"
            " ON DELETE CASCADE, pmid INTEGER NOT NULL, change TEXT NOT NULL,"
            " score REAL NOT NULL DEFAULT 0, found TEXT NOT NULL, read_at TEXT,"
            " PRIMARY KEY (watch_id, pmid)) WITHOUT ROWID;"
            "INSERT INTO watches(id, name, query, kind, created) VALUES (1, 'gout', 'gout[ti]',"
            " 'set', '2026-01-01');"
            "INSERT INTO hits VALUES (1, 7, 'added', 0, '2026-01-02', NULL);"
        )
    conn.close()
    with WatchBook(path) as book:
        assert [(h.pmid, h.notice) for h in book.hits("gout")] == [(7, None)]
        book.conn.execute(
            "INSERT INTO watches(name, query, kind, created) VALUES ('refs', 'x', 'references',"
            " '2026-01-03')"
        )
        assert [w.kind for w in book.all()] == ["set", "references"]


def test_an_exported_list_is_watched_by_checking_the_export(home: Home, tmp_path: Path) -> None:
    from medsearch.export import write_export
    from medsearch.store import Store

    paths = home.paths
    with Store(paths.store, readonly=True) as store:
        chosen = list(store.get_many([1, 3]).values())
    exported = write_export(chosen, "bibtex", tmp_path / "basket.bib")
    code, out, _ = cli(paths.home, "check", str(exported), "--watch", "exported", "--json")
    assert code == 4  # 1 is retracted by now: said at once, and never news to the watch
    assert json.loads(out)["counts"]["by_pmid"] == 2
    with WatchBook(paths.watches_file) as book:
        assert sorted(book.references("exported")) == [1, 3]
    code, out, _ = cli(paths.home, "watch", "run", "exported", "--json")
    assert json.loads(out)["watches"][0]["new"] == 0
    assert cli(paths.home, "watch", "rm", "exported")[0] == 0
