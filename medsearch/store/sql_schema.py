"""What ``medsearch sql --schema`` prints: the public tables, read from the database.

The columns and indexes are introspected (with sqlite-utils, the tool many readers of
the store will use) rather than copied from the migration, so the description cannot
drift from what SQLite has; the words come from :mod:`medsearch.store.columns`. A data
home with no store yet, or one an older medsearch wrote, is described by a fresh
in-memory database built by the same migrations: what its store will be.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from medsearch.store.columns import PUBLIC_TABLES
from medsearch.store.readonly import open_readonly
from medsearch.store.schema import SCHEMA_VERSION, migrate, schema_version

NOTE = (
    "Multi-valued columns are JSON arrays of strings ('[]' when empty): read them with"
    " json_each(), e.g. EXISTS (SELECT 1 FROM json_each(publication_types) WHERE value ="
    " 'Review'), or join the side tables. Missing values are NULL. medsearch's own tables"
    " (records, deleted, files, encoded, dictionaries, meta) may change between versions;"
    " these do not."
)


def _database(store: Path) -> sqlite3.Connection:
    if store.exists():
        conn = open_readonly(store)
        if schema_version(conn) >= SCHEMA_VERSION:
            return conn
        conn.close()
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    return conn


def schema(store: Path) -> list[dict[str, Any]]:
    """Each public table: name, description, columns (name, type, description), indexes."""
    from sqlite_utils import Database

    conn = _database(store)
    try:
        db = Database(conn)
        out = []
        for table in PUBLIC_TABLES:
            docs = {c.name: c.doc for c in table.columns}
            found = db.table(table.name)
            pk = found.pks
            out.append(
                {
                    "name": table.name,
                    "description": table.doc,
                    "columns": [
                        {"name": c.name, "type": c.type, "description": docs.get(c.name, "")}
                        for c in found.columns
                    ],
                    "primary_key": pk,
                    "indexes": [
                        {"name": i.name, "columns": i.columns}
                        for i in found.indexes
                        if not i.name.startswith("sqlite_autoindex")
                    ],
                }
            )
        return out
    finally:
        conn.close()
