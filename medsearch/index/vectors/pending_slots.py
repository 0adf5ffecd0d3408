"""A writer's uncommitted id -> slot changes, in arrays rather than a Python dict.

Between two commits a vector collection's writer must answer "which slot holds id X"
for ids it has just added or removed. A dict did that at ~100 bytes per entry and one
Python call per id; at PubMed scale a commit can be minutes of GPU encoding apart
(commits are spaced by their own cost), i.e. tens of millions of sentences: gigabytes
of dict and a Python loop over every id of every batch. Here the changes are sorted
runs of (id, slot) int64 pairs, 16 bytes an entry, merged like a binary counter (a new
run merges into the previous one while that one is no larger), so there are at most
~log2(changes / batch) runs, a lookup is one ``searchsorted`` per run, and each entry is
re-merged ~log2 times over a session. Later changes win over earlier ones; slot -1
records a removal.
"""

from __future__ import annotations

import numpy as np

ABSENT = -2  # get(): the id has no uncommitted change (-1 is a removal)


def _latest(ids: np.ndarray, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted by id, one entry per id: the last one given (ids in change order)."""
    order = np.argsort(ids, kind="stable")
    ids, slots = ids[order], slots[order]
    last = np.ones(len(ids), dtype=bool)
    last[:-1] = ids[1:] != ids[:-1]
    return ids[last], slots[last]


class PendingSlots:
    """Uncommitted id -> slot changes (-1: removed); the latest change of an id wins."""

    def __init__(self) -> None:
        self._runs: list[tuple[np.ndarray, np.ndarray]] = []  # oldest first

    def __bool__(self) -> bool:
        return bool(self._runs)

    def set(self, ids: np.ndarray, slots: np.ndarray | int) -> None:
        """Record that ``ids`` now live at ``slots`` (a scalar applies to all: -1 removes)."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        if not len(ids):
            return
        slot_arr = np.broadcast_to(np.asarray(slots, dtype=np.int64), ids.shape)
        run = _latest(ids, np.array(slot_arr, dtype=np.int64))
        while self._runs and len(self._runs[-1][0]) <= len(run[0]):
            old_ids, old_slots = self._runs.pop()
            run = _latest(np.concatenate([old_ids, run[0]]), np.concatenate([old_slots, run[1]]))
        self._runs.append(run)

    def get(self, ids: np.ndarray) -> np.ndarray:
        """Each id's uncommitted slot: -1 if removed, :data:`ABSENT` if unchanged."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        out = np.full(len(ids), ABSENT, dtype=np.int64)
        for run_ids, run_slots in self._runs:  # oldest first: newer runs overwrite
            pos = np.minimum(np.searchsorted(run_ids, ids), len(run_ids) - 1)
            hit = run_ids[pos] == ids
            out[hit] = run_slots[pos[hit]]
        return out

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """Every changed id (sorted, distinct) and its latest slot."""
        if not self._runs:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty.copy()
        if len(self._runs) > 1:
            ids = np.concatenate([r[0] for r in self._runs])
            slots = np.concatenate([r[1] for r in self._runs])
            self._runs = [_latest(ids, slots)]
        return self._runs[0]

    def nbytes(self) -> int:
        return sum(r[0].nbytes + r[1].nbytes for r in self._runs)
