"""`medsearch ingest`'s summary: how long the run and each stage took, and, with
`--json`, one object however the run ends."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import shared_data
from httpserver import serve
from tiny_models import (  # noqa: F401  (session fixtures)
    TinyModels,
    tiny_models_fixture,
    write_tiny_config,
)

from ingest.summary import IngestSummary
from medsearch.cli import main
from medsearch.commands.render import run_time
from medsearch.paths import Paths
from medsearch.store import Store


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def real_records() -> list[str]:
    """Six real PubMed records (Biopython's test files), one file each."""
    return [str(p) for p in sorted(shared_data("pubmed", "biopython-1.88").glob("pubmed*.xml"))]


def test_the_summary_times_the_whole_run_and_each_stage(
    tmp_path: Path, tiny_models: TinyModels
) -> None:
    """Encoding takes far longer than the lexical ingest (hours against minutes on all
    of PubMed): the summary's time is the whole run's, with each stage's beside it, and
    the articles/s is the ingest stage's own."""
    home = tmp_path / "home"
    write_tiny_config(Paths(home), tiny_models)
    args = ("ingest", *real_records(), "--models", "tiny", "--device", "cpu", "--jobs", "0")
    began = time.monotonic()
    code, out, err = cli(home, *args, "--json")
    wall = time.monotonic() - began
    assert code == 0, err
    summary = json.loads(out)
    stages = summary["stages"]
    assert set(stages) == {"prepare", "ingest", "citations", "vectors"}
    assert all(seconds > 0 for seconds in stages.values())
    assert sum(stages.values()) <= summary["seconds"] <= wall
    assert (summary["error"], summary["exit_status"]) == (None, 0)

    code, out, err = cli(home, "ingest", "--models", "tiny", "--device", "cpu")  # nothing new
    assert code == 0, err
    assert out.splitlines()[-1].startswith("time ")
    assert " in all" in out  # a stage too short to show (under 0.05 s) is left out

    again = tmp_path / "again"
    write_tiny_config(Paths(again), tiny_models)
    code, out, err = cli(again, *args)
    assert code == 0, err
    text = " ".join(out.split())  # the table wraps at 80 columns
    time_row = text[text.index(" time ") :]
    assert " in all" in time_row
    # which stages the row names depends on how long each took here (one under 0.05 s
    # is left out); the row's wording is checked with fixed times below
    for shown in ("parse, store and index", "vectors"):
        if shown in time_row.split(" note:")[0]:
            assert time_row.index(" in all") < time_row.index(shown)


def test_run_time_names_each_stage_that_took_visible_time() -> None:
    summary = IngestSummary(
        articles=1_000,
        seconds=7_302.0,
        stages={"prepare": 0.01, "ingest": 2.0, "citations": 0.3, "vectors": 7_299.7},
    )
    assert run_time(summary) == (
        "2 h 01 min in all: parse, store and index 2.0 s (500 articles/s),"
        " citation graph 0.3 s, vectors 2 h 01 min"
    )
    assert run_time(IngestSummary(seconds=0.02, stages={"prepare": 0.02})) == "0.0 s in all"


def test_a_run_that_stops_still_prints_its_json_summary(tmp_path: Path) -> None:
    """The files are ingested, then the vector stage cannot start (an unknown profile):
    --json still prints one object with the error line, the exit status, the stage it
    stopped in and what was written before, and the exit status is the error's."""
    home = tmp_path / "home"
    records = real_records()
    code, out, err = cli(home, "ingest", *records, "--models", "nope", "--jobs", "0", "--json")
    assert code == 1
    assert err.startswith("medsearch: error: unknown model profile 'nope'")
    summary = json.loads(out)
    assert summary["error"] == err.removeprefix("medsearch: error: ").rstrip("\n")
    assert (summary["exit_status"], summary["stopped_in"]) == (1, "vectors")
    assert (summary["ingested"], summary["added"]) == (len(records), 8)
    assert summary["seconds"] >= summary["stages"]["ingest"] > 0
    with Store(Paths(home).store) as store:
        assert store.count() == 8  # what the summary says was written, was


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs Linux's /dev/full")
def test_a_full_disk_mid_download_is_in_the_json_summary(tmp_path: Path) -> None:
    """The second file's download lands on a full disk (/dev/full: a real ENOSPC): the
    first file is in the store, and --json says so beside the error."""
    from benchmarks.synth import article_xml, pubmed_file

    folder = tmp_path / "site" / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    for n in (1, 2):
        name = f"pubmed26n000{n}.xml.gz"
        articles = [article_xml(n * 100 + i, f"File {n} article {i}", "Text.") for i in range(5)]
        pubmed_file(folder / name, articles, gz=True)
        digest = hashlib.md5((folder / name).read_bytes()).hexdigest()
        (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")
    home = tmp_path / "home"
    downloads = home / "downloads" / "baseline"
    downloads.mkdir(parents=True)
    (downloads / "pubmed26n0002.xml.gz.part").symlink_to("/dev/full")
    with serve(tmp_path / "site") as server:
        code, out, err = cli(
            home,
            *("ingest", "--download", "baseline", "--mirror", server.url + "pubmed/"),
            *("--connections", "1", "--no-encode", "--skip-space-check", "--json"),
        )
    assert code == 1 and "disk full" in err
    summary = json.loads(out)
    assert "disk full" in summary["error"] and summary["exit_status"] == 1
    assert (summary["ingested"], summary["added"]) == (1, 5)
    assert {"download", "ingest"} <= set(summary["stages"])
