"""Sets of ids as sorted NumPy arrays: distinct values and membership without a hash.

Every dense search restricted to a set (a set query's, a filter's) turns that set into
sorted distinct slots and checks candidates against it. NumPy 2.4's ``np.unique`` takes
its hash path for these arrays: 36 ms for 131K int64 ids here, against 1.5 ms to sort
them and drop repeats; at 131K that was ~0.45 s of a 1 s set query (profiled on a
1M-article home, ``benchmarks/search/sets.py --home``).
"""

from __future__ import annotations

import numpy as np


def unique(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, sorted (``np.unique`` by sorting)."""
    out = np.sort(np.asarray(values).ravel())
    if len(out) < 2:
        return out
    keep = np.empty(len(out), dtype=bool)
    keep[0] = True
    np.not_equal(out[1:], out[:-1], out=keep[1:])
    return out[keep]


def member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``np.isin`` for a sorted, non-empty set, without sorting it again per call."""
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return np.asarray(sorted_set[pos] == values)


def without(values: np.ndarray, sorted_set: np.ndarray | None) -> np.ndarray:
    """``values`` less those in ``sorted_set`` (None or empty: all of them)."""
    if sorted_set is None or len(sorted_set) == 0 or len(values) == 0:
        return values
    return np.asarray(values[~member(values, sorted_set)])
