"""What the vector stage pays to find its work after a daily update file, at scale.

    python -m benchmarks.stale_scan --articles 1000000
    python -m benchmarks.stale_scan --store COPY/store.sqlite   # a copy: it is modified

A home whose vectors are all current (``encoded`` filled for every record, as after a
finished pass), then an update of ``--changes`` records (30,000: a daily update file)
and ``--deletions`` deletions. Timed, in the same run: finding the stale articles and
the vectors of deleted articles the way every pass did before the queue (a join of
every record with ``encoded``: ``queue:`` key absent) and from the store's queue of
changed PMIDs (``ingest/encoded.py``), for one kind of vectors; then the update itself
with and without queueing (what the queue costs ingest). With ``--store`` the store
given is migrated and written to: pass a copy (``benchmarks.hybrid_scale`` builds a 10M
home).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ingest.encoded import count_stale, finish_pass, remove_deleted, stale_pmids
from medsearch.records import Article
from medsearch.store import Store
from medsearch.store.schema import QUEUE_KEY

KIND, PROFILE = "articles", "bench"


class _Nowhere:
    """A collection that takes removals and commits and keeps nothing (only the store's
    side of ``remove_deleted`` is timed)."""

    def remove(self, ids: object) -> None:
        pass

    def commit(self) -> None:
        pass


def fill(store: Store, n: int) -> None:
    print(f"writing {n:,} records ...", flush=True)
    for lo in range(1, n + 1, 50_000):
        batch = [Article(pmid=p, title=f"title {p}") for p in range(lo, min(n, lo + 49_999) + 1)]
        with store.transaction():
            store.upsert(batch)


def mark_all_encoded(store: Store) -> None:
    with store.transaction():
        store.conn.execute("DELETE FROM encoded WHERE kind = ?", (KIND,))
        store.conn.execute(
            "INSERT INTO encoded(pmid, kind, profile, content_hash, items)"
            " SELECT pmid, ?, ?, content_hash, 1 FROM records",
            (KIND, PROFILE),
        )


def write_update(store: Store, changed: list[Article], gone: list[int]) -> float:
    t0 = time.perf_counter()
    with store.transaction():
        store.upsert(changed)
        store.delete(gone)
    return time.perf_counter() - t0


def find_work(store: Store) -> tuple[float, int, int]:
    """Seconds to count, list and prune, as a pass starts; stale and deleted found."""
    t0 = time.perf_counter()
    total = count_stale(store, KIND, PROFILE)
    listed = sum(len(c) for c in stale_pmids(store, KIND, PROFILE, batch=4096))
    assert listed == total, (listed, total)
    removed = remove_deleted(store, {KIND: _Nowhere()})  # type: ignore[dict-item]
    return time.perf_counter() - t0, total, removed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=1_000_000)
    ap.add_argument("--store", type=Path, help="an existing store to use (it is modified)")
    ap.add_argument("--changes", type=int, default=30_000)
    ap.add_argument("--deletions", type=int, default=300)
    args = ap.parse_args()
    path = args.store or Path(tempfile.mkdtemp(prefix="stale-scan-")) / "store.sqlite"
    with Store(path) as store:
        if args.store is None:
            fill(store, args.articles)
        n = store.count()
        print(f"{n:,} records; marking every one encoded ...", flush=True)
        mark_all_encoded(store)
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key LIKE ?", (QUEUE_KEY + "%",))
        store.reload_queues()
        step = max(1, n // args.changes)
        changed = [Article(pmid=p, title=f"revised {p}") for p in range(1, n + 1, step)]
        changed = changed[: args.changes]
        gone = [a.pmid + 1 for a in changed[: args.deletions]]

        write_plain = write_update(store, changed, gone)
        full, total, removed = find_work(store)
        print(f"before the queue: {full:.2f} s to find {total:,} stale and {removed:,} deleted")

        # The same update under the queue: vectors current again, a finished pass, the
        # update written again (new text), the work found from the queue.
        mark_all_encoded(store)
        finish_pass(store, KIND, PROFILE)
        changed = [Article(pmid=a.pmid, title=f"again {a.pmid}") for a in changed]
        gone = [p + 1 for p in gone]
        write_queued = write_update(store, changed, gone)
        queued, total_q, removed_q = find_work(store)
        print(
            f"from the queue  : {queued:.3f} s to find {total_q:,} stale and {removed_q:,} deleted"
        )
        assert (total_q, removed_q) == (total, removed), (total_q, removed_q)
        print(
            f"finding the work: x{full / queued:.0f} faster; writing the update:"
            f" {write_plain:.2f} s plain, {write_queued:.2f} s queued (the first write"
            " meets a colder store: not a measure of the queue's cost)"
        )


if __name__ == "__main__":
    main()
