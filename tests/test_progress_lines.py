"""Progress in a log file: a long ingest under nohup says it is alive, in plain lines."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.commands.progress import LineProgress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_running_task_is_reported_every_interval_with_rate_and_time_left() -> None:
    out, clock = io.StringIO(), Clock()
    progress = LineProgress(out, interval=30, clock=clock)
    progress.start("articles", "Articles", total=1_000_000)
    clock.now += 10
    progress.advance("articles", 40_000)
    assert out.getvalue() == ""  # not yet: one line per interval, not per batch
    clock.now += 30
    progress.advance("articles", 120_000)
    clock.now += 5
    progress.advance("articles", 1_000)
    assert out.getvalue().splitlines() == [
        "Articles: 160,000 of 1,000,000 (16%), 4,000/s, 3m30s left"
    ]
    clock.now += 60
    progress.update("articles", completed=1_000_000)
    progress.finish("articles")
    assert out.getvalue().splitlines()[-1] == "Articles: 1,000,000 done in 1m45s, 9,524/s"


def test_a_task_without_a_total_and_a_message() -> None:
    out, clock = io.StringIO(), Clock()
    progress = LineProgress(out, interval=30, clock=clock)
    progress.start("files", "Files")
    clock.now += 31
    progress.advance("files", 3)
    progress.describe("files", "Files (resumed)")
    progress.message("note: something worth knowing")
    progress.start("empty", "Nothing to do")
    progress.finish("empty")  # a task that did nothing says nothing
    progress.finish("files")
    assert out.getvalue().splitlines() == [
        "Files: 3, 0.097/s",
        "note: something worth knowing",
        "Files (resumed): 3 done in 31s, 0.097/s",
    ]


def test_ingest_with_stderr_in_a_file_logs_plain_lines(tmp_path: Path) -> None:
    pubmed_file(tmp_path / "a.xml", [article_xml(p, f"Sepsis {p}", "Lactate.") for p in (1, 2)])
    result = CliRunner().invoke(
        main, ["--home", str(tmp_path / "home"), "ingest", str(tmp_path / "a.xml"), "--no-encode"]
    )
    assert result.exit_code == 0, result.stderr
    assert "Articles: 2 done in" in result.stderr
    assert "\x1b[" not in result.stderr and "━" not in result.stderr  # no bars, no escapes
