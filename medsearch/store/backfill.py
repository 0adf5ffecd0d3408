"""Filling ``articles`` from the records of a store an older medsearch wrote.

Migration 5 (:data:`~medsearch.store.schema.RECORDS_SCHEMA`) only renames and creates
tables, so it is
instant at any size; the rows of ``articles`` for the records already there are then
computed here, from the records themselves, with the very function ingest uses
(:func:`~medsearch.store.columns.article_row`). At 40M records that is a long job (see
BENCHMARKS.md), so it runs in PMID order, :data:`BATCH` records per transaction, and
each transaction also moves the position kept in ``meta`` (:data:`BACKFILL_KEY`): an
interruption loses at most one batch, and the next run resumes from the position. The
key is removed with the last batch, which is how every reader knows the table is whole.

Ingest runs the fill when it opens a store (``medsearch ingest`` with no arguments
does nothing else on a store that is up to date), and ``medsearch sql`` refuses to
answer from a half-filled table rather than answer wrongly. Records written by ingest
after the migration already have their rows; filling them again writes the same values.
"""

from __future__ import annotations

import sqlite3

from medsearch.errors import DiskFullError
from medsearch.progress import NullProgress, Progress
from medsearch.store.columns import article_row
from medsearch.store.db import Store, is_disk_full
from medsearch.store.schema import BACKFILL_KEY, RECORDS_SCHEMA, schema_version

BATCH = 10_000
"""Records per transaction: ~0.5 s of work (BENCHMARKS.md), so an interruption loses
little, while commits stay rare enough not to cost."""

NEEDS_INGEST = "run `medsearch ingest --no-encode` once to fill it (it resumes if interrupted)"


def position(conn: sqlite3.Connection) -> int | None:
    """The PMID up to which older records have their ``articles`` rows, or None when
    every record has one (or the store is older than the table: see :func:`problem`)."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (BACKFILL_KEY,)).fetchone()
    except sqlite3.OperationalError:  # no meta table: an empty or foreign file
        return None
    return int(row[0]) if row else None


def problem(conn: sqlite3.Connection) -> str | None:
    """Why ``articles`` cannot be trusted to hold every article yet (None: it can)."""
    version = schema_version(conn)
    if version < RECORDS_SCHEMA:
        return (
            f"this store was written by an older medsearch (schema {version}) and has no"
            f" `articles` table yet; {NEEDS_INGEST}"
        )
    at = position(conn)
    if at is not None:
        return (
            "the `articles` table is still being filled from the records an older medsearch"
            f" wrote (up to PMID {at:,} of {last_pmid(conn):,}); {NEEDS_INGEST}"
        )
    return None


def last_pmid(conn: sqlite3.Connection) -> int:
    """The highest stored PMID (an index lookup: counting 40M records would read them all,
    so the fill's progress is measured in PMIDs, which PubMed hands out densely)."""
    return int(conn.execute("SELECT COALESCE(MAX(pmid), 0) FROM records").fetchone()[0])


def fill(store: Store, progress: Progress | None = None) -> int:
    """Give every record from before migration 5 its ``articles`` row; returns how many
    records were read (0 when there was nothing to do). Takes the store's writer role:
    call it where ingest would write (under the data home's writer lock)."""
    at = position(store.conn)
    if at is None:
        return 0
    start = at
    progress = progress or NullProgress()
    end = last_pmid(store.conn)
    progress.start(
        "backfill",
        "Filling the SQL `articles` table from the stored records (PMIDs)",
        total=max(0, end - at),
    )
    done = 0
    try:
        for batch in store.iter_articles(batch=BATCH, after=at):
            at = batch[-1].pmid
            with store.transaction():
                store.write_articles([article_row(a) for a in batch])
                store.conn.execute(
                    "UPDATE meta SET value = ? WHERE key = ?", (str(at), BACKFILL_KEY)
                )
            done += len(batch)
            progress.update("backfill", completed=min(at, end) - start)
        with store.transaction():
            store.conn.execute("DELETE FROM meta WHERE key = ?", (BACKFILL_KEY,))
        return done
    except (sqlite3.OperationalError, DiskFullError) as exc:
        if isinstance(exc, DiskFullError) or is_disk_full(exc):
            raise DiskFullError(
                "disk full while filling the SQL `articles` table; what was filled is kept:"
                " free some space and run `medsearch ingest --no-encode` again"
            ) from exc
        raise
    finally:
        progress.finish("backfill")
