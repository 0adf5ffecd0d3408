"""Cited-by as memory-mapped sorted arrays, kept exact between builds by an overlay.

References (citing -> cited) are one ``article_refs`` row a citing PMID
(:mod:`medsearch.store.refs`): one indexed read. The other direction needs every row,
so it is built into CSR arrays in ``<home>/citations``: ``offsets`` (one entry per PMID
up to the largest cited one, plus one) and ``citing`` (uint32, each list sorted).
Cited-by of a PMID is a slice, a count is a subtraction, and 1,000 counts are two
vectorised gathers: the cost does not grow with the graph, and at 1 billion edges the
arrays are ~4.2 GB (``benchmarks/citations.py``).

The build streams the table in PMID order (a chunk of rows at a time, never the graph
in Python objects): a first pass counts in-degrees, a second scatters each chunk's
citing PMIDs into their lists, which come out sorted because the rows arrive in order.

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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from medsearch.store.refs import BUILT_KEY, U32, VERSION_KEY, edges_of, unpack

ROWS_PER_CHUNK = 200_000
IN_MEMORY_EDGES = 20_000_000
"""Graphs up to this many edges (160 MB of pairs) are sorted in memory in one pass."""
REBUILD_SHARE = 0.05
"""Rebuild the arrays when the changed citing PMIDs' edges pass this share of all edges
(a build at 1B edges is minutes; an overlay of 5% is ~50M edges, read by memory map)."""
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BuildInfo:
    generation: int
    edges: int
    citing_articles: int
    cited_articles: int
    seconds: float


def _meta(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else None


def _stream(conn: sqlite3.Connection) -> Iterator[tuple[U32, U32]]:
    """(citing, cited) numpy arrays, a chunk of rows at a time, in citing PMID order."""
    last = -1
    while True:
        rows = conn.execute(
            "SELECT pmid, edges FROM article_refs WHERE pmid > ? ORDER BY pmid LIMIT ?",
            (last, ROWS_PER_CHUNK),
        ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        pmid_list, blobs = zip(*rows, strict=True)
        pmids = np.array(pmid_list, dtype=np.uint32)
        lengths = np.fromiter(map(len, blobs), dtype=np.int64, count=len(rows)) // 4
        cited = np.frombuffer(b"".join(blobs), dtype="<u4").astype(np.uint32)
        yield np.repeat(pmids, lengths), cited


def _offsets(counts: I64) -> npt.NDArray[np.unsignedinteger]:
    total = int(counts.sum())
    offsets: npt.NDArray[np.unsignedinteger] = np.zeros(
        len(counts) + 1, dtype=np.uint32 if total < 2**32 else np.uint64
    )
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _write_arrays(conn: sqlite3.Connection, staging: Path) -> tuple[int, int, int]:
    """``keys`` (the cited PMIDs, sorted), ``offsets`` (one more) and ``citing.npy`` (each
    key's citing PMIDs, sorted) in ``staging``; returns (edges, citing rows, keys).

    Up to :data:`IN_MEMORY_EDGES` the edges are sorted in memory at once; past that a
    dense in-degree count over the PMID range (8 bytes a PMID, ~330 MB at PubMed's 41M)
    places each chunk's citing PMIDs in a second pass over the table."""
    kept: list[tuple[U32, U32]] | None = []
    degree = np.zeros(0, dtype=np.int64)
    edges = citing_rows = 0
    for citing, cited in _stream(conn):
        edges += len(cited)
        citing_rows += int(np.count_nonzero(np.diff(citing))) + (len(citing) > 0)
        if kept is not None:
            kept.append((citing, cited))
            if edges <= IN_MEMORY_EDGES:
                continue
            for _, earlier in kept:
                degree = _count_into(degree, earlier)
            kept = None
        else:
            degree = _count_into(degree, cited)
    if kept is not None:
        pairs = np.sort(
            np.concatenate([(c.astype(np.uint64) << np.uint64(32)) | g for g, c in kept])
            if kept
            else np.empty(0, dtype=np.uint64)
        )
        keys, counts = np.unique((pairs >> np.uint64(32)).astype(np.uint32), return_counts=True)
        np.save(staging / "citing.npy", (pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32))
        keys.astype(np.uint32).tofile(staging / "keys")
        _offsets(counts.astype(np.int64)).tofile(staging / "offsets")
        return edges, citing_rows, len(keys)
    keys = np.flatnonzero(degree).astype(np.uint32)
    offsets = _offsets(degree[keys])
    cursor = np.zeros(len(degree), dtype=np.int64)
    cursor[keys] = offsets[:-1]
    del degree
    citing_file = np.lib.format.open_memmap(
        staging / "citing.npy", mode="w+", dtype=np.uint32, shape=(edges,)
    )
    for citing, cited in _stream(conn):
        # one sort of (cited, citing) pairs: each cited PMID's group, its citing PMIDs in
        # order (a stable argsort of the cited PMIDs alone is ~5x slower)
        pairs = np.sort((cited.astype(np.uint64) << np.uint64(32)) | citing)
        by_cited = (pairs >> np.uint64(32)).astype(np.int64)
        starts = np.r_[0, np.flatnonzero(by_cited[1:] != by_cited[:-1]) + 1]
        sizes = np.diff(np.r_[starts, len(by_cited)])
        rank = np.arange(len(by_cited)) - np.repeat(starts, sizes)
        citing_file[cursor[by_cited] + rank] = (pairs & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        cursor[by_cited[starts]] += sizes
    citing_file.flush()
    del citing_file
    keys.tofile(staging / "keys")
    offsets.tofile(staging / "offsets")
    return edges, citing_rows, len(keys)


def _count_into(degree: I64, cited: U32) -> I64:
    """In-degrees so far plus ``cited``'s, the array grown by doubling as PMIDs rise."""
    if not len(cited):
        return degree
    top = int(cited.max()) + 1
    if top > len(degree):
        grown = np.zeros(max(top, 2 * len(degree)), dtype=np.int64)
        grown[: len(degree)] = degree
        degree = grown
    degree[:top] += np.bincount(cited, minlength=top)
    return degree


def build(folder: Path, conn: sqlite3.Connection) -> BuildInfo:
    """Build the cited-by arrays from ``article_refs`` and swap them in (the writer's
    connection: it empties ``refs_changed`` and records the generation)."""
    import time

    start = time.perf_counter()
    conn.execute("BEGIN")  # one snapshot for both passes
    try:
        generation = (_meta(conn, BUILT_KEY) or 0) + 1
        staging = folder.with_name(folder.name + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        edges, citing_rows, keys = _write_arrays(conn, staging)
        (staging / "graph.json").write_text(
            json.dumps(
                {
                    "generation": generation,
                    "edges": edges,
                    "citing_articles": citing_rows,
                    "cited_articles": keys,
                }
            )
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DELETE FROM refs_changed")
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key)"
            " DO UPDATE SET value = excluded.value",
            (BUILT_KEY, str(generation)),
        )
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return BuildInfo(generation, edges, citing_rows, keys, time.perf_counter() - start)


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
        " LEFT JOIN article_refs r ON r.pmid = c.pmid ORDER BY c.pmid"
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


def refresh(folder: Path, conn: sqlite3.Connection) -> BuildInfo | None:
    """After an ingest: rebuild the arrays when there are none (or a killed build left
    ones the store does not name) or the overlay has grown past :data:`REBUILD_SHARE`;
    else save the overlay for readers. Returns the build's figures when it built."""
    graph = CitationGraph.open(folder, conn)
    if graph.base_edges is None:
        has_edges = conn.execute("SELECT 1 FROM article_refs LIMIT 1").fetchone()
        built = _meta(conn, BUILT_KEY)
        if has_edges is None and built is None:
            return None
        return build(folder, conn)
    if graph.overlay.edges > REBUILD_SHARE * max(graph.base_edges, 1):
        return build(folder, conn)
    version = _meta(conn, VERSION_KEY) or 0
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
        built = _meta(conn, BUILT_KEY)
        arrays = _arrays(folder, built) if built is not None else None
        if arrays is None:
            return cls(conn, None, _everything_changed(conn))
        version = _meta(conn, VERSION_KEY) or 0
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
    for pmid, blob in conn.execute("SELECT pmid, edges FROM article_refs ORDER BY pmid"):
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
        return json.dumps(unpack(blob).tolist()) if isinstance(blob, bytes) else "[]"

    def cited_by(pmid: object) -> int | None:
        if not isinstance(pmid, int):
            return None
        if not graph:
            graph.append(CitationGraph.open(folder, conn))
        return graph[0].count(pmid) if 0 < pmid < 2**32 else 0

    conn.create_function("cited_pmids", 1, cited_pmids, deterministic=True)
    conn.create_function("cited_by", 1, cited_by)
