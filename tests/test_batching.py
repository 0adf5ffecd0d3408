"""Token-budget batch planning: big batches of short texts, shapes padded to a multiple,
every row back in the caller's order, and padding done on the host without a row loop."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsearch.models.backbone import in_order_on_host
from medsearch.models.batching import (
    TokenBudget,
    budget_for,
    plan_with_budget,
    restore_order,
)
from medsearch.models.host_text import pad_rows

lengths_st = st.lists(st.integers(min_value=0, max_value=600), max_size=80)
budget_st = st.builds(
    TokenBudget,
    tokens=st.integers(min_value=1, max_value=8000),
    rows=st.integers(min_value=1, max_value=64),
    multiple=st.sampled_from([1, 8, 32, 64]),
)


@given(lengths=lengths_st, budget=budget_st)
def test_every_batch_respects_the_budget_at_its_padded_length(
    lengths: list[int], budget: TokenBudget
) -> None:
    batches = plan_with_budget(lengths, budget)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for batch in batches:
        width = budget.padded(max(lengths[i] for i in batch))
        assert width % budget.multiple == 0
        assert 1 <= len(batch) <= budget.rows
        assert len(batch) == 1 or len(batch) * width <= budget.tokens


@given(lengths=lengths_st.filter(bool), budget=budget_st)
def test_rows_come_back_in_the_callers_order(lengths: list[int], budget: TokenBudget) -> None:
    batches = plan_with_budget(lengths, budget)
    # Each "model output" row is the item's own length: order restored means equal.
    outputs = [np.array([[lengths[i]] for i in b], dtype=np.int64) for b in batches]
    np.testing.assert_array_equal(restore_order(batches, outputs)[:, 0], lengths)


def test_a_gpu_puts_thousands_of_sentences_in_one_batch_and_a_cpu_does_not() -> None:
    gpu = budget_for("cuda:0", batch_size=64, max_length=64)
    cpu = budget_for("cpu", batch_size=16, max_length=64)
    sentences = [30] * 10_000  # ~30 tokens
    on_gpu = plan_with_budget(sentences, gpu)[0]
    on_cpu = plan_with_budget(sentences, cpu)[0]
    assert len(on_gpu) >= 1_000 and len(on_cpu) < 100
    # the GPU pads to a multiple, so batch shapes repeat; every batch keeps its budget
    assert gpu.multiple > 1 and gpu.padded(30) % gpu.multiple == 0 and gpu.padded(30) >= 30
    assert len(on_gpu) <= gpu.rows and len(on_gpu) * gpu.padded(30) <= gpu.tokens
    articles = plan_with_budget([330] * 1_000, gpu)[0]
    assert len(articles) * gpu.padded(330) <= gpu.tokens
    assert len(articles) > len(plan_with_budget([330] * 1_000, cpu)[0])


def test_a_cpu_batch_is_the_callers_batch_size_at_full_length_and_more_when_short() -> None:
    """CPU and MPS pad to the longest text only, take ``batch_size`` texts of the
    longest length, and a few times as many short ones (never unboundedly many)."""
    for device in ("cpu", "mps"):
        budget = budget_for(device, batch_size=16, max_length=512)
        assert budget.multiple == 1
        assert len(plan_with_budget([512] * 100, budget)[0]) == 16
        short = len(plan_with_budget([8] * 1_000, budget)[0])
        assert 16 < short <= 4 * 16
    assert budget_for("mps", batch_size=16, max_length=512) == budget_for(
        "cpu", batch_size=16, max_length=512
    )


def test_a_gpu_budget_is_never_smaller_than_the_cpu_one() -> None:
    for batch_size, max_length in ((16, 64), (64, 512), (4_096, 512)):
        cpu = budget_for("cpu", batch_size=batch_size, max_length=max_length)
        gpu = budget_for("cuda", batch_size=batch_size, max_length=max_length)
        assert gpu.tokens >= cpu.tokens and gpu.rows >= cpu.rows


def test_a_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBudget(tokens=0, rows=1)
    assert [TokenBudget(1, 1, 32).padded(n) for n in (0, 1, 32, 33)] == [32, 32, 32, 64]


@given(
    rows=st.lists(st.lists(st.integers(0, 999), min_size=1, max_size=40), min_size=1, max_size=20),
    multiple=st.sampled_from([1, 8, 32]),
)
def test_padding_on_the_host_matches_a_row_by_row_reference(
    rows: list[list[int]], multiple: int
) -> None:
    features = {"input_ids": rows, "token_type_ids": [[1] * len(r) for r in rows]}
    picked = list(range(len(rows)))[::-1]
    batch = pad_rows(features, picked, pad_id=7, multiple=multiple)
    width = batch.arrays["input_ids"].shape[1]
    assert width % multiple == 0 and width >= max(len(r) for r in rows)
    for out, index in enumerate(picked):
        n = len(rows[index])
        expected = rows[index] + [7] * (width - n)
        assert batch.arrays["input_ids"][out].tolist() == expected
        assert batch.arrays["attention_mask"][out].tolist() == [1] * n + [0] * (width - n)
        assert batch.arrays["token_type_ids"][out].tolist() == [1] * n + [0] * (width - n)
    assert batch.tokens == sum(len(r) for r in rows)
    assert batch.rows.tolist() == picked


def test_rows_ordered_on_the_device_come_back_as_the_host_orders_them() -> None:
    """The GPU path orders a chunk's vectors where they were made, then copies once."""
    import torch

    rng = np.random.default_rng(7)
    values = rng.normal(size=(500, 12)).astype(np.float32)
    planned = np.array_split(rng.permutation(500), 9)  # rows in batch order
    outputs = [torch.from_numpy(values[rows]) for rows in planned]
    ordered = in_order_on_host(planned, outputs)
    np.testing.assert_array_equal(ordered, values)
    host = restore_order([r.tolist() for r in planned], [o.numpy() for o in outputs])
    np.testing.assert_array_equal(ordered, host)


def test_short_of_device_memory_the_rows_are_ordered_on_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch

    def no_memory(*args: object, **kwargs: object) -> torch.Tensor:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 215.00 MiB")

    values = np.arange(40, dtype=np.float32).reshape(20, 2)
    planned = [np.arange(10, 20), np.arange(0, 10)]
    outputs = [torch.from_numpy(values[rows]) for rows in planned]
    monkeypatch.setattr(torch, "empty", no_memory)
    np.testing.assert_array_equal(in_order_on_host(planned, outputs), values)


@pytest.mark.gpu
def test_on_a_gpu_rows_are_ordered_on_the_device() -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    rng = np.random.default_rng(8)
    values = rng.normal(size=(70_000, 64)).astype(np.float32)
    planned = np.array_split(rng.permutation(70_000), 20)
    outputs = [torch.from_numpy(values[rows]).to("cuda:0") for rows in planned]
    np.testing.assert_array_equal(in_order_on_host(planned, outputs), values)
