"""Cited-by as memory-mapped sorted arrays, kept exact between builds by an overlay.

References (citing -> cited) are one ``article_refs`` row per citing PMID
(:mod:`medsearch.store.refs`), read with one indexed lookup. The other direction needs
every row, so it is built (:mod:`medsearch.index.citations_build`) into CSR arrays in
``<home>/citations``:

- ``keys``: the cited PMIDs, sorted;
- ``offsets``: one more entry than ``keys``;
- ``citing``: uint32, each key's citing PMIDs, sorted.

Cited-by of a PMID is a binary search and a slice, and 1,000 counts are one vectorised
binary search. The cost does not grow with the number of edges, and at 1 billion edges
the arrays are ~4.4 GB (``python -m benchmarks.citations graph``).

Between builds the store lists the citing PMIDs that changed (``refs_changed``, with their
edges as built). The overlay reads them: their old edges are subtracted from the
arrays' answers and their current edges added, so answers are exact at every moment. It
is saved as ``overlay-<version>`` arrays after an ingest (:func:`refresh`) and computed
on the spot when the store has moved on since (an ingest in progress). Ingest rebuilds
the arrays once the overlay passes :data:`REBUILD_SHARE` of the edges.

A build swaps the new arrays in with a generation number that the store records in the
same transaction that empties ``refs_changed``: a build killed half-way leaves
arrays whose generation the store does not name, which are then ignored and rebuilt.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from medsearch.index.citations_build import BuildInfo, build, meta_int
from medsearch.store.refs import BUILT_KEY, IN_GRAPH_SQL, U32, VERSION_KEY, edges_of, unpack

REBUILD_SHARE = 0.05
"""Rebuild the arrays when the changed citing PMIDs' edges pass this share of all edges
(a build at 1B edges is minutes; an overlay of 5% is ~50M edges, read by memory map)."""
I64 = npt.NDArray[np.int64]
MAX_EDGES_BLOB = 4 * 2**20
"""The largest blob ``cited_pmids()`` reads: 1M references (a real list holds at most
thousands). Its Python work is outside SQLite's heap limit, so it needs its own."""

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex


@dataclass(frozen=True, slots=True)
class Overlay:
    """What changed since the build: the changed citing PMIDs, and their edges as built
    (``old_*``) and now (``new_*``), each pair of arrays sorted by cited PMID."""

    changed: U32
    old_cited: U32
    new_cited: U32
    new_citing: U32

    @property
    def edges(self) -> int:
        return len(self.old_cited) + len(self.new_cited)


