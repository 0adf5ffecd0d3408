"""The store and the lexical index agree after an ingest that stopped between commits.

A unit changes SQLite and tantivy, which cannot commit together: the store commits
first, listing the unit's PMIDs, then the index. Whatever stops a run (the file system
refusing the store's commit, a full disk at either commit, a kill between the two),
the next ``medsearch ingest``, even with no files, leaves every stored article findable
in the lexical index by its stored text and nothing the store lacks findable. Each test
ingests ORIGINAL articles, stops a run that revises, deletes and adds some, then checks.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import wait_until

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from ingest.pubmed_xml import parse_file
from medsearch.cli import main
from medsearch.errors import DiskFullError
from medsearch.index.lexical.shards import open_lexical
from medsearch.paths import Paths
from medsearch.records import Article, Filters
from medsearch.store import Store

ORIGINAL = 1000
ADDED = 300
DELETED = 10
CLI = "from medsearch.cli import main; main()"


def article(pmid: int, word: str) -> str:
    return article_xml(
        pmid, f"{word} zebrafish cohort {pmid}", f"The {word} abstract of study {pmid}."
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """original.xml: PMIDs 1..ORIGINAL; revised.xml: revises all but the last DELETED,
    deletes those, and adds ADDED new ones."""
    folder = tmp_path_factory.mktemp("inputs")
    pubmed_file(folder / "original.xml", [article(p, "original") for p in range(1, ORIGINAL + 1)])
    kept = range(1, ORIGINAL - DELETED + 1)
    new = range(ORIGINAL + 1, ORIGINAL + ADDED + 1)
    pubmed_file(
        folder / "revised.xml",
        [article(p, "revised") for p in (*kept, *new)],
        deletions=range(ORIGINAL - DELETED + 1, ORIGINAL + 1),
    )
    return folder


def ingest_original(home: Path, inputs: Path) -> None:
    with Ingestor(Paths(home), jobs=0) as ingestor:
        assert ingestor.run([inputs / "original.xml"]).ok


def cli(home: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stderr


def ingest_argv(home: Path, *files: Path) -> list[str]:
    files_ = [str(f) for f in files]
    return [sys.executable, "-c", CLI, "--home", str(home), "ingest", *files_, "--no-encode"]


def contents(home: Path) -> tuple[dict[int, str], dict[str, set[int]], set[int]]:
    """The stored titles; per marker word, the PMIDs the index finds by it; every PMID
    the index holds."""
    paths = Paths(home)
    with Store(paths.store, readonly=True) as store:
        stored = {a.pmid: a.title or "" for batch in store.iter_articles() for a in batch}
    index = open_lexical(paths.lexical_index)
    try:
        listed, _ = index.matching_pmids(Filters(), 10**6)
        assert listed is not None
        found = {
            word: set(index.rank(word, k=10**5, syntax=False).pmids)
            for word in ("original", "revised")
        }
    finally:
        index.close()
    return stored, found, {int(p) for p in listed}


def assert_in_step(home: Path) -> dict[int, str]:
    """Every stored article findable by its stored text, nothing unstored findable."""
    stored, found, indexed = contents(home)
    assert indexed == set(stored)
    for word, pmids in found.items():
        assert pmids == {p for p, title in stored.items() if title.startswith(word)}, word
    return stored


def test_a_store_commit_the_file_system_refuses_leaves_the_index_as_it_was(
    tmp_path: Path, inputs: Path
) -> None:
    """The store's write-ahead log cannot grow past a file size limit (RLIMIT_FSIZE),
    which makes SQLite's COMMIT itself fail, as a full disk does, after everything was
    staged: the index must not keep the unit either."""
    resource = pytest.importorskip("resource")  # POSIX
    home = tmp_path / "home"
    ingest_original(home, inputs)
    limit = 256 * 1024  # the unit's log is ~1 MB; tantivy's files for it ~30 KB each

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = subprocess.run(
        [*ingest_argv(home, inputs / "revised.xml"), "--jobs", "0"],
        preexec_fn=limited,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.stderr.strip().splitlines()[-1] == (
        f"medsearch: error: cannot write the article store {Paths(home).store}: disk I/O error"
    )

    assert cli(home, "ingest", "--no-encode")[0] == 0
    stored = assert_in_step(home)
    assert len(stored) == ORIGINAL and all(t.startswith("original") for t in stored.values())


def test_a_store_at_its_page_limit_mid_unit_keeps_nothing_of_the_unit(
    tmp_path: Path, inputs: Path
) -> None:
    """SQLite's page limit (PRAGMA max_page_count) stops the unit at an INSERT, before
    either commit: SQLite checks it as each page is allocated, never at the COMMIT (which
    writes pages the transaction already has), so it cannot stand for a full disk at the
    store's commit as the file size limit above does."""
    home = tmp_path / "home"
    ingest_original(home, inputs)
    with Ingestor(Paths(home), jobs=0) as ingestor:
        pages = ingestor.store.conn.execute("PRAGMA page_count").fetchone()[0]
        ingestor.store.conn.execute(f"PRAGMA max_page_count = {pages + 20}")
        with pytest.raises(DiskFullError, match="disk full while writing"):
            ingestor.run([inputs / "revised.xml"])

    assert cli(home, "ingest", "--no-encode")[0] == 0
    stored = assert_in_step(home)
    assert len(stored) == ORIGINAL and all(t.startswith("original") for t in stored.values())


