"""A screening order scored as asreview-insights scores it (its ``metrics`` command).

``labels`` is the relevance of each record in the order shown, priors first, over the
whole data set. Definitions (asreview-insights, ``algorithms.py`` / ``metrics.py``):

- recall at a fraction x screened: the recall after the first record at which the
  fraction screened reaches x;
- WSS at recall r (Cohen et al. 2006): the records screened by a random order to reach
  the r-th fraction of relevant records (rounded as insights rounds it) minus those the
  order needed, over all records;
- normalised loss: the area between the perfect recall curve and this order's, over the
  area between the perfect and the worst curve: 0 perfect, 1 all relevant last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np


def recall_at(labels: Sequence[int] | np.ndarray, fraction: float) -> float:
    y = np.asarray(labels, dtype=np.int64)
    n = len(y)
    found = np.cumsum(y)
    i = max(0, math.ceil(fraction * n - 1e-9) - 1)
    return float(found[i] / found[-1])


def wss(labels: Sequence[int] | np.ndarray, recall: float = 0.95) -> float:
    y = np.asarray(labels, dtype=np.int64)
    n, n_pos = len(y), int(y.sum())
    found = np.cumsum(y)
    found_random = np.round(np.linspace(0, n_pos, n))
    targets = np.arange(1, n_pos + 1)
    when = np.searchsorted(found, targets)
    when_random = np.searchsorted(found_random, targets)
    earlier = (when_random - when) / n
    x = targets / n_pos
    i = int(np.searchsorted(x, recall - 1e-12))
    return float(earlier[min(i, n_pos - 1)])


def loss(labels: Sequence[int] | np.ndarray) -> float:
    y = np.asarray(labels, dtype=np.int64)
    n, n_pos = len(y), int(y.sum())
    best = n * n_pos - n_pos * (n_pos - 1) / 2
    worst = n_pos * (n_pos + 1) / 2
    if best == worst:
        return 0.0
    actual = float(np.cumsum(y).sum())
    return float((best - actual) / (best - worst))


def last_relevant(labels: Sequence[int] | np.ndarray) -> int:
    """The rank (from 1) of the last relevant record: what screening everything costs to
    reach full recall."""
    y = np.asarray(labels, dtype=np.int64)
    hits = np.flatnonzero(y)
    return int(hits[-1]) + 1 if len(hits) else 0
