"""The next record to show, from a model refitted in a background thread.

The reviewer never waits for a fit: :meth:`Ranker.next` reads the latest scores (or,
before the first fit, the strategy's own order) and picks the best unscreened record, a
masked argmax over a NumPy array (well under a millisecond for 100,000 records).
:meth:`Ranker.learn` hands the decisions to the worker thread and returns at once; the
worker builds the TF-IDF features on its first run, then fits and swaps in new scores,
coalescing decisions that arrive while it fits. A fit needs one relevant and one
irrelevant record; before that the order is the strategy's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from medsearch.screening.features import tfidf
from medsearch.screening.model import DEFAULT_MODEL, Fitted, fit


class Ranker:
    """Ranks the records ``ids`` (given in the strategy's order) for one reviewer."""

    def __init__(
        self,
        ids: Sequence[int],
        texts: Callable[[], Sequence[str]],
        *,
        model: str = DEFAULT_MODEL,
    ) -> None:
        self.ids = np.asarray(ids, dtype=np.int64)
        self._position = {int(r): i for i, r in enumerate(self.ids)}
        self._texts = texts
        self.model = model
        self.seen = np.zeros(len(self.ids), dtype=bool)
        self._scores: np.ndarray | None = None
        self._matrix: sp.csr_matrix | None = None
        self._fitted: Fitted | None = None
        self._labels: dict[int, int] = {}
        self._lock = threading.Lock()
        self._dirty = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._closed = False
        self.fits = 0
        self.error: BaseException | None = None

    # -- the reviewer's side (fast) --------------------------------------------------------

    def mark(self, record_id: int, screened: bool = True) -> None:
        i = self._position.get(record_id)
        if i is not None:
            self.seen[i] = screened

    def next(self, skip: frozenset[int] = frozenset()) -> int | None:
        """The best unscreened record (None when every record is screened)."""
        scores = self._scores
        mask = self.seen
        if skip:
            mask = mask.copy()
            for r in skip:
                if (i := self._position.get(r)) is not None:
                    mask[i] = True
        if mask.all():
            return None
        if scores is None:
            return int(self.ids[int(np.argmin(mask))])  # the first unscreened, in order
        masked = np.where(mask, -np.inf, scores)
        return int(self.ids[int(np.argmax(masked))])

    @property
    def modelled(self) -> bool:
        """Whether the order now comes from a fitted model (not the strategy's)."""
        return self._scores is not None

    def learn(self, labels: Mapping[int, int]) -> None:
        """New decisions (record id -> 1 relevant / 0 not): refit in the background."""
        with self._lock:
            self._labels = dict(labels)
        if len(set(self._labels.values())) < 2:
            return
        self._idle.clear()
        self._dirty.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="screening-ranker", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker has nothing left to fit (tests and the CLI)."""
        return self._idle.wait(timeout)

    def close(self) -> None:
        self._closed = True
        self._dirty.set()

    # -- the worker ------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._closed:
            self._dirty.wait()
            if self._closed:
                break
            self._dirty.clear()
            try:
                self._fit_once()
            except Exception as exc:  # kept for the UI to report; the order stays as it was
                self.error = exc
            if not self._dirty.is_set():
                self._idle.set()

    def _fit_once(self) -> None:
        if self._matrix is None:
            self._matrix = tfidf(list(self._texts())).matrix
        with self._lock:
            labels = dict(self._labels)
        rows = np.asarray([self._position[r] for r in labels if r in self._position])
        values = np.asarray([labels[int(self.ids[i])] for i in rows], dtype=np.int64)
        if len(set(values.tolist())) < 2:
            return
        self._fitted = fit(self.model, self._matrix, rows, values, previous=self._fitted)
        self._scores = self._fitted.scores(self._matrix)
        self.fits += 1
