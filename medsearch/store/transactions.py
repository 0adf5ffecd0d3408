"""One SQLite transaction on a connection opened in autocommit mode
(``isolation_level=None``), for every database of a data home that is not the article
store: watches, history, the citation graph's bookkeeping."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def transaction(conn: sqlite3.Connection, *, begin: str = "BEGIN IMMEDIATE") -> Iterator[None]:
    """All or nothing. ``BEGIN IMMEDIATE`` takes the write lock up front, so a second
    writer waits at the start instead of failing half-way; an exception, Ctrl-C included,
    or a COMMIT the disk refuses rolls everything back and is raised. ``begin="BEGIN"``:
    a read snapshot that writes nothing yet."""
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
