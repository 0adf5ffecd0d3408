"""The Faiss side of a vector collection: build, train, search with selectors, I/O.

Kept apart from the bookkeeping in :mod:`medsearch.index.vectors.collection` so that module never
needs to know Faiss's SWIG quirks (selectors must outlive the search call, bitmaps are
little-endian bit order, ``index_factory`` strings).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from medsearch.errors import MedsearchError
from medsearch.index.sorted_ids import unique, without
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors.layout import (
    TRAIN_POINTS_MAX,
    TRAIN_POINTS_PER_LIST,
    default_nprobe,
    fsync_dir,
)
from medsearch.index.vectors.store import READ_BATCH

ADD_BATCH = 65_536
PARALLEL_SCAN = 1_000_000  # codes scanned per query above which a query uses every core
BITMAP_RATIO = 64  # exclusions above rows / 64: a bitmap of every slot beats a hash set
_faiss: Any = faiss  # the SWIG wrappers take keyword arguments the stubs do not know


def new_index(dim: int, factory: str) -> Any:
    return faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)


def ivf_of(index: Any) -> Any | None:
    return faiss.try_extract_index_ivf(index)


def min_train_points(dim: int, factory: str) -> int:
    """Vectors needed to train ``factory`` well: 39 per inverted list, 256 per PQ code."""
    index = new_index(dim, factory)
    if index.is_trained:
        return 0
    ivf = ivf_of(index)
    nlist = ivf.nlist if ivf is not None else 1
    return max(39 * nlist, 256)


def trained_index(
    dim: int,
    factory: str,
    slots: np.ndarray,
    read_rows: Callable[[np.ndarray], np.ndarray],
    *,
    seed: int = 0,
    coarse: cq.Coarse = cq.CPU,
) -> tuple[Any, int | None]:
    """An empty ``factory`` index trained on the rows at ``slots``: (index, nprobe).

    Training uses a random sample of at most ``TRAIN_POINTS_PER_LIST * nlist`` rows (and
    enough for PQ's 256 centroids).
    """
    index = new_index(dim, factory)
    nprobe = None
    ivf = ivf_of(index)
    concrete: Any = faiss.downcast_index(ivf) if ivf is not None else None
    if type(concrete).__name__ == "IndexIVFPQ":
        # Polysemous training (on by default) only serves Hamming pre-filtering, which
        # we do not use, and makes PQ96 training several times slower.
        concrete.do_polysemous_training = False
    if not index.is_trained:
        nlist = ivf.nlist if ivf is not None else 256
        want = max(39 * nlist, min(TRAIN_POINTS_PER_LIST * nlist, TRAIN_POINTS_MAX), 256 * 39)
        rng = np.random.default_rng(seed)
        if len(slots) > want:
            sample = np.sort(rng.choice(slots, size=want, replace=False))
        else:
            sample = slots
        try:
            cq.train(index, read_rows(sample), coarse)
        except RuntimeError as exc:  # too few points for nlist / PQ centroids
            reason = str(exc).strip().splitlines()[-1]
            raise MedsearchError(
                f"cannot train a {factory!r} index on {len(sample)} vectors: {reason}"
            ) from exc
    ivf = ivf_of(index)
    if ivf is not None:
        nprobe = default_nprobe(ivf.nlist)
        ivf.nprobe = nprobe
    return index, nprobe


def add_rows(
    index: Any,
    slots: np.ndarray,
    read_rows: Callable[[np.ndarray], np.ndarray],
    coarse: cq.Coarse = cq.CPU,
) -> None:
    """Add the rows at ``slots`` in batches: peak memory is one batch of float32."""
    for lo in range(0, len(slots), ADD_BATCH):
        batch = slots[lo : lo + ADD_BATCH]
        cq.add_with_ids(index, read_rows(batch), batch.astype(np.int64), coarse)


def write_index(index: Any, path: Path) -> None:
    """Write via a temporary name then rename, so a crash never leaves half an index."""
    tmp = path.with_name(path.name + ".tmp")
    faiss.write_index(index, str(tmp))
    with open(tmp, "rb+") as fh:
        os.fsync(fh.fileno())
    tmp.replace(path)
    fsync_dir(path.parent)


def read_index(path: Path, *, mmap: bool = False) -> Any:
    """Read an index; ``mmap`` leaves IVF lists on disk (read-only, for searching)."""
    flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
    return faiss.read_index(str(path), flags)


def remove_slots(index: Any, slots: np.ndarray) -> bool:
    """Drop ``slots`` from the index; False when this index kind cannot remove."""
    if len(slots) == 0:
        return True
    try:
        index.remove_ids(np.ascontiguousarray(slots, dtype=np.int64))
    except RuntimeError:
        return False
    return True


class Selector:
    """A Faiss ID selector plus the NumPy buffers it points into (kept alive together)."""

    def __init__(self, allowed: np.ndarray | None, excluded: np.ndarray | None, rows: int):
        self._keep: list[Any] = []
        if allowed is not None:
            allowed = without(unique(allowed), unique(excluded) if excluded is not None else None)
            bitmap = allowed_bitmap(np.asarray(allowed, dtype=np.int64), rows)
            self._keep.append(bitmap)
            self.sel: Any = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        elif excluded is not None and len(excluded) * BITMAP_RATIO > rows:
            # Many exclusions (a sentence collection's tombstones): one bit per slot
            # (44 MB at 350M slots) is smaller than a hash set and cheaper per check.
            bitmap = np.full(rows // 8 + 1, 0xFF, dtype=np.uint8)
            dead = np.asarray(excluded, dtype=np.int64)
            bits = np.left_shift(1, dead & 7).astype(np.uint8)
            np.bitwise_and.at(bitmap, dead >> 3, np.invert(bits))
            self._keep.append(bitmap)
            self.sel = faiss.IDSelectorBitmap(len(bitmap), faiss.swig_ptr(bitmap))
        elif excluded is not None and len(excluded):
            arr = np.ascontiguousarray(excluded, dtype=np.int64)
            inner = faiss.IDSelectorBatch(arr)
            self._keep.extend([arr, inner])
            self.sel = faiss.IDSelectorNot(inner)
        else:
            self.sel = None


SPARSE_ALLOWED = 50
"""Rows per allowed slot past which :func:`allowed_bitmap` sets bits one by one."""


def allowed_bitmap(allowed: np.ndarray, rows: int) -> np.ndarray:
    """One bit per slot (little-endian within a byte), set for the unique ``allowed``.

    A set query restricts every search to its set: at 40.9M rows a bool array and
    ``packbits`` cost ~57-63 ms a query here whatever the set, setting the bits one by one
    ~2 ms for 20K slots and ~13 ms for 200K (the two meet at ~50 rows per slot: 10M
    rows, 200K slots, 13 ms each)."""
    if len(allowed) * SPARSE_ALLOWED < rows:
        bitmap = np.zeros(rows // 8 + 1, dtype=np.uint8)
        np.bitwise_or.at(bitmap, allowed >> 3, np.left_shift(1, allowed & 7).astype(np.uint8))
        return bitmap
    bits = np.zeros(rows + 8, dtype=bool)
    bits[allowed] = True
    return np.packbits(bits, bitorder="little")


def search_index(
    index: Any, queries: np.ndarray, k: int, selector: Selector, nprobe: int | None
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, slots) of Faiss's top ``k``; -1 slots where fewer were found."""
    k = max(1, min(k, max(index.ntotal, 1)))
    params: Any = None
    threads = 1 if len(queries) == 1 else None
    ivf = ivf_of(index)
    if ivf is not None:
        params = _faiss.SearchParametersIVF(sel=selector.sel, nprobe=nprobe or 1)
        scanned = index.ntotal * (nprobe or 1) / max(ivf.nlist, 1)
        # A long scan per query (sentence codes at PubMed scale: ~11M) is split over
        # lists and every core; a short one stays on one thread (see omp_threads).
        ivf.parallel_mode = 1 if scanned > PARALLEL_SCAN else 0
        threads = None if scanned > PARALLEL_SCAN else threads
    elif selector.sel is not None:
        params = _faiss.SearchParameters(sel=selector.sel)
    q = np.ascontiguousarray(queries, dtype=np.float32)
    with omp_threads(threads):
        if params is None:
            scores, slots = index.search(q, k)
        else:
            scores, slots = index.search(q, k, params=params)
    return scores, slots


@contextmanager
def omp_threads(count: int | None) -> Iterator[None]:
    """Run Faiss on ``count`` OpenMP threads for the block (None: leave as is).

    One interactive query is memory-bound: measured here under load, 100K x 384 flat
    search took 50 ms on 2 threads and 16 ms on 1 (spinning OpenMP workers lose more
    to contention than they gain). Batches keep every thread.
    """
    if count is None:
        yield
        return
    before = _faiss.omp_get_max_threads()
    _faiss.omp_set_num_threads(count)
    try:
        yield
    finally:
        _faiss.omp_set_num_threads(before)


def exact_topk(
    q: np.ndarray, slots: np.ndarray, k: int, read_rows: Callable[[np.ndarray], np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Exact top-k of each query over the rows at ``slots`` (sorted), read in batches.

    Used for small filtered candidate sets and to re-score IVF-PQ candidates; ties are
    broken by slot so results are deterministic.
    """
    best_s = [np.zeros(0, np.float32) for _ in range(len(q))]
    best_c = [np.zeros(0, np.int64) for _ in range(len(q))]
    for lo in range(0, len(slots), READ_BATCH):
        batch = slots[lo : lo + READ_BATCH]
        scores = q @ read_rows(batch).T
        for i in range(len(q)):
            s = np.concatenate([best_s[i], scores[i]])
            c = np.concatenate([best_c[i], batch])
            if len(s) > k:
                part = np.argpartition(-s, k - 1)[:k]
                s, c = s[part], c[part]
            order = np.lexsort((c, -s))
            best_s[i], best_c[i] = s[order], c[order]
    return best_s, best_c