KILL_BETWEEN_COMMITS = (
    """
import sys, time
from pathlib import Path
from ingest.pipeline import Ingestor
from medsearch.index.lexical.index import LexicalIndex

marker = Path(sys.argv.pop(1))
writers = []
real_init, real_commit = Ingestor.__init__, LexicalIndex.commit

def init(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    writers.append(self)

def commit(self, payload=None):
    # Make whichever of the two commits comes first, then wait to be killed.
    if writers and writers[0].store.conn.in_transaction:
        real_commit(self, payload)  # the index first: the store commits after this
        marker.write_text("index committed")
    elif writers:
        marker.write_text("store committed")
    else:
        return real_commit(self, payload)
    time.sleep(600)

Ingestor.__init__ = init
LexicalIndex.commit = commit
"""
    + CLI
)


@pytest.mark.thorough  # a whole ingest and update: seconds
def test_a_kill_between_the_two_commits_is_mended_by_the_next_ingest(
    tmp_path: Path, inputs: Path
) -> None:
    home = tmp_path / "home"
    ingest_original(home, inputs)
    marker = tmp_path / "between"
    argv = ingest_argv(home, inputs / "revised.xml")
    proc = subprocess.Popen(
        [sys.executable, "-c", KILL_BETWEEN_COMMITS, str(marker), *argv[3:], "--jobs", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(marker.exists, 120), f"exit {proc.poll()} before the commits"
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert marker.read_text() == "store committed"

    code, err = cli(home, "ingest", "--no-encode")
    assert code == 0 and f"re-indexing {ORIGINAL - DELETED + ADDED + DELETED:,} PMIDs" in err
    stored = assert_in_step(home)
    assert len(stored) == ORIGINAL - DELETED + ADDED
    assert all(t.startswith("revised") for t in stored.values())
    assert cli(home, "ingest", str(inputs), "--no-encode", "--jobs", "0")[0] == 0
    assert_in_step(home)  # the revised file is done: nothing applied twice


def test_an_index_ahead_of_the_store_is_rebuilt_from_it(tmp_path: Path, inputs: Path) -> None:
    """What the old order (index first) left when the store's commit then failed: the
    index holds a unit whose file the ledger does not have."""
    home = tmp_path / "home"
    ingest_original(home, inputs)
    revised = [r for r in parse_file(inputs / "revised.xml") if isinstance(r, Article)]
    index = open_lexical(Paths(home).lexical_index, writer=True)
    try:
        index.upsert(revised)
        index.commit(payload="revised.xml")
    finally:
        index.close()

    code, err = cli(home, "ingest", "--no-encode")
    assert code == 0 and "it holds changes from revised.xml that the store does not" in err
    stored = assert_in_step(home)
    assert all(t.startswith("original") for t in stored.values())


FULL_DISK = """
import json, os, shutil, sys
from pathlib import Path
from ingest.pipeline import Ingestor
from medsearch.errors import MedsearchError
from medsearch.paths import Paths

mount, inputs, out = (Path(a) for a in sys.argv[1:4])
home, base = mount / "home", mount / "base"


def ingest(*files):
    with Ingestor(Paths(home), jobs=0) as ingestor:
        return ingestor.run(list(files))


def fill(room):
    # A filler file takes all the space there is, then gives ``room`` bytes back.
    # Unbuffered: a buffered file would keep the bytes that did not fit and fail again
    # when closed, depending on how the free space falls against the writes.
    with open(mount / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(bytes(1 << 16))
                f.flush()
        except OSError:
            pass
        size = f.tell()
    os.truncate(mount / "filler", max(0, size - room))


ingest(inputs / "original.xml")
shutil.copytree(home, base)
# What the revised unit writes: the store's log at its commit, then tantivy's segments.
ingestor = Ingestor(Paths(home), jobs=0)
ingestor.run([inputs / "revised.xml"])
wal = os.stat(Paths(home).store.with_name("store.sqlite-wal")).st_size
old = {p.name for p in (base / "lexical").iterdir()}
segments = sum(p.stat().st_size for p in (home / "lexical").iterdir() if p.name not in old)
ingestor.close()
outcomes = {}
for room in (wal // 2, wal + segments // 2, wal + segments + (1 << 20)):
    shutil.rmtree(home)
    shutil.copytree(base, home)
    fill(room)
    try:
        ingest(inputs / "revised.xml")
        outcomes[room] = "ingested"
    except MedsearchError as exc:
        outcomes[room] = str(exc)
    os.unlink(mount / "filler")
    Ingestor(Paths(home), jobs=0).close()  # what `medsearch ingest` with no files does first
    shutil.copytree(home, out / str(room))
(out / "outcomes.json").write_text(json.dumps(outcomes))
"""


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_a_full_disk_at_any_point_of_a_unit_is_mended_by_the_next_ingest(
    tmp_path: Path, inputs: Path
) -> None:
    """A real full file system: a small tmpfs mounted in a user namespace of its own
    (Linux, where unprivileged user namespaces are allowed; skipped elsewhere), filled
    so the unit runs out of space in the store's commit, between the store's and the
    index's, and not at all."""
    unshare = shutil.which("unshare")
    if sys.platform != "linux" or unshare is None:
        pytest.skip("needs Linux's unshare to mount a small file system")
    mount, out = tmp_path / "mnt", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    script = tmp_path / "full_disk.py"
    script.write_text(FULL_DISK)
    shell = 'mount -t tmpfs -o size=16m tmpfs "$0" || exit 77; exec "$@"'
    args = (str(mount), str(inputs), str(out))
    run = subprocess.run(
        [unshare, "-Urm", "sh", "-c", shell, str(mount), sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=240,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if run.returncode == 77 or "Operation not permitted" in run.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {run.stderr.strip()[-200:]}")
    assert run.returncode == 0, run.stderr[-3000:]
    outcomes = json.loads((out / "outcomes.json").read_text())
    first, *_, last = outcomes.values()
    assert first != "ingested" and last == "ingested"
    for room, outcome in outcomes.items():
        assert outcome == "ingested" or outcome.startswith("disk full while"), outcome
        stored = assert_in_step(out / room)
        # the store keeps the unit once its commit is through, the index follows it
        kept = outcome == "ingested" or outcome.startswith("disk full while indexing")
        word = "revised" if kept else "original"
        assert all(t.startswith(word) for t in stored.values()), (room, outcome)
