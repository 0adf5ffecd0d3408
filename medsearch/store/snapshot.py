"""Which state of the corpus a search ran against, and what changed since, per PMID.

A search history line is reproducible only with the corpus it ran on: PubMed's yearly
baseline, the last update file applied on top of it, and the article count
(PRISMA-S items 8, 12 and 13). The store already knows all three: the file ledger
(``files``), and ``meta.record_count``. It also knows, per PMID, which file wrote its
current record (``records.file_id``) and which file deleted it (``deleted.file_id``):
with the ledger id of the last file applied at the time of the search (``file_mark``),
a later re-run can say which articles a later file added, replaced or removed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from medsearch.store.db import SQL_CHUNK, Store
from medsearch.store.schema import COUNT_KEY

BASELINE_NAME = re.compile(r"pubmed([0-9]{2})n[0-9]+\.xml(?:\.gz)?")
"""NCBI's data file names: ``pubmed26n0001.xml.gz`` is from the 2026 baseline series
(update files continue its numbering under the same two-digit year)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The corpus a search ran against."""

    baseline_year: int | None
    """The year of the newest PubMed file series applied (``pubmed26n...``: 2026); None
    for a corpus built from other files (exports, hand-made files)."""
    last_file: str | None
    """The name of the last file applied (baseline or update); None for an empty ledger."""
    file_mark: int
    """The ledger id of ``last_file`` (0 when none): records written by a file with a
    higher id came after the search."""
    articles: int
    """How many articles the store held."""


def corpus_snapshot(store: Store) -> Snapshot:
    """Three indexed lookups: microseconds, whatever the corpus's size."""
    conn = store.conn
    count = conn.execute("SELECT value FROM meta WHERE key = ?", (COUNT_KEY,)).fetchone()
    last = conn.execute(
        "SELECT id, name FROM files WHERE status = 'done' ORDER BY id DESC LIMIT 1"
    ).fetchone()
    series = conn.execute(
        "SELECT name FROM files WHERE status = 'done' AND name GLOB 'pubmed[0-9][0-9]n*'"
        " ORDER BY name DESC LIMIT 1"
    ).fetchone()
    year = None
    if series is not None and (match := BASELINE_NAME.fullmatch(series[0])) is not None:
        year = 2000 + int(match.group(1))
    return Snapshot(
        baseline_year=year,
        last_file=last[1] if last else None,
        file_mark=int(last[0]) if last else 0,
        articles=int(count[0]) if count else store.count(),
    )


@dataclass(frozen=True, slots=True)
class Provenance:
    """Per PMID: the ledger file that wrote its current record, or that deleted it."""

    written: dict[int, int | None]
    """PMID -> file id of its current record (None: written outside the ledger)."""
    deleted: dict[int, int | None]
    """PMID -> file id of the ``DeleteCitation`` that removed it."""
    names: dict[int, str]
    """File id -> file name, for every id above."""


def provenance(store: Store, pmids: Sequence[int]) -> Provenance:
    """Where each of ``pmids`` stands now, read in chunks by primary key."""
    written: dict[int, int | None] = {}
    deleted: dict[int, int | None] = {}
    for chunk in _chunks(pmids):
        marks = ",".join("?" * len(chunk))
        for pmid, file_id in store.conn.execute(
            f"SELECT pmid, file_id FROM records WHERE pmid IN ({marks})", chunk
        ):
            written[int(pmid)] = None if file_id is None else int(file_id)
        for pmid, file_id in store.conn.execute(
            f"SELECT pmid, file_id FROM deleted WHERE pmid IN ({marks})", chunk
        ):
            deleted[int(pmid)] = None if file_id is None else int(file_id)
    ids = sorted({i for i in (*written.values(), *deleted.values()) if i is not None})
    names: dict[int, str] = {}
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        for file_id, name in store.conn.execute(
            f"SELECT id, name FROM files WHERE id IN ({marks})", chunk
        ):
            names[int(file_id)] = str(name)
    return Provenance(written=written, deleted=deleted, names=names)


def _chunks(values: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), SQL_CHUNK):
        yield list(values[start : start + SQL_CHUNK])
