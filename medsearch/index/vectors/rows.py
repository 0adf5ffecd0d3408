"""Rows of a memory-mapped file read at scattered positions, and float16 conversions.

Why this exists: at PubMed scale the article vectors' float16 copy is 61 GB, more than a
workstation caches, and every dense query re-scores ~4,000 PQ candidates scattered over
it. Read through a plain memory map, each of those rows is a page fault the kernel
serves one at a time and *widens* into a read-around of the file (128 KB and up, large
folios); measured on a 3 GB file here, 4,000 cold rows read **3 GB** from the disk and
took 1.8-2.7 s (docs/benchmarks-history.md). Telling the kernel first which byte
ranges are needed (``posix_fadvise(WILLNEED)``, one call per run of nearby rows) queues
all of those reads at once, page-sized, so an SSD serves them in parallel and the
memory-map reads that follow find the pages present: 20 MB read and 47 ms on the same
file; when the file is already cached the calls cost ~0.35 us per row.

Dense reads (a rebuild walking every row in slot order) are left to the kernel's own
read-ahead, which is what it is good at. Maps another library made (Faiss's inverted
lists) get the same announcement by address (:func:`will_need`).

float16 <-> float32: numpy converts float16 without SIMD (2.6 ms for 4,000 x 768 here;
``astype(float16)`` cost the sentence writer 2.5 s per 517K vectors); torch's
conversion is vectorised (x7). Importing torch costs a second or two, so it is used
only where torch is already loaded, which is every process that encodes or embeds a
query; any other process keeps numpy's, with identical results.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.index.sorted_ids import unique

SPREAD = 8
"""Rows asked for are *scattered* when their span holds more than this many rows per
row wanted; only then are they prefetched (a denser read is read-ahead's job)."""

PREFETCH = hasattr(os, "posix_fadvise")
"""Whether scattered reads are announced to the kernel first (Linux; switched off by the
benchmark to measure the plain memory map it replaced)."""

FLOAT16_MAX = 65504.0


def scattered(slots: np.ndarray) -> bool:
    """Whether ``slots`` (any order) are sparse enough in their span to prefetch."""
    if len(slots) == 0:
        return False
    span = int(slots.max()) - int(slots.min()) + 1
    return span > SPREAD * len(slots)


def prefetch(path: Path, slots: np.ndarray, row_bytes: int, *, offset: int = 0) -> None:
    """Ask the kernel to start reading the rows at ``slots`` of ``path`` now, all at once.

    Rows less than a page apart are announced as one range; the call returns before the
    reads complete (they overlap each other and whatever the caller does next).
    """
    if not PREFETCH or len(slots) == 0:
        return
    starts = offset + unique(slots).astype(np.int64) * row_bytes
    ends = starts + row_bytes
    # A new range starts where the gap from the previous row's end is over a page.
    new = np.flatnonzero(starts[1:] - ends[:-1] > mmap.PAGESIZE) + 1
    firsts = np.concatenate([[0], new])
    lasts = np.concatenate([new - 1, [len(starts) - 1]])
    fd = os.open(path, os.O_RDONLY)
    try:
        for lo, hi in zip(starts[firsts].tolist(), ends[lasts].tolist(), strict=True):
            os.posix_fadvise(fd, lo, hi - lo, os.POSIX_FADV_WILLNEED)
    finally:
        os.close(fd)


def gather(view: np.ndarray, slots: np.ndarray, path: Path) -> np.ndarray:
    """``view[slots]`` (rows of a memory map of ``path``), prefetched when scattered."""
    slots = np.asarray(slots, dtype=np.int64)
    if scattered(slots):
        row_bytes = view.itemsize * (view.shape[1] if view.ndim == 2 else 1)
        prefetch(path, slots, row_bytes, offset=int(getattr(view, "offset", 0)))
    return np.asarray(view[slots])


def will_need(ranges: list[tuple[int, int]]) -> None:
    """Start reading the ``(address, length)`` ranges of memory maps another library made
    (Faiss's inverted lists), all at once and exactly, before that library touches them
    page by page (a no-op where ``madvise`` is missing)."""
    if not PREFETCH or not ranges:
        return
    libc = _libc()
    if libc is None:
        return
    for address, length in ranges:
        start = address & ~(mmap.PAGESIZE - 1)
        libc.madvise(ctypes.c_void_p(start), ctypes.c_size_t(address + length - start), WILLNEED)


WILLNEED = getattr(mmap, "MADV_WILLNEED", 3)


@functools.cache
def _libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    return libc if hasattr(libc, "madvise") else None


def _torch() -> Any:
    return sys.modules.get("torch")


def _writable(a: np.ndarray) -> np.ndarray:
    """``a`` contiguous and writable, as ``torch.from_numpy`` wants (a copy only if not)."""
    a = np.ascontiguousarray(a)
    return a if a.flags.writeable else a.copy()


def to_float32(half: np.ndarray) -> np.ndarray:
    """float16 rows as float32 (torch's vectorised conversion where torch is loaded)."""
    torch = _torch()
    if torch is None or half.dtype != np.float16 or half.size == 0:
        return np.asarray(half, dtype=np.float32)
    out: np.ndarray = torch.from_numpy(_writable(half)).float().numpy()
    return out


def to_float16(vectors: np.ndarray) -> np.ndarray:
    """float32 rows as float16 (round to nearest even, as numpy; torch where loaded)."""
    torch = _torch()
    if torch is None or vectors.dtype != np.float32 or vectors.size == 0:
        return np.asarray(vectors, dtype=np.float16)  # float64 directly: no double rounding
    out: np.ndarray = torch.from_numpy(_writable(vectors)).half().numpy()
    return out


def fits_float16(vectors: np.ndarray) -> bool:
    """No NaN, no infinity and nothing float16 cannot hold (two passes, no copy)."""
    if vectors.size == 0:
        return True
    # NaN propagates through max/min and fails both comparisons.
    return bool(vectors.max() <= FLOAT16_MAX and vectors.min() >= -FLOAT16_MAX)
