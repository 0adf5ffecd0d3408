"""The store's per-file change rows: what the files applied after a point added, replaced
and deleted, net, in the order they applied (what watches read instead of the corpus)."""

from __future__ import annotations

from pathlib import Path

from medsearch.records import Article
from medsearch.store import Store


def apply(store: Store, name: str, upserts: list[int], deletes: list[int] = []) -> None:  # noqa: B006
    with store.transaction():
        file_id = store.files.record(
            name=name, path=f"/x/updatefiles/{name}", size=1, checksum=name, status="done"
        )
        store.upsert([Article(pmid=p, title=f"{name} {p}") for p in upserts], file_id=file_id)
        store.delete(deletes, file_id=file_id)


def test_changes_after_a_point_are_net_and_name_their_files(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        apply(store, "base", [1, 2, 3, 4])
        start = store.last_change()
        apply(store, "day1", [5, 6, 1], deletes=[2])  # 1 revised, 2 deleted
        apply(store, "day2", [6, 7, 2], deletes=[5, 3])  # 6 added then revised: still new
        changes = store.changes_after(start)
        assert changes.added == {6, 7}  # 5 came and went within the window: no change
        assert changes.replaced == {1, 2}  # 2 was there at the start, deleted, sent again
        assert changes.deleted == {3}
        assert changes.files == ("day1", "day2")
        assert store.changes_after(changes.last).empty
        assert store.last_change() == changes.last


def test_a_baseline_file_sending_records_again_revises_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        apply(store, "pubmed26n0001.xml", [1, 2])
        start = store.last_change()
        with store.transaction():
            file_id = store.files.record(
                name="pubmed27n0001.xml",
                path="/x/baseline/pubmed27n0001.xml",
                size=1,
                checksum="b27",
                status="done",
            )
            store.upsert([Article(pmid=p) for p in (1, 2, 3)], file_id=file_id)
        changes = store.changes_after(start)
        assert (changes.added, changes.replaced) == ({3}, frozenset())
        news = store.changes_after(start, baseline=False)  # what watches read
        assert news.empty and news.files == () and news.last == changes.last
