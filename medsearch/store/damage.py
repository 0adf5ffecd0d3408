"""What a damaged store looks like to the person reading it: one line, not a traceback.

Disks and copies fail in scattered places: a flipped byte inside one record's
compressed blob breaks only that record (zstd or the JSON reject it), one inside a
b-tree page breaks whatever reads the page (SQLite says the image is malformed), and
one inside a text column leaves bytes that are not UTF-8. Each is a :class:`StoreError`
that names the PMID when the reader knows it, and says how to see the extent of the
damage: SQLite's own check, which ``medsearch sql`` runs read-only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from medsearch.errors import StoreError

CHECK = 'check the whole store with `medsearch sql "PRAGMA integrity_check"`'

DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
"""SQLite's primary result codes for a file whose pages are not what it wrote."""


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` says the store's bytes are damaged (not: locked, missing, busy)."""
    if isinstance(exc, UnicodeDecodeError):
        # SQLite's message about a malformed schema quotes the damaged bytes, and Python
        # fails to decode the message itself
        return True
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in DAMAGE_CODES:
        return True
    # Python's own error for a TEXT value that is not UTF-8 (it carries no SQLite code)
    return str(exc).startswith("Could not decode to UTF-8")


RESTORE = "restore the file from a copy, or ingest again into a new data home"
UNREADABLE_SCHEMA = f"SQLite cannot read its list of tables; {RESTORE}"
BEYOND_CHECK = f"SQLite's own check cannot walk it either; {RESTORE}"


class DamagedStoreError(StoreError):
    """Damage met while reading the store at ``path``; the line ends with what to do."""

    def __init__(self, path: Path, what: str, pmid: int | None = None, hint: str = CHECK):
        self.path = path
        self.what = what
        self.pmid = pmid
        where = f" while reading PMID {pmid}" if pmid is not None else ""
        super().__init__(f"the article store {path} is damaged ({what}){where}; {hint}")

    def hinting(self, hint: str) -> DamagedStoreError:
        """The same damage, ending with ``hint`` (when the usual next step cannot help)."""
        return DamagedStoreError(self.path, self.what, self.pmid, hint)


def damaged(
    path: Path, exc: BaseException, pmid: int | None = None, *, hint: str = CHECK
) -> DamagedStoreError:
    """The error for damage ``exc`` met while reading the store at ``path``."""
    what = f"{type(exc).__name__}: {exc}" if isinstance(exc, UnicodeDecodeError) else str(exc)
    return DamagedStoreError(path, what, pmid, hint)


class DamagedRecordError(StoreError):
    """One stored record whose bytes no longer decode (zstd, zlib or JSON reject them).

    The codec raises it knowing only the bytes; the store, which knows the PMID it
    asked for, raises it again with the PMID named (:meth:`of`)."""

    def __init__(self, reason: str, pmid: int | None = None) -> None:
        self.reason = reason
        self.pmid = pmid
        which = f"the stored record of PMID {pmid}" if pmid is not None else "a stored record"
        super().__init__(f"{which} is damaged ({reason}); {CHECK}")

    def of(self, pmid: int | None) -> DamagedRecordError:
        return DamagedRecordError(self.reason, pmid)


@contextmanager
def reading(path: Path, pmid: int | None = None) -> Iterator[None]:
    """Around a read of the store: damage becomes :func:`damaged`; other errors pass."""
    try:
        yield
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:
        if not is_damage(exc):
            raise
        raise damaged(path, exc, pmid) from exc
