"""A writer's uncommitted id -> slot changes behave as a dict where the latest change
wins, whatever the order and size of the batches they come in."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from medsearch.index.vectors.pending_slots import ABSENT, PendingSlots

batches = st.lists(
    st.tuples(
        st.lists(st.integers(0, 60), min_size=0, max_size=40),  # ids, repeats allowed
        st.booleans(),  # a removal (slot -1) instead of new slots
    ),
    max_size=25,
)


@settings(max_examples=200, deadline=None)
@given(batches)
def test_changes_read_back_as_a_dict_of_the_latest_change(changes: list) -> None:
    pending, model = PendingSlots(), {}
    next_slot = 0
    for ids, removal in changes:
        if removal:
            pending.set(np.array(ids, dtype=np.int64), -1)
            model.update(dict.fromkeys(ids, -1))
        else:
            slots = np.arange(next_slot, next_slot + len(ids))
            next_slot += len(ids)
            pending.set(np.array(ids, dtype=np.int64), slots)
            model.update(zip(ids, slots.tolist(), strict=True))
        probe = np.arange(-1, 62)
        assert pending.get(probe).tolist() == [model.get(i, ABSENT) for i in probe.tolist()]
    assert bool(pending) == bool(model)
    ids, slots = pending.items()
    assert ids.tolist() == sorted(model)
    assert slots.tolist() == [model[i] for i in sorted(model)]


def test_runs_stay_logarithmic_in_the_number_of_batches() -> None:
    pending = PendingSlots()
    for b in range(1024):
        pending.set(np.arange(b * 100, b * 100 + 100), np.arange(100))
    assert len(pending._runs) <= 11  # binary counter: one run per set bit of 1024
    assert pending.nbytes() == 1024 * 100 * 16
