"""References that give only a DOI, turned into edges when the DOI is a stored article's.

``articles.doi`` has no index: one costs ~2 GB at PubMed's 40.9M articles, to serve only
these references. So a DOI is resolved from whichever side arrives second:

- **The citing record arrives**: its DOI-only references wait in ``ref_dois_queue``
  (written with the record, in its transaction) until the ingest ends; then they are
  looked up in batches through the lexical index's ``[aid]`` field (casefolded DOIs,
  one exact term each: :func:`medsearch.index.citations_dois.lexical_lookup`). A found
  DOI becomes a reference-list edge in ``article_refs``; one not found moves to
  ``ref_dois`` as a pending reference.
- **The cited article arrives later**: every stored record's DOI (``articles.doi``,
  read by primary key as it is written) is looked up among the pending references, by
  a 64-bit hash of the normalised DOI (``ref_dois`` is keyed both ways: by citing PMID,
  to replace a record's, and by the hash, for arrivals). A match becomes an edge in the
  same transaction.

A pending reference costs ~35 bytes (two 12-byte keys with SQLite's overhead), and only
references that give a DOI and no PMID are kept; the DOI's text stays in the citing
record. An update of the citing record drops its pending references and resolved DOI
edges with its other reference-list edges, and queues its current ones again; a deletion
drops them.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from medsearch.records import Reference

MARK = b"\xff\xff\xff\xff"
"""Ends the packed PMIDs when DOI-only references follow (never a PMID: those are
kept below 2^32 - 1)."""
CHUNK = 500
DOI_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/")

DoiLookup = Callable[[Sequence[str]], dict[str, int]]
"""Normalised DOIs -> the PMID of the stored article with each (those found)."""


def normal_doi(text: str) -> str:
    """A DOI as the lexical index's ``[aid]`` holds one: stripped and casefolded (DOIs
    are case-insensitive), without a resolver's URL or a ``doi:`` label."""
    doi = text.strip()
    lowered = doi.casefold()
    for prefix in DOI_PREFIXES:
        if lowered.startswith(prefix):
            return lowered[len(prefix) :].strip()
    if lowered.startswith("doi:"):
        return lowered[4:].strip()
    return lowered


def doi_key(doi: str) -> int:
    """A normalised DOI's 64-bit key (signed, as SQLite's INTEGER holds it). At 10^8
    pending DOIs a collision is about a 1-in-3,000 chance over the whole table, and its
    cost is one wrong edge, so the text is not kept beside it."""
    return int.from_bytes(
        hashlib.blake2b(doi.encode(), digest_size=8).digest(), "little", signed=True
    )


def doi_only(references: Iterable[Reference]) -> tuple[str, ...]:
    """The normalised DOIs of the references that give a DOI and no PMID, each once."""
    return tuple(dict.fromkeys(normal_doi(r.doi) for r in references if not r.pmid and r.doi))


def with_dois(packed: bytes | None, dois: Sequence[str]) -> bytes | None:
    """A record's packed PMIDs followed by its DOI-only references (what the parser
    processes hand the store in one value)."""
    if not dois:
        return packed
    return (packed or b"") + MARK + "\n".join(dois).encode()


def split(blob: bytes | None) -> tuple[bytes | None, tuple[str, ...]]:
    """(packed PMIDs, DOI-only references) of a value made by :func:`with_dois`."""
    if not blob:
        return None, ()
    at = blob.find(MARK)
    while at >= 0 and at % 4:
        at = blob.find(MARK, at + 1)
    if at < 0:
        return blob, ()
    dois = tuple(blob[at + len(MARK) :].decode().split("\n"))
    return blob[:at] or None, dois


def replace(conn: sqlite3.Connection, rows: Sequence[tuple[int, Sequence[str]]]) -> None:
    """Each citing PMID's DOI-only references become ``dois`` (queued to resolve)."""
    forget(conn, [p for p, _ in rows])
    conn.executemany(
        "INSERT OR IGNORE INTO ref_dois_queue(citing, doi) VALUES (?, ?)",
        [(p, d) for p, dois in rows for d in dois],
    )


def forget(conn: sqlite3.Connection, pmids: Sequence[int]) -> None:
    """Drop the DOI-only references of ``pmids`` (replaced or deleted records). Rows are
    looked for a chunk at a time and deleted only where there are some: the ingest's
    writer thread runs this for every record (~45 us a record in all), and most records
    have none."""
    for table in ("ref_dois", "ref_dois_queue"):
        if conn.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None:
            continue
        for i in range(0, len(pmids), CHUNK):
            chunk = tuple(pmids[i : i + CHUNK])
            marks = ",".join("?" * len(chunk))
            held = conn.execute(
                f"SELECT DISTINCT citing FROM {table} WHERE citing IN ({marks})", chunk
            ).fetchall()
            conn.executemany(f"DELETE FROM {table} WHERE citing = ?", held)


