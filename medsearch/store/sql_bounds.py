"""What a ``medsearch sql`` query may cost: memory, and time (``--timeout``, Ctrl-C).

:mod:`medsearch.store.readonly` decides what a statement may *do*; a statement that
only reads can still take the machine down, so this module bounds what it may *take*:

- one value: SQLite lets a string or blob grow to 1 GB by default, and a function can
  build one from a few bytes of SQL (``printf('%.*c', 2e9, 'x')`` reached 1 GB of
  memory, as do ``zeroblob`` and a recursive CTE that doubles a string). A value may
  hold :data:`MAX_VALUE` here: thousands of times what the store holds in one (a
  record is a few KB compressed, which is all ``records.data`` holds; no column is
  decompressed for SQL) and room for a ``group_concat`` or ``json_group_array`` of
  millions of PMIDs. Past it SQLite stops the statement ("string or blob too big"),
  except ``printf``, which gives NULL;
- all values at once (a row of many large columns): SQLite's whole heap may grow to
  :data:`HEAP` (``PRAGMA hard_heap_limit``), where reading needs a few MB (the page
  cache and the sorter spill to temporary files past ~2 MB). The limit is the
  process's, which is the ``medsearch sql`` command's own;
- the query text, :data:`MAX_SQL` (a shell argument is at most 128 KiB on Linux);
- time: a query that produces no rows (an endless recursive CTE, the sort before the
  first row of a large ORDER BY) never returns to Python, so Ctrl-C's
  KeyboardInterrupt would wait for it forever. A progress handler lets SQLite ask every
  :data:`STEPS` virtual-machine steps whether to stop: after Ctrl-C or once
  ``--timeout`` has passed.
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from medsearch.errors import (
    MedsearchError,
    QueryInterruptedError,
    QueryTimeoutError,
    SqlError,
)
from medsearch.store.damage import damaged, is_damage

MAX_VALUE = 128 * 2**20
HEAP = 512 * 2**20
MAX_SQL = 2**20
STEPS = 10_000
"""Virtual-machine steps between two looks at the clock and the Ctrl-C flag: well under
a millisecond of SQLite's work, and a few percent of a call into Python each time."""

LIMITS = {
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE,
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,  # the authorizer refuses ATTACH; nothing compiles one
}


def mib(n: int) -> str:
    return f"{n // 2**20} MiB"


def bound(conn: sqlite3.Connection) -> None:
    """Set the limits on ``conn`` (and on SQLite's heap in this process)."""
    for category, value in LIMITS.items():
        conn.setlimit(category, value)
    # Lowers the process's limit only, never raises one a caller set lower.
    conn.execute(f"PRAGMA hard_heap_limit = {HEAP}")


SPILL = 4 * 2**30
"""Bytes a query's temporary files (a large sort, a GROUP BY, a materialised CTE) may
take from the temporary folder's disk. SQLite has no cap of its own: an endless ``ORDER
BY random()`` filled the folder. Sorting every PMID of PubMed spills ~1 GB."""
SPILL_EVERY = 256
"""Progress calls between two looks at the temporary folder's free space (~2.5M steps)."""


def _free_bytes(folder: str) -> int:
    return shutil.disk_usage(folder).free


_SELF_FDS = "/proc/self/fd"
TEMP_PREFIX = "/etilqs_"
"""SQLite's temporary files on Unix: ``etilqs_`` and random letters, unlinked at once and
kept open, in the first writable of SQLITE_TMPDIR, TMPDIR, /var/tmp, /usr/tmp, /tmp."""


def _temp_file_bytes() -> int | None:
    """The bytes SQLite's open temporary files hold in this process, read from their file
    descriptors (Linux's ``/proc``): what they take whatever folder SQLite chose, and at
    once, where the disk's free space drops only when the kernel writes the pages out
    (delayed allocation). None where there is no ``/proc``."""
    try:
        fds = os.listdir(_SELF_FDS)
    except OSError:
        return None
    total = 0
    for fd in fds:
        link = f"{_SELF_FDS}/{fd}"
        try:
            if TEMP_PREFIX in os.readlink(link):
                total += os.stat(link).st_size
        except OSError:  # closed since the listing
            continue
    return total


