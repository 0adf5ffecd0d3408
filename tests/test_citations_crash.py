"""kill -9 during an ingest, then a plain re-run: the citation graph is what a clean
ingest of the same files gives, in both directions, and agrees with the stored records."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import pubmed_file
from medsearch.cli import main
from medsearch.index.citations import CitationGraph
from medsearch.paths import Paths
from medsearch.store import Store
from tests.test_citations_cli import cited_xml
from tests.test_crash_resume import scalar

pytestmark = pytest.mark.thorough  # kill and resume: .ci/run runs it

FILES = 5
PER_FILE = 300


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pubmed")
    rng = random.Random(3)
    top = FILES * PER_FILE
    for i in range(FILES):
        records = [
            cited_xml(p, rng.sample(range(1, top + 200), rng.randint(0, 30)), 2000 + p % 20)
            for p in range(1 + i * PER_FILE, 1 + (i + 1) * PER_FILE)
        ]
        pubmed_file(folder / f"pubmed26n{i + 1:04d}.xml", records)
    pubmed_file(  # an update: 7 now cites 1 and 2 only; 8 is deleted
        folder / f"pubmed26n{FILES + 1:04d}.xml", [cited_xml(7, [1, 2], 2001)], deletions=[8]
    )
    return folder


def snapshot(home: Path) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    paths = Paths(home)
    with Store(paths.store, readonly=True) as store:
        graph = CitationGraph.open(paths.citations, store.conn)
        assert graph.base_edges is not None  # the arrays were built and are current
        refs = {
            a.pmid: [int(p) for p in graph.references(a.pmid)[0]]
            for batch in store.iter_articles()
            for a in batch
        }
        for pmid, cited in refs.items():  # the edges are the stored records' lists
            assert cited == sorted(store.get(pmid).cited_pmids)
        top = FILES * PER_FILE + 200
        cited_by = {p: graph.cited_by(p).tolist() for p in range(1, top)}
        assert graph.counts(list(range(1, top))).tolist() == [len(v) for v in cited_by.values()]
    return refs, cited_by


def test_sigkill_then_rerun_gives_the_clean_graph(inputs: Path, tmp_path: Path) -> None:
    clean = tmp_path / "clean"
    result = CliRunner().invoke(
        main, ["--home", str(clean), "ingest", str(inputs), "--no-encode", "--jobs", "0"]
    )
    assert result.exit_code == 0, result.output
    want = snapshot(clean)
    assert want[0][7] == [1, 2] and 8 not in want[0]
    assert all(8 not in citing for citing in want[1].values())

    crashed = tmp_path / "crashed"
    run = "from medsearch.cli import main; main()"
    command = [sys.executable, "-c", run, "--home", str(crashed), "ingest"]
    command += [str(inputs), "--no-encode", "--jobs", "2"]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while scalar(crashed, "SELECT COUNT(*) FROM files WHERE status = 'done'") < 2:
        assert proc.poll() is None, "the ingest ended before the kill point"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    rerun = subprocess.run(command, capture_output=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr.decode()[-2000:]
    assert snapshot(crashed) == want
