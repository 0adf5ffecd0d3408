"""The ranking models: what record is most likely relevant, given the decisions so far.

Each model is fitted on the labelled rows of a feature matrix and scores every row;
the record shown next is the unscreened one with the highest score ("maximum"
query strategy, as ASReview's default). Linear models on TF-IDF are here:

- ``nb``: multinomial naive Bayes (ASReview 1.x's default, alpha 3.822) with its
  "double balance" of the two classes approximated by class-prior correction;
- ``logistic``: L2-regularised logistic regression with balanced class weights,
  fitted by L-BFGS from the previous fit (warm start), the default here;
- ``svm``: a linear SVM (squared hinge, balanced) in the spirit of ASReview 2's default;
- ``elas``: that SVM with ASReview 2's ``elas_u4`` settings (C 0.11, its ratio-9.8
  balance), measured equal to ``logistic`` (docs/screening.md).

docs/screening.md has the measurements that chose the default.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

MODELS = ("ridge", "logistic", "nb", "svm", "elas")
ELAS_C = 0.11
ELAS_RATIO = 9.8
"""ASReview 2's ``elas_u4``: ``LinearSVC(loss="squared_hinge", C=0.11)`` with its
"balanced" sample weights at ``ratio=9.8`` (relevant 1, irrelevant ``n_pos / (9.8 n_neg)``,
scaled to sum to n), as in ``asreview/models/models.py`` of ASReview 2.2."""
DEFAULT_MODEL = "logistic"


@dataclass
class Fitted:
    """A fitted linear scorer: ``score = X @ coef + intercept``."""

    coef: np.ndarray
    intercept: float

    def scores(self, matrix: sp.csr_matrix) -> np.ndarray:
        return np.asarray(matrix @ self.coef).ravel() + self.intercept


def fit(
    kind: str,
    matrix: sp.csr_matrix,
    rows: np.ndarray,
    labels: np.ndarray,
    *,
    previous: Fitted | None = None,
    c: float = 1.0,
) -> Fitted:
    """The ``kind`` model fitted on ``matrix[rows]`` with 0/1 ``labels``."""
    x = matrix[rows]
    y = labels.astype(np.float64)
    if kind == "nb":
        return _naive_bayes(x, y)
    if kind == "ridge":
        return _ridge(x, y, alpha=1.0 / c)
    if kind == "logistic":
        return _logistic_newton(x, y, alpha=1.0 / c)
    if kind not in ("logistic", "svm", "elas"):
        raise ValueError(f"unknown model {kind!r}")
    n_pos = max(float(y.sum()), 1.0)
    n_neg = max(float(len(y) - y.sum()), 1.0)
    weights = np.where(y > 0, len(y) / (2 * n_pos), len(y) / (2 * n_neg))
    if kind == "elas":
        weights = np.where(y > 0, 1.0, n_pos / (ELAS_RATIO * n_neg))
        weights = weights * (len(y) / weights.sum())
        c = ELAS_C
    signs = 2 * y - 1
    loss = _logistic if kind == "logistic" else _squared_hinge
    start = np.zeros(x.shape[1] + 1)
    if previous is not None and previous.coef.shape[0] == x.shape[1]:
        start[:-1] = previous.coef
        start[-1] = previous.intercept
    result = minimize(
        loss(x, signs, weights, 1.0 / c),
        start,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 100},
    )
    w = np.asarray(result.x)
    return Fitted(w[:-1], float(w[-1]))


Loss = Callable[[np.ndarray], tuple[float, np.ndarray]]


def _logistic(x: sp.csr_matrix, s: np.ndarray, weights: np.ndarray, alpha: float) -> Loss:
    def f(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = s * (x @ w[:-1] + w[-1])
        loss = weights * np.logaddexp(0, -z)
        p = -weights * s * _sigmoid(-z)
        grad = np.empty_like(w)
        grad[:-1] = x.T @ p + alpha * w[:-1]
        grad[-1] = p.sum()
        return float(loss.sum() + 0.5 * alpha * w[:-1] @ w[:-1]), grad

    return f


def _squared_hinge(x: sp.csr_matrix, s: np.ndarray, weights: np.ndarray, alpha: float) -> Loss:
    def f(w: np.ndarray) -> tuple[float, np.ndarray]:
        margin = np.maximum(0.0, 1.0 - s * (x @ w[:-1] + w[-1]))
        loss = weights * margin**2
        p = -2 * weights * s * margin
        grad = np.empty_like(w)
        grad[:-1] = x.T @ p + alpha * w[:-1]
        grad[-1] = p.sum()
        return float(loss.sum() + 0.5 * alpha * w[:-1] @ w[:-1]), grad

    return f


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out: np.ndarray = 0.5 * (1.0 + np.tanh(0.5 * z))
    return out


def _logistic_newton(x: sp.csr_matrix, y: np.ndarray, alpha: float) -> Fitted:
    """Class-balanced L2 logistic regression, fitted exactly by Newton's method in the
    span of the labelled rows. The penalty is on the weights alone, so the optimum lies in
    that span (the representer theorem): with ``X X^T = U S U^T``, the rows are ``Z = U
    S^1/2`` in at most n dimensions, Newton runs there (n-by-n solves, a few ms for
    hundreds of labels) and ``w = X^T U S^-1/2 v`` maps back. L-BFGS over 10^4-10^5 word
    weights took 50-100 times longer on a shared 2-core machine."""
    n = len(y)
    n_pos = max(float(y.sum()), 1.0)
    n_neg = max(float(n - y.sum()), 1.0)
    weights = np.where(y > 0, n / (2 * n_pos), n / (2 * n_neg))
    t = 2 * y - 1
    gram = np.asarray((x @ x.T).todense(), dtype=np.float64)
    s, u = np.linalg.eigh(gram)
    keep = s > 1e-9 * max(float(s.max()), 1e-12)
    s, u = s[keep], u[:, keep]
    z = np.hstack([u * np.sqrt(s), np.ones((n, 1))])
    reg = np.full(z.shape[1], alpha)
    reg[-1] = 1e-8  # the intercept is not penalised
    v = np.zeros(z.shape[1])
    for _ in range(30):
        margin = t * (z @ v)
        p = -weights * t * _sigmoid(-margin)
        grad = z.T @ p + reg * v
        curvature = weights * _sigmoid(margin) * _sigmoid(-margin)
        hessian = (z.T * curvature) @ z + np.diag(reg)
        step = np.linalg.solve(hessian, grad)
        v -= step
        if float(np.abs(step).max()) < 1e-6:
            break
    coef = np.asarray(x.T @ (u @ (v[:-1] / np.sqrt(s)))).ravel()
    return Fitted(coef, float(v[-1]))


def _ridge(x: sp.csr_matrix, y: np.ndarray, alpha: float) -> Fitted:
    """Class-balanced ridge regression on -1/+1 targets, solved in the dual: the labelled
    rows are few (hundreds to a few thousand) and the features many, so the n-by-n
    Gram matrix is the cheap side. ``w = X^T (X X^T + alpha W^-1)^-1 (t - b)``."""
    n = len(y)
    n_pos = max(float(y.sum()), 1.0)
    n_neg = max(float(n - y.sum()), 1.0)
    weights = np.where(y > 0, n / (2 * n_pos), n / (2 * n_neg))
    target = 2 * y - 1
    intercept = float((weights * target).sum() / weights.sum())
    gram = np.asarray((x @ x.T).todense(), dtype=np.float64)
    gram[np.diag_indices(n)] += alpha / weights
    dual = np.linalg.solve(gram, target - intercept)
    coef = np.asarray(x.T @ dual).ravel()
    return Fitted(coef, intercept)


def _naive_bayes(x: sp.csr_matrix, y: np.ndarray, alpha: float = 3.822) -> Fitted:
    pos = np.asarray(x[y > 0].sum(axis=0)).ravel() + alpha
    neg = np.asarray(x[y == 0].sum(axis=0)).ravel() + alpha
    coef = np.log(pos / pos.sum()) - np.log(neg / neg.sum())
    return Fitted(coef, 0.0)  # balanced: equal class priors


def ranking(scores: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """Unseen rows, best first (ties in the order given: the strategy's ranking)."""
    unseen = np.flatnonzero(~seen)
    return unseen[np.argsort(-scores[unseen], kind="stable")]