class Watch:
    """The progress handler of one query: True (stop) after Ctrl-C, past the deadline,
    or once the query's temporary files have taken :data:`SPILL` of the disk."""

    def __init__(self, timeout: float | None = None, *, spill: int | None = None) -> None:
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.interrupted = False
        self.expired = False
        self.spilled = False
        self.spill = SPILL if spill is None else spill
        self._temp = tempfile.gettempdir()  # where SQLite spills (SQLITE_TMPDIR, TMPDIR, /tmp)
        self._free_at_start = _free_bytes(self._temp)
        self._calls = 0

    def __call__(self) -> bool:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.expired = True
        self._calls += 1
        spilled = self._calls % SPILL_EVERY == 0 and self._spilled() > self.spill
        self.spilled = self.spilled or spilled
        return self.interrupted or self.expired or self.spilled

    def _spilled(self) -> int:
        """Bytes the query's temporary files take: their own sizes where ``/proc`` shows
        them, else what the temporary folder's disk has lost since the query began."""
        held = _temp_file_bytes()
        return held if held is not None else self._free_at_start - _free_bytes(self._temp)

    def check(self) -> None:
        """Between pages of rows: stop here too (SQLite may not take another step)."""
        if self():
            raise self.stopped()

    def stopped(self) -> MedsearchError:
        if self.spilled:
            return SqlError(
                f"SQL: the query's temporary files took more than {self.spill // 2**30} GiB of"
                f" {self._temp} and it was stopped (a sort or grouping too large to spill)"
            )
        if self.interrupted:
            return QueryInterruptedError(
                "the query was interrupted (Ctrl-C); the store is unchanged"
            )
        return QueryTimeoutError(
            f"the query ran longer than --timeout {self.timeout:g} s and was stopped"
        )

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        """Ctrl-C: mark it, then raise as Python would. Inside SQLite the exception ends
        in the progress handler, which stops the statement; the flag says why."""
        self.interrupted = True
        raise KeyboardInterrupt

    @contextmanager
    def catching_ctrl_c(self) -> Iterator[None]:
        """Ctrl-C anywhere inside is :class:`QueryInterruptedError` (exit 130), which says
        what happened to a query; the CLI's own line is about resuming work."""
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, self.on_sigint) if main else None
        try:
            yield
        except KeyboardInterrupt:
            self.interrupted = True
            raise self.stopped() from None
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)


def query_error(
    exc: BaseException, watch: Watch | None = None, store: Path | None = None
) -> MedsearchError:
    """The one line for an error SQLite (or Python's sqlite3) met running a query on
    ``store``: stopped by ``watch``, past a limit, damage, or the SQL itself."""
    if watch is not None and (watch.interrupted or watch.expired or watch.spilled):
        return watch.stopped()
    if store is not None and is_damage(exc):
        return damaged(store, exc)
    if isinstance(exc, MemoryError):  # how Python reports SQLITE_NOMEM: the heap limit
        return SqlError(
            f"SQL: the query needs more than {mib(HEAP)} of memory, the most medsearch sql"
            " gives one (PRAGMA hard_heap_limit)"
        )
    name = getattr(exc, "sqlite_errorname", None)
    if name == "SQLITE_TOOBIG":
        return SqlError(
            f"SQL: a string or blob would be longer than {mib(MAX_VALUE)}, the most medsearch"
            " sql lets a value hold (SQLITE_LIMIT_LENGTH)"
        )
    if isinstance(exc, sqlite3.DataError) and "too large" in str(exc):
        return SqlError(
            f"SQL: the query is longer than {mib(MAX_SQL)}, the most medsearch sql takes"
        )
    return SqlError(f"SQL: {exc}")
