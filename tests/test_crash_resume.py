"""kill -9 during `medsearch ingest`, then a plain re-run, gives what a clean ingest gives.

The ingest runs as a real process (parsers, writer, tantivy threads, the encoder) and is
killed with SIGKILL, which no handler sees, at two points: while files are being
applied (some done, some not) and while the vector stage encodes (some chunks
committed). The re-run must then resume to the same store, lexical index and vectors
as one uninterrupted ingest of the same files.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from tiny_models import TinyModels, build_tiny_models, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file, write_synthetic_pubmed
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.sentence_index import SentenceCollection
from medsearch.paths import Paths
from medsearch.store import Store

FILES = 4
PER_FILE = 150
# The vector stage commits every COMMIT_ARTICLES articles (20,000 in use): a few here,
# so that a kill can land between two commits of a small corpus.
RUN = (
    "import ingest.encode_loop as loop; loop.COMMIT_ARTICLES = 40\n"
    "from medsearch.cli import main; main()"
)

pytestmark = pytest.mark.thorough  # whole paths (training, kill and resume): .ci/run runs them


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pubmed")
    for i in range(FILES):
        write_synthetic_pubmed(
            folder / f"pubmed26n{i + 1:04d}.xml.gz",
            PER_FILE,
            start_pmid=1 + i * PER_FILE,
            seed=i,
            gzip=True,
        )
    pubmed_file(  # an update file: one article revised, one deleted
        folder / f"pubmed26n{FILES + 1:04d}.xml",
        [article_xml(7, "Revised: lactate clearance in septic shock", "Lactate fell.")],
        deletions=[8],
    )
    return folder


def ingest(home: Path, inputs: Path) -> subprocess.Popen[bytes]:
    log = open(home.parent / f"{home.name}.log", "ab")  # noqa: SIM115 (closed by the child's exit)
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            RUN,
            "--home",
            str(home),
            "ingest",
            str(inputs),
            "--models",
            "tiny",
            "--device",
            "cpu",
            "--jobs",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,  # progress bars: a pipe nobody reads would fill and block the ingest
    )


def failure(proc: subprocess.Popen[bytes], home: Path) -> str:
    log = home.parent / f"{home.name}.log"
    return f"exit {proc.returncode}: " + log.read_text(errors="replace")[-2000:]


def scalar(home: Path, sql: str) -> int:
    """A count from the store as another reader sees it (0 before it exists)."""
    path = Paths(home).store
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.1)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet, or busy for a moment
        return 0


def files_done(home: Path) -> bool:
    return scalar(home, "SELECT COUNT(*) FROM files WHERE status = 'done'") >= 2


def vectors_committed(home: Path) -> bool:
    return scalar(home, "SELECT COUNT(*) FROM encoded") > 0


def kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 120
    while not ready():
        assert proc.poll() is None, "the ingest ended before the kill point"
        assert time.monotonic() < deadline, "the ingest never reached the kill point"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


def snapshot(home: Path) -> dict[str, object]:
    paths = Paths(home)
    with Store(paths.store, readonly=True) as store:
        articles = {a.pmid: a for batch in store.iter_articles() for a in batch}
        ledger = [(e.name, e.status, e.articles) for e in store.files.entries()]
    index = LexicalIndex.open(paths.lexical_index, create=False)
    try:
        lexical = [
            {h.pmid: h.score for h in index.search(q, k=1000).hits}  # every match
            for q in ("lactate septic", "patients", articles[155].title)
        ]
    finally:
        index.close()
    pmids = np.array(sorted(articles))
    with VectorCollection.open(paths.vector_dir("articles"), readonly=True) as coll:
        article_vectors = (len(coll), coll.get(pmids))
    queries = article_vectors[1][:5]
    with SentenceCollection.open(paths.vector_dir("sentences"), readonly=True) as sents:
        found = sents.search(queries, 10)
        sentences = (len(sents), [[(i, round(s, 3)) for i, s in hits] for hits in found])
    return {
        "articles": articles,
        "ledger": ledger,
        "lexical": lexical,
        "article vectors": article_vectors,
        "sentences": sentences,
    }


@pytest.fixture(scope="module")
def clean(
    tiny: TinyModels, inputs: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, object]:
    home = tmp_path_factory.mktemp("clean") / "home"
    write_tiny_config(Paths(home), tiny)
    proc = ingest(home, inputs)
    assert proc.wait() == 0, failure(proc, home)
    return snapshot(home)


@pytest.mark.parametrize("stage", ["applying files", "encoding"])
def test_sigkill_then_rerun_equals_a_clean_ingest(
    tiny: TinyModels, inputs: Path, clean: dict[str, object], tmp_path: Path, stage: str
) -> None:
    home = tmp_path / "crashed"
    write_tiny_config(Paths(home), tiny)
    ready = files_done if stage == "applying files" else vectors_committed
    kill_when(ingest(home, inputs), lambda: ready(home))

    again = ingest(home, inputs)
    assert again.wait() == 0, failure(again, home)
    assert not list((home / "tmp").glob("parse-*"))  # the killed run's spools are gone
    crashed = snapshot(home)
    assert crashed["articles"] == clean["articles"]
    assert crashed["articles"][7].title.startswith("Revised")  # type: ignore[index]
    assert 8 not in crashed["articles"]  # type: ignore[operator]
    assert [(n, s) for n, s, _ in crashed["ledger"]] == [  # type: ignore[attr-defined]
        (n, s)
        for n, s, _ in clean["ledger"]  # type: ignore[attr-defined]
    ]
    # The same documents match. BM25's statistics count a document replaced when the
    # re-run applies the killed run's last file again until its segment merges, which
    # moves scores by a fraction of a percent and can swap near-ties: scores agree to 1%.
    for got, want in zip(crashed["lexical"], clean["lexical"], strict=True):  # type: ignore[call-overload]
        assert got.keys() == want.keys()
        assert max((abs(got[p] - s) / s for p, s in want.items()), default=0.0) < 1e-2
    n, vectors = crashed["article vectors"]  # type: ignore[misc]
    clean_n, clean_vectors = clean["article vectors"]  # type: ignore[misc]
    assert n == clean_n == FILES * PER_FILE - 1  # one deleted
    np.testing.assert_array_equal(vectors, clean_vectors)
    assert crashed["sentences"] == clean["sentences"]
