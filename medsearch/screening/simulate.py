"""A whole screening run on a labelled data set, to measure a model and the stopping rule.

ASReview's simulation protocol: ``prior_included`` relevant and ``prior_excluded``
irrelevant records drawn at random (by ``seed``) are labelled first; then the model is
fitted, the unscreened record with the highest score is "screened" (its known label
read), and so on to the end. The model is refitted after every relevant record found and
otherwise whenever the labels have grown by 5% since the last fit (each fit starts from
the previous one): what the background retraining of a real session does, and what keeps
a 2,500-record simulation at seconds on two cores. Once every relevant record is found
the rest of the order cannot change any metric, so it is appended in the last ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from medsearch.errors import UsageError
from medsearch.screening import metrics, stopping
from medsearch.screening.model import DEFAULT_MODEL, Fitted, fit, ranking

REFIT_GROWTH = 0.05


@dataclass(frozen=True)
class Simulation:
    order: list[int]
    """Row indices (0-based) in the order screened, priors first."""
    labels: list[int]
    """The relevance of each record in that order."""
    priors: list[int]
    stop_at: int | None
    """Records screened when the hypergeometric rule first said stop (None: never)."""
    knee_at: int | None

    def to_dict(self, names: Sequence[str | int] | None = None) -> dict[str, Any]:
        y = np.asarray(self.labels)
        total = int(y.sum())

        def recall_after(n: int | None) -> float | None:
            return None if n is None else float(y[:n].sum() / total)

        return {
            "order": [names[i] for i in self.order] if names is not None else self.order,
            "priors": [names[i] for i in self.priors] if names is not None else self.priors,
            "records": len(y),
            "relevant": total,
            "wss@95": round(metrics.wss(y, 0.95), 4),
            "recall@10%": round(metrics.recall_at(y, 0.10), 4),
            "loss": round(metrics.loss(y), 4),
            "last_relevant": metrics.last_relevant(y),
            "stopping": {
                "rule": "hypergeometric (Callaghan & Müller-Hansen 2020)",
                "screened": self.stop_at,
                "recall": recall_after(self.stop_at),
                "saved": None if self.stop_at is None else len(y) - self.stop_at,
            },
            "knee": {
                "screened": self.knee_at,
                "recall": recall_after(self.knee_at),
            },
        }


def random_priors(labels: np.ndarray, *, included: int, excluded: int, seed: int) -> list[int]:
    """ASReview's random priors: ``included`` relevant then ``excluded`` irrelevant rows."""
    rng = np.random.default_rng(seed)
    pos = np.flatnonzero(labels == 1)
    neg = np.flatnonzero(labels == 0)
    if len(pos) < included or len(neg) < excluded:
        raise UsageError(
            f"the data set has {len(pos)} relevant and {len(neg)} irrelevant records:"
            f" too few for {included}+{excluded} priors"
        )
    return [int(i) for i in rng.choice(pos, included, replace=False)] + [
        int(i) for i in rng.choice(neg, excluded, replace=False)
    ]


def simulate(
    matrix: sp.csr_matrix,
    labels: np.ndarray,
    priors: Sequence[int],
    *,
    model: str = DEFAULT_MODEL,
    recall_target: float = stopping.DEFAULT_RECALL,
    confidence: float = stopping.DEFAULT_CONFIDENCE,
) -> Simulation:
    """Screen every row of ``matrix`` in the order the model chooses."""
    n = matrix.shape[0]
    labels = np.asarray(labels, dtype=np.int64)
    total_relevant = int(labels.sum())
    seen = np.zeros(n, dtype=bool)
    order: list[int] = []
    for p in priors:
        if not seen[p]:
            seen[p] = True
            order.append(int(p))
    found = int(labels[order].sum())
    fitted: Fitted | None = None
    fitted_at = 0
    queue = np.zeros(0, dtype=np.int64)
    position = 0
    alpha = 1.0 - confidence
    stop_at: int | None = None
    knee_at: int | None = None
    fresh_relevant = True
    while len(order) < n:
        if found == total_relevant:
            rest = (
                ranking(fitted.scores(matrix), seen)
                if fitted is not None
                else np.flatnonzero(~seen)
            )
            order.extend(int(i) for i in rest)
            seen[rest] = True
            break
        both = 0 < found < len(order)
        grown = len(order) - fitted_at >= max(1, int(REFIT_GROWTH * fitted_at))
        if both and (fitted is None or fresh_relevant or grown):
            rows = np.asarray(order, dtype=np.int64)
            fitted = fit(model, matrix, rows, labels[rows], previous=fitted)
            fitted_at = len(order)
            queue = ranking(fitted.scores(matrix), seen)
            position = 0
            fresh_relevant = False
        elif fitted is None and position >= len(queue):
            queue = np.flatnonzero(~seen)  # no model yet: the order given
            position = 0
        while seen[queue[position]]:
            position += 1
        pick = int(queue[position])
        position += 1
        seen[pick] = True
        order.append(pick)
        if labels[pick]:
            found += 1
            fresh_relevant = True
        y = labels[order]
        if stop_at is None and stopping.p_value(y, n, recall_target) < alpha:
            stop_at = len(order)
        if knee_at is None and stopping.knee(y)[0]:
            knee_at = len(order)
    y = labels[order]
    if stop_at is None:  # after the last relevant every record read is irrelevant
        more = stopping.more_to_screen(y[: _last_found(y)], n, recall_target, confidence)
        stop_at = min(n, _last_found(y) + more) if more < n - _last_found(y) else None
    if knee_at is None:
        for s in range(_last_found(y), n + 1, max(1, n // 500)):
            if stopping.knee(y[:s])[0]:
                knee_at = s
                break
    return Simulation(order, [int(v) for v in y], list(priors), stop_at, knee_at)


def _last_found(y: np.ndarray) -> int:
    return metrics.last_relevant(y)
