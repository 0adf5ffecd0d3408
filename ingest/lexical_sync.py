"""The lexical index kept in step with the store across a unit's two commits.

A unit (see :mod:`ingest.pipeline`) changes SQLite and tantivy, which cannot commit
together. The store commits first, listing the unit's PMIDs in its ``unindexed`` table
in the same transaction; then the index commits; then the list is emptied. So wherever
a run stops (a full disk at either commit, a kill, Ctrl-C):

- before the store's commit: neither has the unit (tantivy's staged changes are never
  committed), and the next run applies it again;
- between the two commits: the store has the unit and lists its PMIDs, and the next
  writer to open the home (any ``medsearch ingest``, even with no files) re-indexes just
  those from the store, "delete this PMID, add its stored document": one unit's work,
  not a rebuild of 40M articles;
- after the index's commit, before the list is emptied: the re-indexing repeats what
  the index already holds, which changes nothing.

The index is never ahead of the store, except in a home an older medsearch wrote (it
committed tantivy first, and a failed SQLite commit then kept only the index's half):
there the index's commit payload names a file the ledger does not hold as done. Which
PMIDs that unit touched is unknown, so such an index is rebuilt from the store.
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING

from medsearch.errors import DiskFullError, StoreError
from medsearch.index.lexical.catch_up import pending, replay_unindexed
from medsearch.paths import Paths
from medsearch.progress import Progress
from medsearch.store import Store
from medsearch.store.db import is_disk_full

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex


def open_in_step(paths: Paths, store: Store, progress: Progress) -> LexicalIndex:
    """The lexical index for the writer, in step with ``store``: rebuilt from it when
    missing, stale, broken or ahead of it, and given back the unit a stopped run left
    unindexed.

    The index is derived data (the store holds every record), so an index written by
    an older medsearch, a damaged one or a deleted one is rebuilt, not refused: after
    an upgrade, ``medsearch ingest`` brings it back.
    """
    from medsearch.index.lexical.index import REBUILD_HINT
    from medsearch.index.lexical.shards import open_lexical

    path = paths.lexical_index
    try:
        index = open_lexical(path, writer=True)
    except StoreError as exc:
        reason = str(exc).removesuffix(REBUILD_HINT)
        progress.message(f"rebuilding the lexical index from the store: {reason}")
        shutil.rmtree(path, ignore_errors=True)
        index = open_lexical(path, writer=True)
    ahead = ahead_of_store(store, index)
    if ahead is not None:
        progress.message(
            f"rebuilding the lexical index from the store: it holds changes from {ahead}"
            " that the store does not (an ingest stopped between their two commits)"
        )
    if ahead is not None or (index.count() == 0 and store.count() > 0):
        split = split_if_large(paths, store, progress, index, store.count(), ledger_payload(store))
        if split is index:  # small: rebuilt whole
            rebuild(store, index, progress)
        store.unindexed.clear()  # the whole store is indexed
        return split
    replay_unindexed(store, index, progress, ledger_payload(store))
    return split_if_large(paths, store, progress, index)  # e.g. a split a full disk stopped


def repair(paths: Paths, progress: Progress) -> int:
    """Before a writer that does not otherwise open the index for writing (``update``
    with nothing new, ``watch run``, ``rerank train``) relies on it: when a stopped run
    left PMIDs the index may not have, bring the index in step as ``ingest`` would.
    The caller holds the writer lock. Returns how many PMIDs were listed (0: nothing to
    do, and nothing was opened for writing)."""
    if not (listed := pending(paths)):
        return 0
    with Store(paths.store) as store:
        open_in_step(paths, store, progress).close()
    return listed


def ledger_payload(store: Store) -> str | None:
    """The commit payload of an index built from the whole store: its last file done."""
    done = [e.name for e in store.files.entries() if e.status == "done"]
    return done[-1] if done else None


def split_if_large(
    paths: Paths,
    store: Store,
    progress: Progress,
    index: LexicalIndex,
    articles: int | None = None,
    payload: str | None = None,
) -> LexicalIndex:
    """Split a whole index past :data:`SHARD_DOCS` articles (``articles``: its count
    unless given) into one shard per core, at a file boundary, from the store (~3
    minutes for 2M articles on 2 cores), so searches use every core; see
    :mod:`medsearch.index.lexical.shards`."""
    from medsearch.index.lexical import shards as lsh

    n = lsh.shard_count(os.cpu_count())
    if isinstance(index, lsh.ShardedLexicalIndex) or n < 2:
        return index
    articles = index.count() if articles is None else articles
    if articles < lsh.SHARD_DOCS:
        return index
    payload = index.last_commit_payload() if payload is None else payload
    index.close()
    progress.start("split", f"Splitting the lexical index into {n} shards", total=articles)
    try:
        lsh.split_from(
            paths.lexical_index,
            store.iter_articles(batch=2000),
            n,
            payload,
            advance=lambda done: progress.advance("split", done),
        )
    except Exception as exc:
        if is_disk_full(exc):
            raise DiskFullError(
                "disk full while splitting the lexical index into shards; the whole"
                " index is kept: free some space and run `medsearch ingest` again"
            ) from exc
        raise
    finally:
        progress.finish("split")
    return lsh.open_lexical(paths.lexical_index, writer=True)


def rebuild(store: Store, index: LexicalIndex, progress: Progress) -> None:
    """Every stored article into ``index``, replacing all it held, in one commit."""
    progress.start("reindex", "Rebuilding lexical index", total=store.count())
    try:
        index.delete_all()  # what an index ahead of the store holds (none if empty)
        for batch in store.iter_articles(batch=2000):
            index.add(batch)  # no PMID is left in the index (see LexicalIndex.add)
            progress.advance("reindex", len(batch))
        index.commit(payload=ledger_payload(store))
    except BaseException:
        index.rollback()
        raise
    finally:
        progress.finish("reindex")


def ahead_of_store(store: Store, index: LexicalIndex) -> str | None:
    """The file whose changes ``index`` committed and ``store`` does not hold (None when
    the index is not ahead): ingest's commit payload is always a file the ledger has as
    done. A store with records and no ledger was not built by ingest (the benchmarks
    write store and index directly) and has nothing to judge by."""
    payload = index.last_commit_payload()
    if payload is None:
        return None
    ledger = store.files.entries()
    if any(e.name == payload and e.status == "done" for e in ledger):
        return None
    if not ledger and store.count() > 0:
        return None
    return payload
