"""When can screening stop? Two rules, read from the decisions in the order they were made.

**Hypergeometric test** (Callaghan & Müller-Hansen 2020, "Statistical stopping criteria
for automated screening in systematic reviews", Systematic Reviews 9:273,
doi:10.1186/s13643-020-01521-4). The null hypothesis is that recall is still below the
target. Treat the last ``n`` records screened as if they had been drawn at random from
the records not yet screened before them (the "urn": ``N - N_seen + n`` records). If
recall were below the target ``t``, the urn would hold at least
``K = floor(r / t) - (r - k) + 1`` relevant records (``r`` found in all, ``k`` in the
window). The chance of finding ``k`` or fewer in ``n`` draws from such an urn is the
hypergeometric CDF; when the smallest p over the windows is below ``1 - confidence``,
the null is rejected and screening can stop. For a fixed ``k`` the p-value falls as the
window grows, so only the largest window for each ``k`` (ending just after a relevant
record, or covering everything) needs testing: the minimum is exact.

Its assumption is the one to keep in mind: the window is treated as a random sample,
but the model ranked it, so the records left are if anything *less* likely relevant
than the window's; the test is conservative under that ranking. It is not conservative
when the reviewer's decisions are wrong, or when the model systematically misses a
kind of relevant record that looks unlike the ones found (recall of a "hidden" subtype).

**Knee method** (Cormack & Grossman 2016, "Engineering quality and reliability in
technology-assisted review", SIGIR, doi:10.1145/2911451.2911510): the gain curve's knee
is the point farthest from the line from the origin to the current point; stop when the
slope before the knee is at least ``156 - min(relevant, 150)`` times the slope after it,
and at least 150 records were screened. A heuristic, without a stated confidence.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import gammaln

DEFAULT_RECALL = 0.95
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True, slots=True)
class Estimate:
    """What the stopping rules say after ``screened`` of ``total`` records."""

    screened: int
    total: int
    relevant: int
    recall_target: float
    confidence: float
    p_value: float
    can_stop: bool
    more_to_screen: int
    """The records still to screen (if none of them is relevant) before the test rejects
    the null; 0 when it can stop now; ``total - screened`` when even all would not do."""
    knee_can_stop: bool
    knee_at: int | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def line(self) -> str:
        """One line for the status bar and ``screen status``."""
        goal = f"{self.recall_target:.0%} recall at {self.confidence:.0%} confidence"
        if self.can_stop:
            test = f"can stop ({goal}; p={self.p_value:.3f})"
        elif self.more_to_screen >= self.total - self.screened:
            test = f"cannot stop yet ({goal}): screen the rest"
        else:
            test = f"screen {self.more_to_screen:,} more for {goal}"
        knee = "knee: stop" if self.knee_can_stop else "knee: go on"
        return f"{test}; {knee}"


def p_value(labels: Sequence[int] | np.ndarray, total: int, recall_target: float) -> float:
    """The smallest p-value over the windows (1.0 before anything is screened)."""
    seq = np.asarray(labels, dtype=np.int64)
    seen = len(seq)
    if seen == 0:
        return 1.0
    r = int(seq.sum())
    reversed_cum = np.cumsum(seq[::-1])  # relevant among the last n, n = 1..seen
    # the largest window for each k: just before the (k+1)-th relevant from the end, or all
    ends = [int(n) for n in np.flatnonzero(seq[::-1])]  # n where the next one is relevant
    windows = sorted({*(e for e in ends if e > 0), seen})
    n = np.asarray(windows, dtype=np.int64)
    k = reversed_cum[n - 1]
    urn = total - seen + n
    target_total = math.floor(r / recall_target) + 1
    big_k = target_total - (r - k)
    return float(
        min(
            _hypergeom_cdf(int(a), int(b), int(c), int(d))
            for a, b, c, d in zip(k, urn, big_k, n, strict=True)
        )
    )


def _hypergeom_cdf(k: int, m: int, big_k: int, n: int) -> float:
    """P(X <= k) for X the relevant among ``n`` drawn from ``m`` holding ``big_k``."""
    if big_k > m:
        return 0.0  # the null asks for more relevant records than there are: impossible
    low = max(0, n - (m - big_k))
    if k < low:
        return 0.0
    i = np.arange(low, min(k, big_k, n) + 1)
    log_pmf = _log_comb(big_k, i) + _log_comb(m - big_k, n - i) - _log_comb(m, n)
    return float(min(1.0, np.exp(log_pmf).sum()))


def _log_comb(a: int | np.ndarray, b: int | np.ndarray) -> np.ndarray:
    out: np.ndarray = (
        gammaln(np.asarray(a) + 1)
        - gammaln(np.asarray(b) + 1)
        - gammaln(np.asarray(a) - np.asarray(b) + 1)
    )
    return out


def more_to_screen(
    labels: Sequence[int] | np.ndarray, total: int, recall_target: float, confidence: float
) -> int:
    """The fewest further records (all irrelevant) after which the test can stop."""
    seq = np.asarray(labels, dtype=np.int64)
    alpha = 1.0 - confidence
    left = total - len(seq)
    if p_value(seq, total, recall_target) < alpha:
        return 0
    if (
        left <= 0
        or p_value(np.concatenate([seq, np.zeros(left, np.int64)]), total, recall_target) >= alpha
    ):
        return max(left, 0)
    lo, hi = 0, left  # p(lo) >= alpha > p(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if p_value(np.concatenate([seq, np.zeros(mid, np.int64)]), total, recall_target) < alpha:
            hi = mid
        else:
            lo = mid
    return hi


def knee(labels: Sequence[int] | np.ndarray) -> tuple[bool, int | None]:
    """(whether the knee method stops, the knee's rank)."""
    seq = np.asarray(labels, dtype=np.int64)
    s = len(seq)
    if s == 0:
        return False, None
    gain = np.cumsum(seq)
    rel = int(gain[-1])
    if rel == 0:
        return False, None
    x = np.arange(1, s + 1, dtype=np.float64)
    # distance from the line through (0, 0) and (s, rel), up to a constant factor
    distance = np.abs(rel * x - s * gain.astype(np.float64))
    i = int(np.argmax(distance))
    at = i + 1
    if at >= s:
        return False, at
    slope_before = gain[i] / at
    slope_after = (rel - gain[i] + 1) / (s - at)
    ratio = slope_before / slope_after
    return bool(s >= 150 and ratio >= 156 - min(rel, 150)), at


def estimate(
    labels: Sequence[int] | np.ndarray,
    total: int,
    *,
    recall_target: float = DEFAULT_RECALL,
    confidence: float = DEFAULT_CONFIDENCE,
) -> Estimate:
    """Both rules for ``labels`` (1 relevant, 0 not, in the order screened) of ``total``."""
    seq = np.asarray(labels, dtype=np.int64)
    p = p_value(seq, total, recall_target)
    more = more_to_screen(seq, total, recall_target, confidence)
    knee_stop, knee_at = knee(seq)
    return Estimate(
        screened=len(seq),
        total=total,
        relevant=int(seq.sum()),
        recall_target=recall_target,
        confidence=confidence,
        p_value=p,
        can_stop=p < 1.0 - confidence,
        more_to_screen=more,
        knee_can_stop=knee_stop,
        knee_at=knee_at,
    )
