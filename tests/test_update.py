"""`medsearch update` and watches against a local NCBI site (a real HTTP server on
127.0.0.1 serving ``pubmed/baseline/`` and ``pubmed/updatefiles/``), a real store, a real
tantivy index and real parsing, one scenario run once for the module:

a 2026 baseline; watches made on it; day one (a new article in the watched set, one
outside it, a replacement that enters the set, a deletion); day two (another new one, a
replacement of day one's, a deletion); a run with nothing new; a day-three file that
fails its MD5; a 2027 baseline appearing on the mirror, and the move to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from httpserver import serve
from update_site import baseline, day_one, day_two, publish

from benchmarks.synth import article_xml
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store

HF = 'statin*[ti] AND "heart failure"[ti]'
ATOM = "{http://www.w3.org/2005/Atom}"


def cli(home: Path, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return {"code": result.exit_code, "out": result.stdout, "err": result.stderr}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("update")
    root, home = tmp / "site", tmp / "home"
    mail = tmp / "mail"
    mail.mkdir()
    got: dict[str, Any] = {"home": home, "root": root, "mail": mail}
    got["ingest"] = cli(home, "ingest", str(baseline(root)), "--no-encode", "--jobs", "0")
    got["add"] = [
        cli(home, "watch", "add", "hf", HF),
        cli(home, "watch", "add", "hf-revised", HF, "--replaced"),
        cli(home, "watch", "add", "registry", "kidney registry", "--json"),
    ]
    with serve(root) as server:
        update = ("update", "--mirror", server.url + "pubmed/", "--jobs", "0")
        day_one(root)
        got["day1"] = cli(home, *update, "--json")
        day_two(root)
        exec_cmd = f'cat > "{mail}/$MEDSEARCH_WATCH-$MEDSEARCH_NEW.txt"'
        got["day2"] = cli(home, *update, "--quiet", "--exec", exec_cmd)
        got["nothing"] = cli(home, *update, "--quiet")
        bad = "/pubmed/updatefiles/pubmed26n0004.xml.gz.md5"
        publish(
            root / "pubmed" / "updatefiles",
            "pubmed26n0004.xml.gz",
            [article_xml(13, "Statin timing in heart failure", "Day three.")],
        )
        server.override(bad, b"MD5(pubmed26n0004.xml.gz)= " + b"0" * 32 + b"\n")
        got["md5"] = cli(home, *update)
        with Store(Paths(home).store, readonly=True) as store:
            got["after_md5"] = (store.existing([13]), store.files.latest("pubmed26n0004.xml.gz"))
        server.behave(bad)
        publish(
            root / "pubmed" / "baseline",
            "pubmed27n0001.xml.gz",
            [article_xml(1, "Statin therapy in heart failure", "Statins reduce admissions.")],
        )
        publish(
            root / "pubmed" / "updatefiles",
            "pubmed27n0002.xml.gz",
            [article_xml(14, "Statin adherence in heart failure", "Next year.")],
        )
        got["offer"] = cli(home, *update)
        with Store(Paths(home).store, readonly=True) as store:
            got["before_move"] = store.existing([13, 14])
        got["move"] = cli(home, *update, "--baseline", "--json")
    return got


def names(entries: list[dict[str, Any]]) -> dict[str, list[int]]:
    return {w["name"]: [h["pmid"] for h in w["hits"]] for w in entries}


@pytest.mark.thorough  # a whole ingest and update: seconds
def test_day_one_reports_the_new_article_that_entered_the_set_and_not_the_revised_one(
    scenario: dict[str, Any],
) -> None:
    assert scenario["ingest"]["code"] == 0
    assert all(a["code"] == 0 for a in scenario["add"])
    day1 = scenario["day1"]
    assert day1["code"] == 0, day1["err"]
    report = json.loads(day1["out"])
    assert (report["ingested"], report["added"], report["replaced"], report["deleted"]) == (
        1,
        2,
        1,
        1,
    )
    found = names(report["digest"]["watches"])
    assert found["hf"] == [10]  # 11 is outside the set; 2 entered it as a revised record
    assert found["hf-revised"] == [10, 2]  # ... which a watch asking for replacements gets
    assert report["digest"]["files"] == ["pubmed26n0002.xml.gz"]


def test_a_ranked_watch_keeps_new_articles_scoring_at_least_its_50th_hit(
    scenario: dict[str, Any],
) -> None:
    made = json.loads(scenario["add"][2]["out"])
    assert made["kind"] == "ranked" and made["threshold"] > 0  # 55 fillers: a real 50th hit
    day1 = json.loads(scenario["day1"]["out"])["digest"]["watches"]
    registry = next(w for w in day1 if w["name"] == "registry")
    # 10's abstract is a kidney registry trial; 11 (the liver) matches neither word
    assert [h["pmid"] for h in registry["hits"]] == [10]
    assert registry["hits"][0]["score"] >= made["threshold"]
    assert registry["checked"] == 2  # only what day one added was scored


def test_a_ranked_watch_scores_a_candidate_exactly_as_a_search_ranks_it(
    scenario: dict[str, Any],
) -> None:
    from medsearch.index.lexical.shards import open_lexical
    from medsearch.query import parse_query

    query = parse_query("kidney registry")
    with open_lexical(Paths(scenario["home"]).lexical_index, create=False) as lexical:
        ranked = lexical.rank(query, k=100)
        by_search = dict(zip(ranked.pmids, ranked.scores, strict=True))
        scored = lexical.scores([10, 12, 100, 101], query)
    assert set(scored) == {100, 101}  # 10 (revised on day two) and 12 hold neither word
    assert scored == pytest.approx({p: by_search[p] for p in scored}, rel=1e-6)


def test_a_ranked_watch_threshold_can_be_set_and_a_set_query_has_none(
    scenario: dict[str, Any],
) -> None:
    home = scenario["home"]
    made = json.loads(cli(home, "watch", "threshold", "registry", "2.5", "--json")["out"])
    assert made["threshold"] == 2.5
    refused = cli(home, "watch", "threshold", "hf", "1")
    assert refused["code"] == 2 and "is a set query" in refused["err"]


def test_day_two_reports_only_what_came_that_day_and_pipes_each_digest(
    scenario: dict[str, Any],
) -> None:
    day2 = scenario["day2"]
    assert day2["code"] == 0, day2["err"]
    # --quiet: the digest of watches with news, nothing else (10 was replaced: not again)
    assert day2["out"].splitlines() == [
        f"hf ({HF}): 1 new article",
        "  PMID 12  Statin dosing in heart failure (Journal of Testing, 2020)",
        f"hf-revised ({HF}): 1 new article",
        "  PMID 12  Statin dosing in heart failure (Journal of Testing, 2020)",
    ]
    mail: Path = scenario["mail"]
    assert sorted(p.name for p in mail.iterdir()) == ["hf-1.txt", "hf-revised-1.txt"]
    assert "PMID 12" in (mail / "hf-1.txt").read_text()


def test_a_quiet_update_with_nothing_new_prints_nothing(scenario: dict[str, Any]) -> None:
    assert scenario["nothing"] == {"code": 0, "out": "", "err": ""}


def test_a_file_failing_its_md5_fails_the_update_by_name_and_nothing_of_it_is_applied(
    scenario: dict[str, Any],
) -> None:
    md5 = scenario["md5"]
    assert md5["code"] == 1
    assert "pubmed26n0004.xml.gz" in md5["err"] and "checksum mismatch" in md5["err"]
    assert "up to date" not in md5["out"]  # it once said so just before the failure
    assert scenario["after_md5"] == (set(), None)


def test_a_newer_baseline_is_announced_with_its_cost_and_its_update_files_wait(
    scenario: dict[str, Any],
) -> None:
    offer = scenario["offer"]
    assert offer["code"] == 0, offer["err"]
    assert "applied 1 file" in offer["out"]  # day three, its checksum good again
    assert "NCBI has published the 2027 baseline (1 files" in offer["out"]
    assert "`medsearch update --baseline`" in offer["out"]
    assert scenario["before_move"] == {13}  # 2027's update file waited
    move = json.loads(scenario["move"]["out"])
    assert scenario["move"]["code"] == 0 and move["year"] == 2027
    assert move["ingested"] == 2  # the new baseline, then its update file
    moved = names(move["digest"]["watches"])
    assert moved["hf"] == [14]  # 1 was in the set already
    assert moved["hf-revised"] == [14]  # a baseline sends records again: not revisions


def test_the_store_and_ledger_hold_each_day_once_with_replacements_and_deletions(
    scenario: dict[str, Any],
) -> None:
    with Store(Paths(scenario["home"]).store, readonly=True) as store:
        assert store.existing([1, 2, 3, 10, 11, 12, 13, 14]) == {1, 2, 10, 12, 13, 14}
        assert store.get(2).title == "Statin use in heart failure"
        assert store.get(10).abstract_text == "Corrected abstract."
        done = sorted(e.name for e in store.files.entries() if e.status == "done")
    assert done == [
        "pubmed26n0001.xml.gz",
        "pubmed26n0002.xml.gz",
        "pubmed26n0003.xml.gz",
        "pubmed26n0004.xml.gz",
        "pubmed27n0001.xml.gz",
        "pubmed27n0002.xml.gz",
    ]


def test_each_run_leaves_one_line_in_the_log(scenario: dict[str, Any]) -> None:
    lines = Paths(scenario["home"]).update_log.read_text().splitlines()
    assert len(lines) == 6
    assert "applied 1 file: 2 added, 1 replaced, 1 deleted; watches: 4 new" in lines[0]
    assert "failed:" in lines[3] and "pubmed26n0004.xml.gz" in lines[3]
    assert "baseline 2027 available" in lines[4]


def test_each_watch_has_an_atom_feed_with_the_elements_rfc_4287_requires(
    scenario: dict[str, Any],
) -> None:
    feed = ET.parse(Paths(scenario["home"]).feeds / "hf.atom").getroot()
    assert feed.tag == f"{ATOM}feed"
    for required in ("id", "title", "updated"):
        assert (feed.findtext(f"{ATOM}{required}") or "").strip()
    assert feed.findtext(f"{ATOM}author/{ATOM}name") == "medsearch"
    entries = feed.findall(f"{ATOM}entry")
    assert [e.findtext(f"{ATOM}title") for e in entries][-2:] == [
        "Statin dosing in heart failure",
        "Statin withdrawal in heart failure",
    ]
    ids = [e.findtext(f"{ATOM}id") for e in entries]
    assert len(set(ids)) == len(ids) == 4  # 10, 12, 13, 14
    for entry in entries:
        assert (entry.findtext(f"{ATOM}updated") or "").endswith("+00:00")
        link = entry.find(f"{ATOM}link")
        assert link is not None and link.get("href", "").startswith("https://pubmed.ncbi")


def test_watch_show_lists_unread_hits_and_marking_them_read_empties_new(
    scenario: dict[str, Any],
) -> None:
    home = scenario["home"]
    listed = json.loads(cli(home, "watch", "list", "--json")["out"])["watches"]
    assert {w["name"]: (w["unread"], w["hits"]) for w in listed}["hf-revised"] == (5, 5)
    shown = json.loads(cli(home, "watch", "show", "hf-revised", "--new", "--json")["out"])
    assert {h["pmid"]: h["change"] for h in shown["hits"]} == {
        14: "added",
        13: "added",
        12: "added",
        10: "added",
        2: "replaced",
    }
    assert cli(home, "watch", "show", "hf-revised", "--since", "2999-01-01")["out"] == (
        "hf-revised: no hits\n"
    )
    cli(home, "watch", "show", "hf-revised", "--new", "--mark-read")
    assert (
        cli(home, "watch", "show", "hf-revised", "--new")["out"] == "hf-revised: no unread hits\n"
    )
    assert len(json.loads(cli(home, "watch", "show", "hf-revised", "--json")["out"])["hits"]) == 5


def test_a_second_update_while_another_writer_holds_the_home_exits_3(tmp_path: Path) -> None:
    home = tmp_path / "busy"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from medsearch.lock import write_lock; from medsearch.paths"
            " import Paths\nwith write_lock(Paths.resolve(sys.argv[1]), 'update'):\n"
            " print('held', flush=True); time.sleep(60)",
            str(home),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        busy = cli(home, "update", "--mirror", "http://127.0.0.1:9/pubmed/")
    finally:
        holder.kill()
        holder.wait()
    assert busy["code"] == 3
    assert busy["err"].startswith("medsearch: error: already running: another medsearch process")
    assert busy["err"].count("\n") == 1
    assert "already running" in Paths(home).update_log.read_text()


def test_print_timer_prints_a_systemd_timer_a_cron_line_and_a_launchd_plist(
    tmp_path: Path,
) -> None:
    out = cli(tmp_path / "h", "update", "--print-timer")["out"]
    assert "OnCalendar=*-*-* 07:30" in out and "Persistent=true" in out
    assert f"--home {tmp_path / 'h'} update --quiet" in out
    cron = [line for line in out.splitlines() if line.startswith("30 7 * * * ")]
    assert len(cron) == 1
    plist = out[out.index("<?xml") : out.index("</plist>") + len("</plist>")]
    keys = [k.text for k in ET.fromstring(plist.split("\n", 2)[2]).iter("key")]
    assert "ProgramArguments" in keys and "StartCalendarInterval" in keys
    assert not (tmp_path / "h").exists()  # nothing installed, not even the home


def test_a_failing_update_with_json_prints_ingests_object_with_its_error(tmp_path: Path) -> None:
    """A script reading ``update --json`` gets one object whatever happened, as from
    ``ingest --json``: the summary's keys, the error line and the exit status."""
    home = tmp_path / "fresh"
    failed = cli(home, "update", "--json", "--mirror", "http://127.0.0.1:9/pubmed/")
    assert failed["code"] == 2
    report = json.loads(failed["out"])
    assert report["error"].startswith("this data home holds no PubMed baseline yet")
    assert report["exit_status"] == 2
    ingest_shape = json.loads(
        cli(home, "ingest", "--json", "--no-encode", "--jobs", "0", str(tmp_path / "none.xml"))[
            "out"
        ]
    )
    assert set(ingest_shape) - {"stopped_in"} <= set(report)
    assert report["digest"] is None and report["files"] == 0
