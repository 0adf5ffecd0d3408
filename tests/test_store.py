"""The article store: record codec, upserts, deletions, ledger, migrations."""

from __future__ import annotations

import errno
import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from medsearch.errors import NotFoundError, StoreError
from medsearch.records import AbstractSection, Article, Author, PubDate
from medsearch.store import Store, codec
from medsearch.store.db import is_disk_full
from medsearch.store.rows import pack, unpack
from medsearch.store.sampling import iter_sample, sample
from medsearch.store.schema import SCHEMA_VERSION

ARTICLE = Article(
    pmid=42,
    title="Ünïcode — α-synuclein",
    abstract=(AbstractSection("Text.", label="RESULTS"),),
    authors=(Author(last_name="Doe", initials="J"),),
    pub_date=PubDate(year=2020, month=3),
)


def test_records_round_trip_through_zstd_json() -> None:
    blob = pack(ARTICLE)
    assert blob[:4] == codec.ZSTD_MAGIC
    assert unpack(blob) == ARTICLE


def test_records_written_by_the_zlib_version_still_decode() -> None:
    legacy = zlib.compress(json.dumps(ARTICLE.to_dict(), ensure_ascii=False).encode(), 3)
    assert unpack(legacy) == ARTICLE


def test_a_damaged_record_is_a_store_error() -> None:
    with pytest.raises(StoreError, match="damaged"):
        unpack(b"\x78\x9cnot zlib at all")


def test_upsert_counts_added_and_replaced_and_delete_remembers(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            first = store.upsert([ARTICLE, Article(pmid=43, title="B")])
        with store.transaction():
            second = store.upsert([Article(pmid=43, title="B2"), Article(pmid=44)])
            assert store.delete([42, 999]) == 1
        assert (first.added, first.replaced) == (2, 0)
        assert (second.added, second.replaced) == (1, 1)
        assert store.get(43).title == "B2"
        with pytest.raises(NotFoundError, match="deleted"):
            store.get(42)
        with pytest.raises(NotFoundError, match="not in the store"):
            store.get(7)
        assert [len(b) for b in store.iter_articles(batch=1)] == [1, 1]


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert([ARTICLE])
            raise RuntimeError("interrupted")
        assert store.count() == 0


def test_a_store_from_a_newer_medsearch_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),)
    )
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer medsearch"):
        Store(path)


def test_reading_a_missing_store_says_to_ingest(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="medsearch ingest"):
        Store(tmp_path / "none.sqlite", readonly=True)