def arrivals(conn: sqlite3.Connection, pmids: Sequence[int]) -> dict[int, list[int]]:
    """Pending references to the DOIs of the just-written articles ``pmids``, resolved:
    {citing: [cited PMIDs]}; their pending rows are removed (inside the caller's
    transaction). A chunk of articles costs one primary-key read of ``articles`` and
    one ``IN`` probe of the key index, and nothing while no reference is pending."""
    found: dict[int, list[int]] = {}
    if conn.execute("SELECT 1 FROM ref_dois LIMIT 1").fetchone() is None:
        return found
    for i in range(0, len(pmids), CHUNK):
        chunk = tuple(pmids[i : i + CHUNK])
        marks = ",".join("?" * len(chunk))
        owner = {
            doi_key(normal_doi(doi)): pmid
            for pmid, doi in conn.execute(
                f"SELECT pmid, doi FROM articles WHERE pmid IN ({marks}) AND doi IS NOT NULL",
                chunk,
            )
        }
        if not owner:
            continue
        keys = tuple(owner)
        marks = ",".join("?" * len(keys))
        hits = conn.execute(
            f"SELECT key, citing FROM ref_dois WHERE key IN ({marks})", keys
        ).fetchall()
        for key, citing in hits:
            if citing != owner[key]:
                found.setdefault(citing, []).append(owner[key])
        conn.executemany("DELETE FROM ref_dois WHERE key = ?", {(k,) for k, _ in hits})
    return found


def queued(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM ref_dois_queue").fetchone()[0])


def pending(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM ref_dois").fetchone()[0])


def resolve_batch(
    conn: sqlite3.Connection, lookup: DoiLookup, limit: int
) -> tuple[int, dict[int, list[int]]]:
    """Take up to ``limit`` queued references: those whose DOI is a stored article's
    resolved ({citing: [cited]}), the rest moved to the pending table (inside the
    caller's transaction). Returns (references taken, resolved edges)."""
    rows = conn.execute(
        "SELECT citing, doi FROM ref_dois_queue ORDER BY citing, doi LIMIT ?", (limit,)
    ).fetchall()
    if not rows:
        return 0, {}
    where = lookup(sorted({d for _, d in rows}))
    edges: dict[int, list[int]] = {}
    waiting: list[tuple[int, int]] = []
    for citing, doi in rows:
        cited = where.get(doi)
        if cited is not None and cited != citing:
            edges.setdefault(citing, []).append(cited)
        elif cited is None:
            waiting.append((citing, doi_key(doi)))
    conn.executemany("INSERT OR IGNORE INTO ref_dois(citing, key) VALUES (?, ?)", waiting)
    conn.executemany("DELETE FROM ref_dois_queue WHERE citing = ? AND doi = ?", rows)
    return len(rows), edges


def table_lookup(conn: sqlite3.Connection) -> DoiLookup:
    """DOIs looked up in ``articles`` itself: a scan per batch, for a store without a
    lexical index (tests, a bare store); a data home resolves through the index."""

    def lookup(dois: Sequence[str]) -> dict[str, int]:
        wanted = set(dois)
        out: dict[str, int] = {}
        for pmid, doi in conn.execute(
            "SELECT pmid, doi FROM articles WHERE doi IS NOT NULL ORDER BY pmid"
        ):
            key = normal_doi(doi)
            if key in wanted:
                out.setdefault(key, pmid)
        return out

    return lookup


def as_arrays(edges: dict[int, list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """{citing: [cited]} as (citing, cited) uint32 arrays sorted by citing, leaving out
    edges with a PMID past the graph's ``uint32`` (:data:`medsearch.store.refs.GRAPH_MAX`:
    an article stored with a PMID past it has no edges)."""
    top = 2**32 - 2
    kept = {c: [x for x in cited if 0 < x <= top] for c, cited in edges.items() if 0 < c <= top}
    citing = sorted(c for c in kept if kept[c])
    flat_citing = np.repeat(np.asarray(citing, dtype=np.uint32), [len(kept[c]) for c in citing])
    flat_cited = np.asarray([x for c in citing for x in kept[c]], dtype=np.uint32)
    return flat_citing, flat_cited
