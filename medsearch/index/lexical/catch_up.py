"""The lexical index given back what a writer stopped between its two commits left out.

A unit commits the store first, listing its PMIDs in ``unindexed``, then the index,
then empties the list (:mod:`ingest.lexical_sync` tells the whole story). A writer that
opens the home while the list holds PMIDs re-indexes just those from the store. Here,
below the ingest pipeline, so that the commands that write without ingesting
(``watch run``, ``rerank train``) mend the index too in an install without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medsearch.errors import DiskFullError
from medsearch.paths import Paths
from medsearch.progress import Progress
from medsearch.store import Store
from medsearch.store.db import is_disk_full

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex


def replay_unindexed(
    store: Store, index: LexicalIndex, progress: Progress, payload: str | None
) -> int:
    """Re-index the PMIDs the store lists as not yet indexed, from the store; returns how
    many. Costs nothing when none are listed (every run that finished its commits)."""
    total = store.unindexed.count()
    if not total:
        return 0
    progress.message(
        f"re-indexing {total:,} PMIDs that the store holds and the lexical index may not"
        " (the last ingest stopped between their two commits)"
    )
    progress.start("reindex", "Re-indexing the last unit", total=total)
    try:
        for pmids in store.unindexed.batches():
            found = store.get_many(pmids)
            index.upsert([found[p] for p in pmids if p in found])
            index.delete([p for p in pmids if p not in found])  # deleted by the unit
            progress.advance("reindex", len(pmids))
        index.commit(payload=payload)
        store.unindexed.clear()
    except BaseException as exc:
        index.rollback()
        if is_disk_full(exc):
            raise DiskFullError(
                f"disk full while re-indexing {total:,} stored PMIDs; free some space and run"
                " `medsearch ingest` again"
            ) from exc
        raise
    finally:
        progress.finish("reindex")
    return total


def pending(paths: Paths) -> int:
    """How many PMIDs a stopped run left for the lexical index (0 without a store): what
    a writer checks, read-only, before it opens anything to write."""
    if not paths.store.exists():
        return 0
    with Store(paths.store, readonly=True) as store:
        return store.unindexed.count()


def catch_up(paths: Paths, progress: Progress) -> int:
    """Before a writer that does not open the index for ingest relies on it: when a
    stopped run left PMIDs the index may not have, re-index them. The caller holds the
    writer lock. Returns how many PMIDs were listed (0: nothing was opened to write).
    An index that needs more (missing, damaged, ahead of the store) is `ingest`'s."""
    from medsearch.index.lexical.shards import open_lexical

    if not paths.lexical_index.exists() or not (listed := pending(paths)):
        return 0
    with Store(paths.store) as store:
        done = [e.name for e in store.files.entries() if e.status == "done"]
        index = open_lexical(paths.lexical_index, create=False, writer=True)
        try:
            replay_unindexed(store, index, progress, done[-1] if done else None)
        finally:
            index.close()
    return listed