def test_a_sample_is_drawn_from_dense_and_sparse_pmid_ranges_alike(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        assert sample(store, 5) == []
        dense = [Article(pmid=p, title=f"dense {p}") for p in range(1, 201)]
        sparse = [Article(pmid=p, title=f"sparse {p}") for p in range(10**6, 10**7, 10**5)]
        with store.transaction():
            store.upsert(dense + sparse)
        titles = [unpack(b).title for b in sample(store, 400)]
        # everything drawn once, whatever the gaps between PMIDs
        assert sorted(titles) == sorted(a.title for a in dense + sparse)
        assert len(sample(store, 20)) == 20


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_sampling_a_dense_store_does_not_read_the_whole_table(tmp_path: Path) -> None:
    """`stats` samples records to project the store's size: at 40M articles a scan of
    the table (as `SELECT MIN(pmid), MAX(pmid)` does) would read the whole store."""

    def steps_to_sample(n: int) -> int:
        with Store(tmp_path / f"s{n}.sqlite") as store:
            with store.transaction():
                store.upsert([Article(pmid=p, title=f"t {p}") for p in range(1, n + 1)])
            steps = 0

            def count() -> int:
                nonlocal steps
                steps += 1
                return 0

            store.conn.set_progress_handler(count, 100)  # every 100 SQLite VM steps
            assert len(sample(store, 20)) == 20
            store.conn.set_progress_handler(None, 0)
            return steps

    small, large = steps_to_sample(500), steps_to_sample(20_000)
    assert large < 2 * small + 5, (small, large)


def test_every_nth_pmid_is_sampled_alike_in_dense_and_sparse_stores(tmp_path: Path) -> None:
    """The rerank trainer's sample: the multiples of ``every``, in PMID order, looked up
    one by one where PMIDs are dense (no pass over the whole store)."""
    dense = list(range(1, 3001))
    sparse = [p * 9973 for p in range(1, 300)]
    for name, pmids in (("dense", dense), ("sparse", sparse)):
        with Store(tmp_path / f"{name}.sqlite") as store:
            with store.transaction():
                store.upsert([Article(pmid=p, title=f"t {p}") for p in pmids])
                store.delete([30, 60 * 9973])  # gaps where a multiple would be
            kept = [p for p in pmids if p not in (30, 60 * 9973)]
            for every in (1, 7, 30, 1000):
                got = [a.pmid for b in iter_sample(store, every, batch=16) for a in b]
                assert got == [p for p in kept if p % every == 0], (name, every)
                assert all(a.title == f"t {a.pmid}" for b in iter_sample(store, every) for a in b)

    steps = 0

    def tick() -> int:
        nonlocal steps
        steps += 1
        return 0

    with Store(tmp_path / "dense.sqlite") as store:
        store.conn.set_progress_handler(tick, 100)
        assert len([a for b in iter_sample(store, 300) for a in b]) == 10
        store.conn.set_progress_handler(None, 0)
    assert steps < 30, steps  # a pass over the 3,000 rows takes hundreds


def test_the_article_count_is_kept_with_every_change_and_rolled_back_with_it(
    tmp_path: Path,
) -> None:
    """count() reads a number the writer keeps, never a scan of 40M records; it must
    always equal what a scan would say."""
    path = tmp_path / "s.sqlite"

    def scanned() -> int:
        conn = sqlite3.connect(path)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM records").fetchone()[0])
        finally:
            conn.close()

    with Store(path) as store:
        assert store.count() == scanned() == 0
        with store.transaction():
            store.upsert([ARTICLE, Article(pmid=43), Article(pmid=43, title="twice")])
        assert store.count() == scanned() == 2
        with store.transaction():
            store.upsert([Article(pmid=43, title="B2"), Article(pmid=44)])  # 1 new
            store.delete([42, 999])  # 999 was never there
        assert store.count() == scanned() == 2
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert([Article(pmid=50), Article(pmid=51)])
            store.delete([43])
            raise RuntimeError("interrupted")
        assert store.count() == scanned() == 2
        with store.transaction():
            store.upsert([ARTICLE])  # a deleted PMID comes back
        assert store.count() == scanned() == 3
    with Store(path, readonly=True) as reader:
        assert reader.count() == 3


def test_a_store_from_before_the_kept_count_is_counted_once_at_the_upgrade(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        with store.transaction():
            store.upsert([ARTICLE, Article(pmid=43)])
        store.conn.execute("DELETE FROM meta WHERE key = 'record_count'")
        store.conn.execute("DROP TABLE stale_queue")  # what later migrations added
        store.conn.execute("DROP TABLE unindexed")
        store.conn.execute("DROP INDEX articles_notice")  # and the notice columns
        for column in ("retracted", "notice", "notices", "notice_for"):
            store.conn.execute(f"ALTER TABLE articles DROP COLUMN {column}")
        store.conn.execute("DROP TABLE file_changes")
        store.conn.execute("DROP TABLE article_refs")  # and the citation graph's
        store.conn.execute("DROP TABLE refs_changed")
        store.conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    with Store(path, readonly=True) as reader:  # not upgraded yet: counted by a scan
        assert reader.count() == 2
    with Store(path) as store:  # a writer upgrades it
        assert store.conn.execute(
            "SELECT value FROM meta WHERE key = 'record_count'"
        ).fetchone() == ("2",)
        with store.transaction():
            store.upsert([Article(pmid=44)])
        assert store.count() == 3


def test_a_store_in_a_folder_named_with_hash_and_question_mark_opens_read_only(
    tmp_path: Path,
) -> None:
    """A read-only store is opened by URI, where ``#`` and ``?`` would end the file name."""
    folder = tmp_path / "trial #3? results"
    folder.mkdir()
    with Store(folder / "s.sqlite") as store, store.transaction():
        store.upsert([ARTICLE])
    with Store(folder / "s.sqlite", readonly=True) as reader:
        assert reader.get(42) == ARTICLE


@pytest.mark.parametrize(
    ("error", "full"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "/home/x"), True),
        (OSError(errno.EDQUOT, "Disk quota exceeded", "/home/x"), True),
        (sqlite3.OperationalError("database or disk is full"), True),
        (OSError(errno.EACCES, "Permission denied", "/home/x"), False),
    ],
)
def test_a_full_disk_or_a_spent_quota_is_told_apart_from_other_errors(
    error: BaseException, full: bool
) -> None:
    assert is_disk_full(error) is full
