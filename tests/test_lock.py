"""One writer per data home; searches read committed data while an ingest writes.

A researcher ingests in one terminal and searches in another, or starts a second
ingest by mistake: the second writer is refused with a message naming the first, and a
search never cuts off rows an ingest has written but not yet committed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.errors import BusyError, MedsearchError
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.sentence_index import SentenceCollection
from medsearch.lock import holder, write_lock
from medsearch.paths import Paths

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock is POSIX")

HOLD = """
import sys, time
from medsearch.lock import write_lock
from medsearch.paths import Paths
with write_lock(Paths.resolve(sys.argv[1]), "ingest"):
    print("held", flush=True)
    time.sleep(60)
"""


def hold_in_another_process(home: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(home)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_second_writer_is_refused_with_the_first_ones_pid_and_start_time(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "home")
    other = hold_in_another_process(paths.home)
    try:
        busy = rf"`medsearch ingest`, PID {other.pid}, started 20\d\d-\d\d-\d\dT"
        with pytest.raises(BusyError, match=busy), write_lock(paths, "rerank train"):
            pass
        who = holder(paths) or {}
        assert (who.get("pid"), who.get("command")) == (other.pid, "ingest")
    finally:
        other.kill()
        other.wait()


def test_stats_names_the_writer_only_while_it_runs(tmp_path: Path) -> None:
    import json

    home = tmp_path / "home"
    other = hold_in_another_process(home)
    try:
        running = CliRunner().invoke(main, ["--home", str(home), "stats", "--json"])
    finally:
        other.kill()
        other.wait()
    assert running.exit_code == 0, running.stderr
    writer = json.loads(running.stdout)["writer"]
    assert (writer["pid"], writer["command"]) == (other.pid, "ingest")
    after = CliRunner().invoke(main, ["--home", str(home), "stats", "--json"])
    assert "writer" not in json.loads(after.stdout)  # the killed holder's file says nothing


def test_a_writer_killed_with_sigkill_leaves_no_stale_lock(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "home")
    other = hold_in_another_process(paths.home)
    os.kill(other.pid, signal.SIGKILL)
    other.wait()
    with write_lock(paths, "ingest"):
        assert (holder(paths) or {}).get("pid") == os.getpid()
    assert holder(paths) is None  # released and cleared


def test_the_lock_is_reentrant_within_one_process(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "home")
    with write_lock(paths, "eval"), write_lock(paths, "rerank train"):
        assert (holder(paths) or {}).get("command") == "eval"
    with write_lock(paths, "ingest"):  # free again after both exits
        pass


def test_ingest_while_another_ingest_runs_exits_3_and_changes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    pubmed_file(tmp_path / "a.xml", [article_xml(1, "Aspirin and stroke", "Text.")])
    other = hold_in_another_process(home)
    try:
        result = CliRunner().invoke(
            main, ["--home", str(home), "ingest", str(tmp_path / "a.xml"), "--no-encode"]
        )
    finally:
        other.kill()
        other.wait()
    assert result.exit_code == 3
    assert "another medsearch process" in result.stderr
    assert f"PID {other.pid}" in result.stderr
    assert not (home / "store.sqlite").exists()
    result = CliRunner().invoke(
        main, ["--home", str(home), "ingest", str(tmp_path / "a.xml"), "--no-encode"]
    )
    assert result.exit_code == 0, result.stderr


def _vectors(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", [VectorCollection, SentenceCollection])
def test_a_reader_never_cuts_rows_an_ingest_has_not_committed_yet(
    tmp_path: Path, kind: type[VectorCollection] | type[SentenceCollection]
) -> None:
    path = tmp_path / "v"
    writer = kind.open(path, dim=16, profile="test", create=True)
    writer.add(np.arange(1, 11), _vectors(10))
    writer.commit()
    writer.add(np.arange(11, 21), _vectors(10, seed=1))  # in progress, not committed
    for fh in writer._fh.values():
        fh.flush()
    sizes = {f.name: f.stat().st_size for f in path.iterdir()}

    with kind.open(path, dim=16, profile="test", readonly=True) as reader:
        assert len(reader) == 10  # only what the last commit counted
        assert reader.search(_vectors(10)[:1], 3)[0][0][0] == 1
        with pytest.raises(MedsearchError, match="opened for reading"):
            reader.add([99], _vectors(1))
        with pytest.raises(MedsearchError, match="opened for reading"):
            reader.commit()
    assert {f.name: f.stat().st_size for f in path.iterdir()} == sizes  # nothing cut

    writer.commit()
    writer.close()
    with kind.open(path, dim=16, profile="test", readonly=True) as reader:
        assert len(reader) == 20


def test_a_writer_reopening_after_a_crash_still_recovers_to_the_commit(tmp_path: Path) -> None:
    path = tmp_path / "v"
    writer = VectorCollection.open(path, dim=16, profile="test", create=True)
    writer.add(np.arange(1, 6), _vectors(5))
    writer.commit()
    writer.add(np.arange(6, 9), _vectors(3, seed=2))
    for fh in writer._fh.values():
        fh.flush()
    # the writer dies here; the next writer (under the lock) cuts the torn tail
    with VectorCollection.open(path, dim=16, profile="test") as again:
        assert len(again) == 5
        vectors_file = path / again.manifest.vectors_file
        assert vectors_file.stat().st_size == 5 * 16 * 2


HOLD_WRITING = """
import sys, time
from medsearch.lock import write_lock
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.store import Store
paths = Paths.resolve(sys.argv[1])
with write_lock(paths, "ingest"), Store(paths.store) as store, store.transaction():
    store.upsert([Article(pmid=999, title="Uncommitted sepsis article")])
    print("held", flush=True)
    time.sleep(60)
"""


def test_search_and_sql_answer_from_committed_data_while_an_ingest_writes(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    pubmed_file(tmp_path / "a.xml", [article_xml(101, "Sepsis and lactate", "Lactate rose.")])
    assert (
        CliRunner()
        .invoke(main, ["--home", str(home), "ingest", str(tmp_path / "a.xml"), "--no-encode"])
        .exit_code
        == 0
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", HOLD_WRITING, str(home)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "held"
        found = CliRunner().invoke(main, ["--home", str(home), "search", "sepsis", "--json"])
        rows = CliRunner().invoke(
            main, ["--home", str(home), "sql", "SELECT pmid FROM articles ORDER BY pmid"]
        )
        stats = CliRunner().invoke(main, ["--home", str(home), "stats", "--json"])
    finally:
        writer.kill()
        writer.wait()
    assert found.exit_code == 0, found.stderr
    assert [h["pmid"] for h in json.loads(found.stdout)["hits"]] == [101]
    assert rows.exit_code == 0, rows.stderr
    assert rows.stdout.split() == ["pmid", "101"]
    assert stats.exit_code == 0, stats.stderr
    report = json.loads(stats.stdout)
    assert report["writer"]["pid"] == writer.pid and report["articles"] == 1
