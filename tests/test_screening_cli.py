"""``medsearch screen``: a project from a query over a real (tiny) corpus and from files
matched to it, decisions, status with the stopping rule, exports, conflicts, PRISMA and
a simulation, each through the command line as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.paths import Paths

FIXTURES = Path(__file__).parent / "fixtures" / "screening"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("screen")
    paths = Paths(root / "home")
    xml = pubmed_file(
        root / "pubmed26n0001.xml",
        [
            article_xml(30695817, "Exercise training for heart failure", "Rehabilitation."),
            article_xml(2, "Statin therapy in heart failure", "Statins and outcomes."),
            article_xml(3, "Statin dosing and LDL cholesterol", "Dose finding for statins."),
            article_xml(4, "Gout and diet", "Purines."),
        ],
    )
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([xml])
    return paths.home


def run(home: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--home", str(home), "screen", *args], catch_exceptions=False)


def test_start_from_a_query_ranks_by_bm25_and_adds_files_deduplicated(home: Path) -> None:
    started = run(home, "start", "hf", "--query", "statin OR heart", "--json")
    assert started.exit_code == 0, started.output
    data = json.loads(started.output)
    assert data["records"] == 3
    added = run(home, "add", "hf", "--import", str(FIXTURES / "records.nbib"), "--json")
    out = json.loads(added.output)["strategies"][0]
    # the nbib's PMID 30695817 is already in (from the query): one duplicate by PMID
    assert out["identified"] == 2 and out["duplicates"]["pmid"] == 1
    assert out["matched_by"] == {"pmid": 1, "kept as imported": 1}
    dups = json.loads(run(home, "duplicates", "hf", "--json").output)["duplicates"]
    assert len(dups) == 1 and dups[0]["key"] == "pmid"


def test_decide_status_undo_and_export(home: Path, tmp_path: Path) -> None:
    assert run(home, "start", "d", "--import", str(FIXTURES / "labelled.csv")).exit_code == 0
    assert run(home, "decide", "d", "1", "include").exit_code == 0
    bad = run(home, "decide", "d", "2", "exclude", "--reason", "boring")
    assert bad.exit_code == 2 and "not one of the project's reasons" in bad.output
    assert run(home, "reasons", "d", "--add", "boring").output.splitlines()[-1] == "boring"
    ok = run(home, "decide", "d", "2", "exclude", "--reason", "boring", "--note", "off topic")
    assert ok.exit_code == 0 and "record 2: exclude (boring)" in ok.output
    status = json.loads(run(home, "status", "d", "--json").output)
    assert (status["screened"], status["included"], status["excluded"]) == (2, 1, 1)
    assert status["stopping"]["can_stop"] is False
    assert status["stopping"]["more_to_screen"] > 0
    nxt = json.loads(run(home, "next", "d", "--json").output)
    assert nxt["ranked_by"] == "model" and nxt["record"] in (3, 6, 10)
    assert run(home, "undo", "d").output.startswith("undone: record 2 exclude")
    out = tmp_path / "d.ris"
    assert run(home, "export", "d", "--format", "ris", "-o", str(out)).exit_code == 0
    assert "N1  - ASReview_relevant" in out.read_text()
    assert run(home, "export", "d", "--format", "asreview").output.splitlines()[1].endswith(",1")


def test_conflicts_and_prisma(home: Path, tmp_path: Path) -> None:
    assert run(home, "start", "two", "--import", str(FIXTURES / "labelled.csv")).exit_code == 0
    run(home, "decide", "two", "1", "include", "--reviewer", "ann")
    run(home, "decide", "two", "2", "exclude", "--reviewer", "ann")
    run(home, "decide", "two", "1", "include", "--reviewer", "bob")
    run(home, "decide", "two", "2", "include", "--reviewer", "bob")
    result = json.loads(run(home, "conflicts", "two", "--reviewers", "ann,bob", "--json").output)
    assert result["conflicts"] == [{"record": 2, "ann": "exclude", "bob": "include"}]
    assert result["kappa"] == 0.0
    flow = run(home, "prisma", "two", "-o", str(tmp_path / "p"), "--json")
    counts = json.loads(flow.output)["counts"]
    assert counts["identified_total"] == 10 and counts["records_screened"] == 2
    assert (tmp_path / "p" / "prisma.svg").read_text().startswith("<svg")


def test_simulate_prints_the_order_priors_first_and_the_metrics(home: Path) -> None:
    out = run(home, "simulate", str(FIXTURES / "labelled.csv"), "--seed", "2", "--json")
    data = json.loads(out.output)
    assert data["order"][:2] == data["priors"]
    assert sorted(data["order"]) == list(range(1, 11))
    assert data["relevant"] == 4 and 0.0 <= data["loss"] <= 1.0
    assert {"screened", "recall"} <= set(data["stopping"])


def test_a_missing_project_is_one_line(home: Path) -> None:
    result = run(home, "status", "nope")
    assert result.exit_code == 1
    assert result.output.strip().startswith("error: no screening project 'nope'") or (
        "no screening project 'nope'" in result.output
    )


def test_start_from_a_history_line(home: Path) -> None:
    searched = CliRunner().invoke(
        main, ["--home", str(home), "search", "statin[ti]", "--json"], catch_exceptions=False
    )
    assert searched.exit_code == 0, searched.output
    listed = CliRunner().invoke(main, ["--home", str(home), "history", "--json"])
    number = json.loads(listed.output)["lines"][-1]["number"]
    started = run(home, "start", "fromhist", "--from", f"#{number}", "--json")
    assert started.exit_code == 0, started.output
    data = json.loads(started.output)
    assert data["records"] == 2 and data["strategies"][0]["strategy"] == f"history #{number}"
    missing = run(home, "start", "nohist", "--from", "#999")
    assert missing.exit_code == 2 and "no search #999" in missing.output


def test_records_without_text_are_noted_never_silently(home: Path, tmp_path: Path) -> None:
    data = tmp_path / "thin.csv"
    data.write_text("title,abstract\nA real title,Its abstract\n,\n", encoding="utf-8")
    result = CliRunner().invoke(
        main, ["--home", str(home), "screen", "start", "thin", "--import", str(data), "--json"]
    )
    assert result.exit_code == 0
    assert "thin.csv: 1 records have neither title nor abstract" in result.stderr
    assert json.loads(result.stdout)["notes"] == [
        "thin.csv: 1 records have neither title nor abstract"
    ]
