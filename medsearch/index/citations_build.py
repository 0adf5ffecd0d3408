"""Building the cited-by arrays from ``article_refs`` (see :mod:`medsearch.index.citations`).

The build streams the table in PMID order, a chunk of rows at a time, and never holds
the graph in Python objects. Up to :data:`IN_MEMORY_EDGES` edges it sorts the (cited,
citing) pairs in memory in one pass. Past that, a first pass counts in-degrees and a
second places each chunk's citing PMIDs. The lists come out sorted because the rows
arrive in order.

The new arrays are written beside the old ones and swapped in under a generation number.
The store records that number in the same transaction that empties ``refs_changed``.
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

from medsearch.store.refs import BUILT_KEY, IN_GRAPH_SQL, U32
from medsearch.store.transactions import transaction

ROWS_PER_CHUNK = 200_000
IN_MEMORY_EDGES = 20_000_000
"""Graphs up to this many edges (160 MB of pairs) are sorted in memory in one pass."""
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class BuildInfo:
    generation: int
    edges: int
    citing_articles: int
    cited_articles: int
    seconds: float


def meta_int(conn: sqlite3.Connection, key: str) -> int | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return int(row[0]) if row else None


def _stream(conn: sqlite3.Connection) -> Iterator[tuple[U32, U32]]:
    """(citing, cited) numpy arrays, a chunk of rows at a time, in citing PMID order."""
    last = -1
    while True:
        rows = conn.execute(
            "SELECT pmid, edges FROM article_refs WHERE pmid > ?"
            f" AND pmid {IN_GRAPH_SQL} ORDER BY pmid LIMIT ?",
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
    with transaction(conn, begin="BEGIN"):  # one snapshot for both passes
        generation = (meta_int(conn, BUILT_KEY) or 0) + 1
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
    with transaction(conn):
        conn.execute("DELETE FROM refs_changed")
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key)"
            " DO UPDATE SET value = excluded.value",
            (BUILT_KEY, str(generation)),
        )
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
    return BuildInfo(generation, edges, citing_rows, keys, time.perf_counter() - start)