def _overlay(conn: sqlite3.Connection) -> Overlay:
    """Read ``refs_changed`` against the current rows (one snapshot)."""
    changed: list[int] = []
    old: list[bytes] = []
    new_parts: list[tuple[int, bytes]] = []
    for pmid, was, now in conn.execute(
        "SELECT c.pmid, c.edges, r.edges FROM refs_changed c"
        f" LEFT JOIN article_refs r ON r.pmid = c.pmid WHERE c.pmid {IN_GRAPH_SQL}"
        " ORDER BY c.pmid"
    ):
        changed.append(pmid)
        if was:
            old.append(was)
        if now:
            new_parts.append((pmid, now))
    old_cited = np.sort(unpack(b"".join(old)))
    new_cited = unpack(b"".join(b for _, b in new_parts))
    new_citing = np.repeat(
        np.asarray([p for p, _ in new_parts], dtype=np.uint32),
        [len(b) // 4 for _, b in new_parts],
    )
    order = np.argsort(new_cited, kind="stable")
    return Overlay(
        np.asarray(changed, dtype=np.uint32), old_cited, new_cited[order], new_citing[order]
    )


def _save_overlay(folder: Path, version: int, overlay: Overlay) -> None:
    target = folder / f"overlay-{version}"
    staging = folder / f"overlay-{version}.new"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    for name in ("changed", "old_cited", "new_cited", "new_citing"):
        np.save(staging / f"{name}.npy", getattr(overlay, name))
    for stale in folder.glob("overlay-*"):
        if stale != staging:
            shutil.rmtree(stale, ignore_errors=True)
    staging.rename(target)


def _load_overlay(folder: Path, version: int) -> Overlay | None:
    where = folder / f"overlay-{version}"
    if not where.is_dir():
        return None
    return Overlay(
        *(
            np.load(where / f"{name}.npy", mmap_mode="r")
            for name in ("changed", "old_cited", "new_cited", "new_citing")
        )
    )


def refresh(
    folder: Path, conn: sqlite3.Connection, lexical: LexicalIndex | None = None
) -> BuildInfo | None:
    """After an ingest: resolve the DOI-only references it queued (through ``lexical``'s
    ``[aid]`` when given, else a scan of ``articles``), then rebuild the arrays when there
    are none (or a killed build left ones the store does not name) or the overlay has
    grown past :data:`REBUILD_SHARE`; else save the overlay for readers. Returns the
    build's figures when it built."""
    from medsearch.index.citations_dois import lexical_lookup, resolve
    from medsearch.store.ref_dois import table_lookup

    resolve(conn, lexical_lookup(lexical, conn) if lexical is not None else table_lookup(conn))
    graph = CitationGraph.open(folder, conn)
    if graph.base_edges is None:
        has_edges = conn.execute("SELECT 1 FROM article_refs LIMIT 1").fetchone()
        built = meta_int(conn, BUILT_KEY)
        if has_edges is None and built is None:
            return None
        return build(folder, conn)
    if graph.overlay.edges > REBUILD_SHARE * max(graph.base_edges, 1):
        return build(folder, conn)
    version = meta_int(conn, VERSION_KEY) or 0
    if _load_overlay(folder, version) is None:
        _save_overlay(folder, version, graph.overlay)
    return None


class CitationGraph:
    """Both directions of the graph for one store, exact at the moment it was opened."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        arrays: tuple[U32, npt.NDArray[np.unsignedinteger], U32] | None,
        overlay: Overlay,
    ) -> None:
        self.conn = conn
        keys, offsets, citing = arrays if arrays is not None else (None, None, None)
        self.keys = keys
        self.offsets = offsets
        self.citing = citing
        self.overlay = overlay
        self.has_tables = True

    @classmethod
    def open(cls, folder: Path, conn: sqlite3.Connection) -> CitationGraph:
        """The arrays when they are the store's current generation, with the overlay;
        without them (none built yet, or a killed build's) every answer comes from the
        table itself: exact, but cited-by then reads every row."""
        built = meta_int(conn, BUILT_KEY)
        arrays = _arrays(folder, built) if built is not None else None
        if arrays is None:
            return cls(conn, None, _everything_changed(conn))
        version = meta_int(conn, VERSION_KEY) or 0
        overlay = _load_overlay(folder, version) or _overlay(conn)
        return cls(conn, arrays, overlay)

    @classmethod
    def empty(cls, conn: sqlite3.Connection) -> CitationGraph:
        """No edges: a store older than the graph's tables (read-only, not upgraded)."""
        none = np.empty(0, dtype=np.uint32)
        graph = cls(conn, None, Overlay(none, none, none, none))
        graph.has_tables = False
        return graph

    @property
    def base_edges(self) -> int | None:
        return None if self.offsets is None else int(self.offsets[-1])

    def references(self, pmid: int) -> tuple[U32, npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
        """What ``pmid`` cites (sorted), each edge's (in reference list, in collection)."""
        if not self.has_tables:
            none = np.zeros(0, dtype=bool)
            return np.empty(0, dtype=np.uint32), none, none
        return edges_of(self.conn, pmid)

    def _slot(self, keys32: U32) -> tuple[I64, npt.NDArray[np.bool_]]:
        """Each PMID's index in ``keys`` and whether it is there (cited in the arrays)."""
        assert self.keys is not None
        at = np.searchsorted(self.keys, keys32).astype(np.int64)
        inside = at < len(self.keys)
        at[~inside] = 0
        found = inside & (np.asarray(self.keys[at]) == keys32) if len(self.keys) else inside
        return at, found

    def cited_by(self, pmid: int) -> U32:
        """The PMIDs citing ``pmid``, sorted."""
        base = np.empty(0, dtype=np.uint32)
        ov = self.overlay
        if not 0 < pmid < 2**32:
            return base
        key = np.array([pmid], dtype=np.uint32)
        if self.offsets is not None and self.citing is not None:
            at, found = self._slot(key)
            if found[0]:
                lo, hi = int(self.offsets[at[0]]), int(self.offsets[at[0] + 1])
                base = np.asarray(self.citing[lo:hi])
            if len(ov.changed) and len(base):
                base = base[~_members(base, ov.changed)]
        lo, hi = (
            np.searchsorted(ov.new_cited, key[0], "left"),
            np.searchsorted(ov.new_cited, key[0], "right"),
        )
        added = np.asarray(ov.new_citing[lo:hi])
        return np.union1d(base, added).astype(np.uint32) if len(added) else base

    def counts(self, pmids: npt.ArrayLike) -> I64:
        """How many articles cite each of ``pmids`` (in this corpus's graph)."""
        wanted = np.asarray(pmids, dtype=np.int64)
        out = np.zeros(len(wanted), dtype=np.int64)
        valid = (wanted > 0) & (wanted < 2**32)
        # searched as uint32, the arrays' own type: an int64 key would convert a whole
        # (memory-mapped) array on every call
        keys = np.where(valid, wanted, 0).astype(np.uint32)
        if self.offsets is not None and len(wanted):
            at, found = self._slot(keys)
            found &= valid
            at = at[found]
            out[found] = self.offsets[at + 1].astype(np.int64) - self.offsets[at].astype(np.int64)
        ov = self.overlay
        for cited, sign in ((ov.old_cited, -1), (ov.new_cited, 1)):
            if len(cited):
                found_n = np.searchsorted(cited, keys, "right") - np.searchsorted(
                    cited, keys, "left"
                )
                out += sign * np.where(valid, found_n, 0)
        return out

    def count(self, pmid: int) -> int:
        return int(self.counts([pmid])[0])


def _arrays(
    folder: Path, generation: int
) -> tuple[U32, npt.NDArray[np.unsignedinteger], U32] | None:
    """The arrays of build ``generation``, memory-mapped; None when the folder holds no
    build or another one (a build killed before the store recorded it)."""
    info_file = folder / "graph.json"
    if not info_file.is_file():
        return None
    info = json.loads(info_file.read_text())
    if info.get("generation") != generation:
        return None
    if not info["edges"]:  # nothing to map (a memory map of zero bytes is an error)
        none = np.empty(0, dtype=np.uint32)
        return none, np.zeros(1, dtype=np.uint32), none
    keys = np.memmap(folder / "keys", dtype=np.uint32, mode="r")
    dtype = np.uint32 if info["edges"] < 2**32 else np.uint64
    offsets = np.memmap(folder / "offsets", dtype=dtype, mode="r")
    citing = np.load(folder / "citing.npy", mmap_mode="r")
    return keys, offsets, citing


def _members(values: U32, sorted_set: U32) -> npt.NDArray[np.bool_]:
    """Which of ``values`` are in ``sorted_set`` (binary search: ``np.isin`` would sort
    the whole set again on every call)."""
    at = np.searchsorted(sorted_set, values)
    at[at == len(sorted_set)] = 0
    return np.asarray(sorted_set[at] == values)


def _everything_changed(conn: sqlite3.Connection) -> Overlay:
    """With no arrays, every row is new: the overlay is the whole table (small stores,
    and the moments before the first build)."""
    pmids: list[int] = []
    blobs: list[bytes] = []
    for pmid, blob in conn.execute(
        f"SELECT pmid, edges FROM article_refs WHERE pmid {IN_GRAPH_SQL} ORDER BY pmid"
    ):
        pmids.append(pmid)
        blobs.append(blob)
    new_cited = unpack(b"".join(blobs))
    new_citing = np.repeat(np.asarray(pmids, dtype=np.uint32), [len(b) // 4 for b in blobs])
    order = np.argsort(new_cited, kind="stable")
    empty = np.empty(0, dtype=np.uint32)
    return Overlay(empty, empty, new_cited[order], new_citing[order])


def sql_functions(conn: sqlite3.Connection, folder: Path) -> None:
    """``cited_pmids(edges)``: an ``article_refs.edges`` blob as a JSON array, so
    ``json_each`` lists a row's edges; ``cited_by(pmid)``: the citation count in this
    corpus. A ``cited_by`` column kept in ``articles`` would be rewritten for every edge
    an ingest adds (~1 billion); these read the graph as it is instead."""
    graph: list[CitationGraph] = []

    def cited_pmids(blob: bytes | None) -> str:
        if not isinstance(blob, bytes):
            return "[]"
        if len(blob) > MAX_EDGES_BLOB:  # a zeroblob() of 100 MB once took 2.4 GB here
            raise ValueError(
                f"cited_pmids() takes an article_refs.edges blob (at most"
                f" {MAX_EDGES_BLOB // 2**20} MiB), not one of {len(blob):,} bytes"
            )
        return json.dumps(unpack(blob).tolist())

    def cited_by(pmid: object) -> int | None:
        if not isinstance(pmid, int):
            return None
        if not graph:
            graph.append(CitationGraph.open(folder, conn))
        return graph[0].count(pmid) if 0 < pmid < 2**32 else 0

    conn.create_function("cited_pmids", 1, cited_pmids, deterministic=True)
    conn.create_function("cited_by", 1, cited_by)
