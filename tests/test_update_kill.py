"""A `medsearch update` killed with SIGKILL half-way (day one applied, day two still
downloading) while a second update is refused; the next run completes with nothing lost
and nothing applied twice, and the watch reports each new article once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import wait_until
from httpserver import serve
from update_site import baseline, day_one, day_two

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store
from medsearch.watches.book import WatchBook

HF = 'statin*[ti] AND "heart failure"[ti]'


def applied(home: Path, name: str) -> bool:
    with Store(Paths(home).store, readonly=True) as store:
        entry = store.files.latest(name)
    return entry is not None and entry.status == "done"


@pytest.mark.thorough
def test_an_update_killed_mid_way_is_completed_by_the_next_run_exactly_once(
    tmp_path: Path,
) -> None:
    root, home = tmp_path / "site", tmp_path / "home"
    runner = CliRunner()
    assert (
        runner.invoke(
            main, ["--home", str(home), "ingest", str(baseline(root)), "--no-encode"]
        ).exit_code
        == 0
    )
    assert runner.invoke(main, ["--home", str(home), "watch", "add", "hf", HF]).exit_code == 0
    day_one(root)
    day_two(root)
    with serve(root) as server:
        server.stall_first("/pubmed/updatefiles/pubmed26n0003.xml.gz", 1, 40)
        args = ["--home", str(home), "update", "--mirror", server.url + "pubmed/", "--no-encode"]
        first = subprocess.Popen(
            [sys.executable, "-c", "from medsearch.cli import main; main()", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        try:
            assert wait_until(
                lambda: (
                    home.joinpath("store.sqlite").exists() and applied(home, "pubmed26n0002.xml.gz")
                )
            )
            second = runner.invoke(main, args)
            assert second.exit_code == 3 and "already running" in second.stderr
            first.send_signal(signal.SIGKILL)
        finally:
            first.kill()
            first.wait()
        assert not applied(home, "pubmed26n0003.xml.gz")
        with WatchBook(Paths(home).watches_file) as book:
            assert book.hits("hf") == []  # killed before its watches ran
        again = runner.invoke(main, [*args, "--json"])
    assert again.exit_code == 0, again.stderr
    with Store(Paths(home).store, readonly=True) as store:
        assert store.existing([1, 2, 3, 10, 11, 12]) == {1, 2, 10, 12}
        names = [e.name for e in store.files.entries()]
        assert sorted(names) == [
            "pubmed26n0001.xml.gz",
            "pubmed26n0002.xml.gz",
            "pubmed26n0003.xml.gz",
        ]
        assert all(e.status == "done" for e in store.files.entries())
        assert store.count() == 58 + 2 - 1 + 1 - 1  # baseline, day one, day two
    with WatchBook(Paths(home).watches_file) as book:
        assert [h.pmid for h in book.hits("hf")] == [12, 10]
    assert '"new": 2' in again.stdout
