"""The store's schema as numbered migrations.

A migration is applied once, in order, inside a transaction, and ``meta.schema_version``
records the last one. Never edit a released migration: add the next number.
"""

from __future__ import annotations

import sqlite3

from medsearch.errors import StoreError

MIGRATIONS: tuple[str, ...] = (
    # 1: articles, deletions, the file ledger
    """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE files (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        checksum TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        articles INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        replaced INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        books INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        finished_at TEXT NOT NULL,
        seconds REAL NOT NULL DEFAULT 0
    );
    CREATE TABLE articles (
        pmid INTEGER PRIMARY KEY,
        version INTEGER NOT NULL,
        year INTEGER,
        content_hash TEXT NOT NULL,
        file_id INTEGER,
        data BLOB NOT NULL
    );
    CREATE TABLE deleted (
        pmid INTEGER PRIMARY KEY,
        file_id INTEGER
    );
    """,
    # 2: which article/sentence vectors exist, for which text and which model profile
    """
    CREATE TABLE encoded (
        pmid INTEGER NOT NULL,
        kind TEXT NOT NULL,
        profile TEXT NOT NULL,
        content_hash TEXT NOT NULL,
        items INTEGER NOT NULL DEFAULT 1,
        PRIMARY KEY (kind, pmid)
    ) WITHOUT ROWID;
    """,
    # 3: zstd dictionaries the records are compressed with (id = zstd's own dictionary id,
    # which every record's frame header carries)
    """
    CREATE TABLE dictionaries (
        id INTEGER PRIMARY KEY,
        data BLOB NOT NULL,
        records INTEGER NOT NULL,
        created_at TEXT NOT NULL
    );
    """,
    # 4: the file ledger keyed by content (checksum), not by name: two different files may
    # share a name (efetch and the PubMed web export call every file pubmed.xml). Rows and
    # their ids are kept (articles.file_id points at them); a store that ingested the same
    # bytes under two names keeps both rows, and lookups prefer the 'done' one.
    """
    CREATE TABLE files_by_content (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        path TEXT NOT NULL,
        size INTEGER NOT NULL,
        checksum TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
        articles INTEGER NOT NULL DEFAULT 0,
        added INTEGER NOT NULL DEFAULT 0,
        replaced INTEGER NOT NULL DEFAULT 0,
        deleted INTEGER NOT NULL DEFAULT 0,
        books INTEGER NOT NULL DEFAULT 0,
        error TEXT,
        finished_at TEXT NOT NULL,
        seconds REAL NOT NULL DEFAULT 0
    );
    INSERT INTO files_by_content
        SELECT id, name, path, size, checksum, status, articles, added, replaced, deleted,
               books, error, finished_at, seconds
        FROM files;
    DROP TABLE files;
    ALTER TABLE files_by_content RENAME TO files;
    CREATE INDEX files_checksum ON files(checksum);
    CREATE INDEX files_name ON files(name);
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    has_meta = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
    ).fetchone()
    if not has_meta:
        return 0
    row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    return int(row[0]) if row else 0


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database up to ``target`` (the newest, :data:`SCHEMA_VERSION`, unless a
    test builds an older store); returns the version found before."""
    found = schema_version(conn)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"the store was written by a newer medsearch (schema {found}, this one knows "
            f"{SCHEMA_VERSION}); upgrade medsearch"
        )
    for number in range(found + 1, target + 1):
        script = MIGRATIONS[number - 1]
        conn.execute("BEGIN")
        try:
            for statement in script.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT INTO meta(key, value) VALUES('schema_version', ?) "
                "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                (str(number),),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return found
