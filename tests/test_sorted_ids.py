"""Sorted id sets: the distinct values and membership every restricted dense search uses."""

from __future__ import annotations

import numpy as np

from medsearch.index.sorted_ids import member, unique, without


def test_unique_is_numpys_unique_for_repeats_order_and_edge_sizes() -> None:
    rng = np.random.default_rng(0)
    for values in (
        np.zeros(0, dtype=np.int64),
        np.array([7]),
        np.array([5, 5]),
        rng.integers(0, 50, 1_000),
    ):
        assert unique(values).tolist() == np.unique(values).tolist()


def test_member_and_without_agree_with_isin() -> None:
    rng = np.random.default_rng(1)
    values = rng.integers(0, 100, 300)
    chosen = unique(rng.integers(0, 100, 40))
    assert member(values, chosen).tolist() == np.isin(values, chosen).tolist()
    assert without(values, chosen).tolist() == values[~np.isin(values, chosen)].tolist()
    assert without(values, None) is values
