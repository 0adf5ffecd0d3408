"""The citation edges as the store keeps them: one ``article_refs`` row per citing PMID.

A row per edge would be ~1 billion rows at PubMed's size (~40 GB with SQLite's per-row
and index overhead); a row per citing article holds its cited PMIDs as one sorted
little-endian ``uint32`` array, ~4 bytes an edge: the graph holds PMIDs up to
:data:`GRAPH_MAX` (PubMed's are below 50 million). A record whose own PMID is past it
(valid for the store, which takes up to ``MAX_PMID``) is kept without edges, and ingest
says so; readers skip any such row an older version wrote, so no one record can stop the
graph (and every search that counts citations) for good. The row is
written in the same transaction as the record it came from, so an update replaces it,
a deletion removes it and a killed ingest leaves record and edges agreeing.

``sources`` says where each edge came from: NULL when every edge is from the record's
reference list (what ingest writes), else two bit arrays of the edges' length (in the
reference list, in the Open Citation Collection), ~1/4 byte an edge. An update of the
record keeps the collection's edges and replaces only the list's.

References that give only a DOI travel with a record's packed PMIDs (:func:`pack_refs`)
and become edges once the DOI is a stored article's (:mod:`medsearch.store.ref_dois`).

While cited-by arrays are built (:mod:`medsearch.index.citations`), every changed
citing PMID is also put in ``refs_changed`` with its edges as they were at the build, the
first time it changes after it: that is what keeps cited-by answers exact until the next
build. ``meta.refs_version`` counts the transactions that changed edges.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from medsearch.records import Reference
from medsearch.store import ref_dois

BUILT_KEY = "citations_built"
"""``meta`` key: the generation of the cited-by arrays in the data home (absent: none)."""
VERSION_KEY = "refs_version"
"""``meta`` key: counts the transactions that changed ``article_refs``."""
CHUNK = 500

U32 = npt.NDArray[np.uint32]

GRAPH_MAX = 2**32 - 2
"""The largest PMID the citation graph holds (``uint32``; 2^32 - 1 is left unused)."""
IN_GRAPH_SQL = f"BETWEEN 1 AND {GRAPH_MAX}"
"""An SQL condition on a PMID column: the rows the graph reads."""


def in_graph(pmid: int) -> bool:
    return 0 < pmid <= GRAPH_MAX


def pack(pmids: Iterable[int]) -> bytes | None:
    """PMIDs as the sorted, de-duplicated ``<u4`` array a row holds (None: no edges).
    The standard library's ``array``: numpy's conversion of a short list costs more
    than the list (this runs once per record in the parsers)."""
    values = array("I", sorted({p for p in pmids if 0 < p <= GRAPH_MAX}))
    if not values:
        return None
    if sys.byteorder == "big":
        values.byteswap()
    return values.tobytes()


def pack_refs(references: Sequence[Reference]) -> bytes | None:
    """A record's reference list as the store takes it: the PMIDs :func:`pack` packs,
    followed by the references that give only a DOI (:mod:`medsearch.store.ref_dois`)."""
    return ref_dois.with_dois(
        pack(r.pmid for r in references if r.pmid), ref_dois.doi_only(references)
    )


def unpack(blob: bytes | None) -> U32:
    if not blob:
        return np.empty(0, dtype=np.uint32)
    return np.frombuffer(blob, dtype="<u4").astype(np.uint32, copy=False)


def split_sources(
    blob: bytes | None, n: int
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """(in the reference list, in the collection) for each of a row's ``n`` edges."""
    if blob is None:
        return np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
    width = (n + 7) // 8
    bits = np.frombuffer(blob, dtype=np.uint8)
    in_list = np.unpackbits(bits[:width], count=n).astype(bool)
    in_occ = np.unpackbits(bits[width : 2 * width], count=n).astype(bool)
    return in_list, in_occ


def join_sources(in_list: npt.NDArray[np.bool_], in_occ: npt.NDArray[np.bool_]) -> bytes | None:
    if in_list.all() and not in_occ.any():
        return None
    return np.packbits(in_list).tobytes() + np.packbits(in_occ).tobytes()


def _track(conn: sqlite3.Connection, pmids: Sequence[int]) -> None:
    """Remember each PMID's edges as the built arrays hold them, before they change."""
    pmids = [p for p in pmids if in_graph(p)]
    built = conn.execute("SELECT 1 FROM meta WHERE key = ?", (BUILT_KEY,)).fetchone()
    if built:
        conn.executemany(
            "INSERT OR IGNORE INTO refs_changed(pmid, edges)"
            " VALUES (?1, (SELECT edges FROM article_refs WHERE pmid = ?1))",
            [(p,) for p in pmids],
        )
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, '1') ON CONFLICT(key)"
        " DO UPDATE SET value = CAST(value AS INTEGER) + 1",
        (VERSION_KEY,),
    )


def _with_collection(
    conn: sqlite3.Connection, pmids: Sequence[int]
) -> dict[int, tuple[bytes, bytes]]:
    """The rows among ``pmids`` that hold edges from the collection (their edges, sources)."""
    found: dict[int, tuple[bytes, bytes]] = {}
    for i in range(0, len(pmids), CHUNK):
        chunk = tuple(pmids[i : i + CHUNK])
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT pmid, edges, sources FROM article_refs WHERE pmid IN ({marks})"
            " AND sources IS NOT NULL",
            chunk,
        )
        found.update((p, (e, s)) for p, e, s in rows)
    return found


