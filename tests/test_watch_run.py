"""`watch run` on its own: a run while another writer leaves the lexical index behind the
store waits instead of skipping articles, and with no writer it mends the index first; a broken watch is reported and the others still run; rm removes the
watch and its feed."""

from __future__ import annotations

import fcntl
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_watch_run_waits_for_the_index_survives_a_broken_watch_and_rm_removes_all(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout flares", "")])])
        assert cli(paths.home, "watch", "add", "gout", "gout[ti]")[0] == 0
        assert cli(paths.home, "watch", "add", "broken", "flares[ti]")[0] == 0
        ingestor.run([pubmed_file(tmp_path / "b.xml", [article_xml(2, "Gout in winter", "")])])
    with sqlite3.connect(paths.watches_file) as conn:  # saved by a medsearch that read it
        conn.execute("UPDATE watches SET query = 'gout AND (' WHERE name = 'broken'")
    with Store(paths.store) as store, store.transaction():  # what a writer mid-unit leaves
        store.unindexed.mark([2])
    lock = os.open(paths.home / "writer.lock", os.O_RDWR | os.O_CREAT)
    try:  # another process writing the home: the watches wait for it
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        code, out, _ = cli(paths.home, "watch", "run")
        assert code == 0 and "the lexical index is catching up" in out
        assert "run `medsearch watch run` after it finishes" in out
    finally:
        os.close(lock)
    code, out, _ = cli(paths.home, "watch", "run")  # no writer: it mends the index and runs
    assert "catching up" not in out
    with Store(paths.store, readonly=True) as store:
        assert store.unindexed.count() == 0
    assert code == 0
    assert out.splitlines()[0].startswith("note: watch broken did not run: ")
    assert "gout (gout[ti]): 1 new article" in out and "PMID 2  Gout in winter" in out
    assert paths.feeds.joinpath("gout.atom").exists()
    assert cli(paths.home, "watch", "rm", "gout")[0] == 0
    assert not paths.feeds.joinpath("gout.atom").exists()
    code, _, err = cli(paths.home, "watch", "show", "gout")
    assert code == 1 and "no watch called 'gout'" in err


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders"
)
def test_watch_list_works_in_a_read_only_home(tmp_path: Path) -> None:
    """It opened the book to write (and probed the home), so a read-only home refused."""
    home = tmp_path / "home"
    with Ingestor(Paths(home), jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout flares", "")])])
    assert cli(home, "watch", "add", "gout", "gout[ti]")[0] == 0
    for leftover in home.glob("watches.sqlite-*"):
        leftover.unlink()
    modes = {p: p.stat().st_mode for p in [home, *home.rglob("*")]}
    try:
        for path in modes:
            path.chmod(path.stat().st_mode & ~0o222)
        code, out, err = cli(home, "watch", "list")
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    assert code == 0, err
    assert out.startswith("gout\t0 unread / 0\t")
