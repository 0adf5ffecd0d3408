"""SQL that can only read the store, for ``medsearch sql``.

Three locks, each for something the one before cannot see:

- the file is opened ``mode=ro`` (and ``PRAGMA query_only``), so SQLite itself refuses
  to change it;
- yet a read-only connection may still ``ATTACH`` a new file or ``VACUUM INTO`` one,
  which creates it, and ``PRAGMA optimize`` writes statistics: an authorizer (called by
  SQLite while it *compiles* a statement) allows only what reads: ``SELECT``, reading
  columns, functions, recursive CTEs and the pragmas that only report. Anything else is
  refused before a single row is looked at, and the refusal names what was refused;
- one statement per call (``sqlite3`` refuses ``SELECT 1; DROP TABLE x``).

The store is in WAL mode, so a query reads the last committed state while an ingest
writes: neither waits for the other. Reading WAL needs its shared-memory index (the
``-shm`` file next to the store), which SQLite creates on first use; in a data home
the reader cannot write (a copy on read-only media, another user's home) and with no
``-shm`` left there, :func:`open_readonly` opens the file ``immutable`` instead: no
writer can be at work in a folder nobody may create that file in.

:mod:`medsearch.store.sql_bounds` bounds what a reading query may cost (memory, time).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from medsearch.errors import SqlError, StoreError
from medsearch.store.damage import UNREADABLE_SCHEMA, damaged, is_damage
from medsearch.store.sql_bounds import Watch, query_error

# Pragmas that only report, whatever their argument.
INFO_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "foreign_key_check",
        "integrity_check",
        "quick_check",
        "database_list",
        "collation_list",
        "function_list",
        "module_list",
        "pragma_list",
        "compile_options",
    }
)
# Pragmas that report without an argument and set something with one.
SETTING_PRAGMAS = frozenset(
    {
        "application_id",
        "auto_vacuum",
        "cache_size",
        "data_version",
        "encoding",
        "freelist_count",
        "journal_mode",
        "page_count",
        "page_size",
        "query_only",
        "schema_version",
        "user_version",
    }
)

READING = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)

# Functions that read nothing of the store but reach into SQLite itself. fts3_tokenizer
# with one argument returns the address of a tokenizer's native code (a pointer leak),
# and with two installs one at any address: SQLite's known way from SQL to running
# native code, which builds with ENABLE_FTS3_TOKENIZER (Debian's) leave on.
NATIVE_FUNCTIONS = frozenset({"fts3_tokenizer"})

ACTIONS = {  # how a refusal names what it refused ({0}: the table, index ... named)
    sqlite3.SQLITE_INSERT: "INSERT into {0}",
    sqlite3.SQLITE_UPDATE: "UPDATE of {0}",
    sqlite3.SQLITE_DELETE: "DELETE from {0}",
    sqlite3.SQLITE_ATTACH: "ATTACH (or VACUUM INTO)",
    sqlite3.SQLITE_DETACH: "DETACH",
    sqlite3.SQLITE_ALTER_TABLE: "ALTER TABLE {1}",
    sqlite3.SQLITE_REINDEX: "REINDEX",
    sqlite3.SQLITE_ANALYZE: "ANALYZE",
    sqlite3.SQLITE_TRANSACTION: "{0}",
    sqlite3.SQLITE_SAVEPOINT: "SAVEPOINT",
    sqlite3.SQLITE_CREATE_VTABLE: "CREATE VIRTUAL TABLE {0}",
    sqlite3.SQLITE_DROP_VTABLE: "DROP VIRTUAL TABLE {0}",
}
for _kind in ("INDEX", "TABLE", "TRIGGER", "VIEW"):
    for _temp in ("", "TEMP_"):
        ACTIONS[getattr(sqlite3, f"SQLITE_CREATE_{_temp}{_kind}")] = f"CREATE {_kind} {{0}}"
        ACTIONS[getattr(sqlite3, f"SQLITE_DROP_{_temp}{_kind}")] = f"DROP {_kind} {{0}}"

SCHEMA_TABLES = frozenset({"sqlite_master", "sqlite_temp_master", "sqlite_schema"})
SCHEMA_EDITS = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})


class ReadOnlyGuard:
    """The authorizer; keeps the first refusal so the error can name it."""

    def __init__(self) -> None:
        self.refused: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, db: str | None, _: str | None
    ) -> int:
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in NATIVE_FUNCTIONS:
            what = f"{arg2}() (it reaches SQLite's native code)"
        elif action in READING:
            return sqlite3.SQLITE_OK
        elif action == sqlite3.SQLITE_PRAGMA and arg1 is not None:
            name = arg1.lower()
            if name in INFO_PRAGMAS or (name in SETTING_PRAGMAS and arg2 is None):
                return sqlite3.SQLITE_OK
            what = f"PRAGMA {arg1}" + (f" = {arg2}" if arg2 is not None else "")
        elif arg1 in SCHEMA_TABLES and action in SCHEMA_EDITS:
            # Asked first for a CREATE or DROP (the specific check, refused below, comes
            # next) and while SQLite declares the columns of a table-valued function
            # (json_each, pragma_table_info). Never a write here: on this connection the
            # schema table cannot be written.
            return sqlite3.SQLITE_OK
        else:
            what = ACTIONS.get(action, f"SQLite action {action}").format(arg1, arg2)
        if self.refused is None:
            self.refused = what
        return sqlite3.SQLITE_DENY


def uri(path: Path, *, immutable: bool = False) -> str:
    """A read-only SQLite URI for ``path`` (percent-encoded: a ``?`` or ``#`` in a folder
    name would otherwise end the file name)."""
    return path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")


def open_readonly(path: Path) -> sqlite3.Connection:
    """``path`` opened read-only, also where its folder cannot be written.

    SQLite opens WAL's shared memory at the first read, so that is where a folder
    nobody may create ``-shm`` in fails ("attempt to write a readonly database"). Then,
    and only if the folder is indeed not writable and no ``-shm`` exists, the file is
    opened ``immutable``: SQLite neither locks it nor reads the write-ahead log, which is
    right only when the log holds nothing, so a log with content is refused by name.
    """
    conn = sqlite3.connect(uri(path), uri=True, isolation_level=None)
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        shm = path.with_name(path.name + "-shm")
        if os.access(path.parent, os.W_OK) or shm.exists():
            raise
    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size:
        raise StoreError(
            f"the article store {path} has commits in {wal.name} that cannot be read"
            f" without writing to {path.parent}; run `medsearch ingest --no-encode` once"
            " as a user who may write there (it folds them into the store)"
        )
    return sqlite3.connect(uri(path, immutable=True), uri=True, isolation_level=None)


def connect(path: Path) -> sqlite3.Connection:
    """The store, opened so that nothing done through the connection can change it."""
    if not path.exists():
        raise StoreError(f"no article store at {path}; run `medsearch ingest` first")
    try:
        conn = open_readonly(path)
        conn.execute("PRAGMA query_only = ON")
        conn.execute("PRAGMA busy_timeout = 10000")
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        if is_damage(exc):  # medsearch sql, the check to suggest, cannot open it either
            raise damaged(path, exc, hint=UNREADABLE_SCHEMA) from exc
        raise StoreError(f"cannot open the article store {path}: {exc}") from exc
    return conn


def execute(
    conn: sqlite3.Connection, sql: str, *, watch: Watch | None = None, store: Path | None = None
) -> sqlite3.Cursor:
    """Run one reading statement; rows are fetched as the caller iterates the cursor.

    Raises :class:`SqlError` with one line for a statement that would write (before it
    runs) and for one SQLite cannot compile or run, and the error
    :func:`~medsearch.store.sql_bounds.query_error` gives for the rest (stopped by
    ``watch``, past a limit, a damaged ``store``).
    """
    guard = ReadOnlyGuard()
    conn.set_authorizer(guard)
    try:
        return conn.execute(sql)
    except (sqlite3.Error, MemoryError) as exc:
        if guard.refused is not None:
            raise SqlError(
                f"medsearch sql only reads; {guard.refused} is refused (the query did not run)"
            ) from exc
        raise query_error(exc, watch, store) from exc
