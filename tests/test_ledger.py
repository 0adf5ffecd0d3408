"""The file ledger: files known by their content, and data homes from before that.

Up to schema 3 the ledger was keyed by file name, so a second file called ``pubmed.xml``
overwrote the first one's row. Schema 4 keys it by checksum; a store written before must
keep every row, and what it recorded as done must stay done.
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

import pytest

from benchmarks.synth import article_xml, pubmed_file, truncated_gzip
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
from medsearch.store import Store
from medsearch.store.schema import SCHEMA_VERSION, migrate, schema_version

LEGACY_ROW = (
    "INSERT INTO files(name, path, size, checksum, status, articles, added, finished_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, '2026-01-02T03:04:05+00:00')"
)


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "home")


def legacy_store(paths: Paths, rows: list[tuple[str, str, Path | None, str]]) -> None:
    """A store as schema 3 left it: ``(name, path, file or None, status)`` per ledger row
    (a row without a file gets a made-up checksum)."""
    paths.ensure()
    conn = sqlite3.connect(paths.store, isolation_level=None)
    try:
        assert migrate(conn, target=3) == 0
        for name, where, file, status in rows:
            data = file.read_bytes() if file is not None else name.encode()
            digest = hashlib.md5(data).hexdigest()
            conn.execute(LEGACY_ROW, (name, where, len(data), digest, status, 1, 1))
    finally:
        conn.close()


def ingest(paths: Paths, *inputs: Path) -> tuple[int, int, int]:
    """``(ingested, already done, failed)``."""
    with Ingestor(paths, jobs=0) as ing:
        summary = ing.run(list(inputs))
    return summary.ingested, summary.skipped, len(summary.failures)


def test_a_name_keyed_ledger_is_migrated_and_its_done_files_stay_done(
    paths: Paths, tmp_path: Path
) -> None:
    old = pubmed_file(tmp_path / "pubmed26n1335.xml", [article_xml(1, "Update")], [9])
    legacy_store(paths, [("pubmed26n1335.xml", "downloads/pubmed26n1335.xml", old, "done")])
    again = tmp_path / "redownloaded" / old.name  # same name, same bytes, another folder
    again.parent.mkdir()
    shutil.copyfile(old, again)
    assert ingest(paths, again.parent) == (0, 1, 0)
    with Store(paths.store) as store:
        assert schema_version(store.conn) == SCHEMA_VERSION
        [entry] = store.files.entries()
        assert (entry.path, entry.status) == ("downloads/pubmed26n1335.xml", "done")


def test_after_the_migration_a_same_named_file_gets_its_own_row(
    paths: Paths, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    first = pubmed_file(tmp_path / "a" / "pubmed.xml", [article_xml(1, "Sepsis")])
    legacy_store(paths, [("pubmed.xml", str(first), first, "done")])
    (tmp_path / "b").mkdir()
    pubmed_file(tmp_path / "b" / "pubmed.xml", [article_xml(2, "Malaria")])
    assert ingest(paths, tmp_path / "b") == (1, 0, 0)
    assert ingest(paths, tmp_path / "a", tmp_path / "b") == (0, 2, 0)
    with Store(paths.store) as store:
        assert [e.name for e in store.files.entries()] == ["pubmed.xml", "pubmed.xml"]
        assert store.existing([2]) == {2}


def test_the_migration_keeps_every_row_and_its_id(paths: Paths) -> None:
    """Rows from before may share a checksum (the same bytes under two names); articles
    point at their ids, so none is dropped or renumbered."""
    legacy_store(
        paths,
        [
            ("pubmed26n0001.xml.gz", "x/pubmed26n0001.xml.gz", None, "done"),
            ("broken.xml", "x/broken.xml", None, "failed"),
        ],
    )
    conn = sqlite3.connect(paths.store, isolation_level=None)
    conn.execute(LEGACY_ROW, ("copy.xml.gz", "y/copy.xml.gz", 5, "same", "done", 0, 0))
    conn.execute(LEGACY_ROW, ("orig.xml.gz", "y/orig.xml.gz", 5, "same", "done", 0, 0))
    before = conn.execute("SELECT * FROM files ORDER BY id").fetchall()
    conn.close()
    with Store(paths.store) as store:
        assert store.conn.execute("SELECT * FROM files ORDER BY id").fetchall() == before
        assert store.files.latest("broken.xml") is not None


def test_recording_the_same_content_again_updates_its_row(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store, store.transaction():
        failed = store.files.record(
            name="a.xml", path="/in/a.xml", size=3, checksum="c1", status="failed"
        )
        done = store.files.record(
            name="b.xml", path="/in/b.xml", size=3, checksum="c1", status="done"
        )
        assert failed == done
        [entry] = store.files.entries()
        assert (entry.name, entry.status) == ("b.xml", "done")


def test_a_broken_file_replaced_at_its_path_leaves_no_failed_row(
    paths: Paths, tmp_path: Path
) -> None:
    good = [article_xml(200 + i, f"Sepsis cohort {i}", "Lactate.") for i in range(20)]
    source = pubmed_file(tmp_path / "source.xml", good).read_bytes()
    (tmp_path / "in").mkdir()
    broken = truncated_gzip(tmp_path / "in" / "pubmed26n0003.xml.gz", source)
    assert ingest(paths, tmp_path / "in") == (0, 0, 1)
    pubmed_file(broken, good, gz=True)
    assert ingest(paths, tmp_path / "in") == (1, 0, 0)
    with Store(paths.store) as store:
        assert [e.status for e in store.files.entries()] == ["done"]