def write_lists(conn: sqlite3.Connection, rows: Sequence[tuple[int, bytes | None]]) -> None:
    """Replace the reference-list edges of each ``(pmid, packed)`` (:func:`pack_refs`),
    keeping the edges the collection gave it, queue its DOI-only references, and turn
    pending references to the DOIs of these articles into edges (inside the caller's
    transaction). A PMID past :data:`GRAPH_MAX` keeps no edges and queues nothing."""
    if not rows:
        return
    parts = [(p, *ref_dois.split(blob if in_graph(p) else None)) for p, blob in rows]
    _replace_lists(conn, [(p, packed) for p, packed, _ in parts])
    ref_dois.replace(conn, [(p, dois) for p, _, dois in parts])
    resolved = ref_dois.arrivals(conn, [p for p, _ in rows])
    if resolved:
        add_edges(conn, *ref_dois.as_arrays(resolved), from_list=True)


def _replace_lists(conn: sqlite3.Connection, rows: Sequence[tuple[int, bytes | None]]) -> None:
    pmids = [p for p, _ in rows]
    _track(conn, pmids)
    kept = _with_collection(conn, pmids)
    upserts: list[tuple[int, bytes, bytes | None]] = []
    gone: list[tuple[int]] = []
    for pmid, packed in rows:
        if pmid in kept:
            edges, sources = kept[pmid]
            old = unpack(edges)
            _, in_occ = split_sources(sources, len(old))
            listed = unpack(packed)
            merged = np.union1d(old[in_occ], listed).astype(np.uint32)
            packed = merged.astype("<u4").tobytes() or None
            new_sources = (
                join_sources(np.isin(merged, listed), np.isin(merged, old[in_occ]))
                if packed
                else None
            )
            if packed:
                upserts.append((pmid, packed, new_sources))
                continue
        if packed:
            upserts.append((pmid, packed, None))
        else:
            gone.append((pmid,))
    conn.executemany(
        "INSERT INTO article_refs(pmid, edges, sources) VALUES (?, ?, ?) ON CONFLICT(pmid)"
        " DO UPDATE SET edges = excluded.edges, sources = excluded.sources",
        upserts,
    )
    conn.executemany("DELETE FROM article_refs WHERE pmid = ?", gone)


def delete(conn: sqlite3.Connection, pmids: Sequence[int]) -> None:
    """A deleted article cites nothing any more (inside the caller's transaction)."""
    if pmids:
        _track(conn, pmids)
        conn.executemany("DELETE FROM article_refs WHERE pmid = ?", [(p,) for p in pmids])
        ref_dois.forget(conn, pmids)


def add_collection(conn: sqlite3.Connection, citing: U32, cited: U32) -> int:
    """Add the collection's edges ``citing -> cited`` (sorted by citing), marking those a
    reference list already gave as from both; returns how many edges were new."""
    return add_edges(conn, citing, cited, from_list=False)


def add_edges(conn: sqlite3.Connection, citing: U32, cited: U32, *, from_list: bool) -> int:
    """Add edges ``citing -> cited`` (sorted by citing) from a reference list (``from_list``:
    a DOI-only reference resolved) or the collection, keeping the other source's marks;
    returns how many edges were new."""
    if not len(citing):
        return 0
    starts = np.flatnonzero(np.r_[True, citing[1:] != citing[:-1]])
    ends = np.r_[starts[1:], len(citing)]
    pmids = [int(p) for p in citing[starts]]
    _track(conn, pmids)
    existing: dict[int, tuple[bytes, bytes | None]] = {}
    for i in range(0, len(pmids), CHUNK):
        chunk = tuple(pmids[i : i + CHUNK])
        marks = ",".join("?" * len(chunk))
        for p, e, s in conn.execute(
            f"SELECT pmid, edges, sources FROM article_refs WHERE pmid IN ({marks})", chunk
        ):
            existing[p] = (e, s)
    added = 0
    upserts = []
    for pmid, lo, hi in zip(pmids, starts, ends, strict=True):
        new = np.unique(cited[lo:hi])
        new = new[new > 0]
        if pmid in existing:
            edges, sources = existing[pmid]
            old = unpack(edges)
            in_list, in_occ = split_sources(sources, len(old))
        else:
            old = np.empty(0, dtype=np.uint32)
            in_list = in_occ = np.zeros(0, dtype=bool)
        merged = np.union1d(old, new).astype(np.uint32)
        added += len(merged) - len(old)
        from_new = np.isin(merged, new)
        listed = np.isin(merged, old[in_list])
        from_occ = np.isin(merged, old[in_occ])
        if from_list:
            listed |= from_new
        else:
            from_occ |= from_new
        upserts.append((pmid, merged.astype("<u4").tobytes(), join_sources(listed, from_occ)))
    conn.executemany(
        "INSERT INTO article_refs(pmid, edges, sources) VALUES (?, ?, ?) ON CONFLICT(pmid)"
        " DO UPDATE SET edges = excluded.edges, sources = excluded.sources",
        upserts,
    )
    return added


def edges_of(
    conn: sqlite3.Connection, pmid: int
) -> tuple[U32, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """A citing PMID's cited PMIDs (sorted) with their sources (in list, in collection)."""
    row = conn.execute("SELECT edges, sources FROM article_refs WHERE pmid = ?", (pmid,)).fetchone()
    if row is None:
        empty = np.zeros(0, dtype=bool)
        return np.empty(0, dtype=np.uint32), empty, empty
    edges = unpack(row[0])
    in_list, in_occ = split_sources(row[1], len(edges))
    return edges, in_list, in_occ


def source_names(in_list: bool, in_occ: bool) -> str:
    if in_list and in_occ:
        return "both"
    return "reference list" if in_list else "collection"
