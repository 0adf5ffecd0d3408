"""Device choice and batching: pure logic, tested without a GPU.

The back-off tests use a plain function that raises an out-of-memory error above a
size threshold: that is the behaviour of a device, reproduced, not a mock of our code.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsearch.errors import ModelError
from medsearch.models.batching import (
    is_out_of_memory,
    plan_batches,
    restore_order,
    run_with_backoff,
)
from medsearch.models.device import (
    MAX_CPU_THREADS,
    DeviceSupport,
    cpu_threads,
    dtype_for,
    pick_device,
    resolve_device,
)

# --- device ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cuda", "mps", "expected"),
    [(True, True, "cuda"), (True, False, "cuda"), (False, True, "mps"), (False, False, "cpu")],
)
def test_auto_prefers_cuda_then_mps_then_cpu(cuda: bool, mps: bool, expected: str) -> None:
    assert resolve_device("auto", cuda_available=cuda, mps_available=mps) == expected


def test_explicit_devices_are_kept_when_present() -> None:
    assert resolve_device("cpu", cuda_available=True, mps_available=True) == "cpu"
    assert resolve_device("CUDA", cuda_available=True, mps_available=False) == "cuda"
    assert resolve_device("cuda:1", cuda_available=True, mps_available=False) == "cuda:1"
    assert resolve_device("mps", cuda_available=False, mps_available=True) == "mps"


def test_an_absent_accelerator_is_an_error_not_a_silent_cpu_fallback() -> None:
    with pytest.raises(ModelError, match="CUDA is not available"):
        resolve_device("cuda", cuda_available=False, mps_available=True)
    with pytest.raises(ModelError, match="Metal"):
        resolve_device("mps", cuda_available=True, mps_available=False)


def test_unknown_device_names_the_choices() -> None:
    with pytest.raises(ModelError, match="auto, cpu, cuda, mps"):
        resolve_device("tpu", cuda_available=False, mps_available=False)


def test_half_precision_on_gpus_full_precision_on_cpu() -> None:
    assert dtype_for("cuda", bf16_supported=True) == "bfloat16"
    assert dtype_for("cuda:0", bf16_supported=False) == "float16"
    assert dtype_for("mps", bf16_supported=False) == "float16"
    assert dtype_for("cpu", bf16_supported=True) == "float32"


def test_cpu_threads_use_small_machines_fully_and_leave_a_core_on_big_ones() -> None:
    assert cpu_threads(None) == cpu_threads(0) == 1  # unknown: one thread is safe
    assert [cpu_threads(n) for n in (1, 2)] == [1, 2]  # every core of a small machine
    counts = [cpu_threads(n) for n in range(3, 257)]
    assert all(1 <= t < n for n, t in zip(range(3, 257), counts, strict=True))
    assert counts == sorted(counts)  # more cores never mean fewer threads
    assert cpu_threads(256) == MAX_CPU_THREADS < 256 - 1  # a bound past which it stops


def test_pick_device_on_this_machine_is_the_cpu() -> None:
    """This project's machines have no accelerator; `auto` must land on the CPU here."""
    support = DeviceSupport(cuda_available=False, mps_available=False, bf16_supported=False)
    assert pick_device("auto", support) == "cpu"


# --- length-sorted batching ------------------------------------------------------------


def test_batches_group_similar_lengths_longest_first_within_the_token_budget() -> None:
    lengths = [5, 500, 7, 480, 6, 490]
    batches = plan_batches(lengths, max_tokens_per_batch=1000, max_batch=8)
    # 500+490 padded to 2x500 fits; a third long text would not; 480 pads 7 to 960.
    assert batches == [[1, 5], [3, 2], [4, 0]]


def test_max_batch_caps_short_texts() -> None:
    assert plan_batches([3] * 5, max_tokens_per_batch=10_000, max_batch=2) == [[0, 1], [2, 3], [4]]


def test_an_item_longer_than_the_budget_still_gets_a_batch() -> None:
    assert plan_batches([50, 2000], max_tokens_per_batch=100, max_batch=4) == [[1], [0]]


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=600), max_size=60),
    budget=st.integers(min_value=1, max_value=4000),
    max_batch=st.integers(min_value=1, max_value=16),
)
def test_every_item_is_planned_once_within_limits(
    lengths: list[int], budget: int, max_batch: int
) -> None:
    batches = plan_batches(lengths, budget, max_batch)
    planned = [i for batch in batches for i in batch]
    assert sorted(planned) == list(range(len(lengths)))
    for batch in batches:
        assert 1 <= len(batch) <= max_batch
        padded = len(batch) * max(max(1, lengths[i]) for i in batch)
        assert len(batch) == 1 or padded <= budget


def test_restore_order_puts_rows_back_where_they_came_from() -> None:
    values = np.arange(6, dtype=np.float32).reshape(6, 1) * 10
    batches = plan_batches([1, 9, 2, 8, 3, 7], max_tokens_per_batch=16, max_batch=2)
    outputs = [values[np.asarray(b)] for b in batches]
    np.testing.assert_array_equal(restore_order(batches, outputs), values)


# --- out-of-memory back-off ------------------------------------------------------------


class OutOfMemoryError(RuntimeError):
    """Named like torch.cuda.OutOfMemoryError, which is recognised by its name."""


def device_with_room_for(limit: int, calls: list[int]) -> Callable[[Sequence[int]], np.ndarray]:
    """A forward pass that fails like a GPU when given more than ``limit`` items."""

    def forward(chunk: Sequence[int]) -> np.ndarray:
        calls.append(len(chunk))
        if len(chunk) > limit:
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return np.asarray(chunk, dtype=np.float32).reshape(-1, 1)

    return forward


def test_out_of_memory_halves_the_batch_and_keeps_every_row_in_order() -> None:
    calls: list[int] = []
    freed: list[int] = []
    batch = list(range(20))
    result = run_with_backoff(device_with_room_for(5, calls), batch, 16, on_oom=freed.append)
    np.testing.assert_array_equal(result.output[:, 0], np.arange(20))
    assert result.batch_size == 4
    assert freed == [8, 4]
    assert calls[:3] == [16, 8, 4] and set(calls[3:]) == {4}


def test_a_single_text_that_does_not_fit_is_a_model_error() -> None:
    with pytest.raises(ModelError, match="out of memory even for a single text"):
        run_with_backoff(device_with_room_for(0, []), [0, 1, 2], 4)


def test_other_errors_are_not_mistaken_for_out_of_memory() -> None:
    def broken(chunk: Sequence[int]) -> np.ndarray:
        raise ValueError("shape mismatch")

    with pytest.raises(ValueError, match="shape mismatch"):
        run_with_backoff(broken, [0, 1], 2)


def test_out_of_memory_is_recognised_by_type_name_or_message() -> None:
    assert is_out_of_memory(OutOfMemoryError("boom"))
    assert is_out_of_memory(RuntimeError("MPS backend out of memory (MPS allocated: 1 GB)"))
    assert is_out_of_memory(MemoryError())
    assert not is_out_of_memory(RuntimeError("expected scalar type Float"))
    assert not is_out_of_memory(ValueError("out of memory"))


def test_a_short_query_runs_on_one_thread_and_bulk_work_on_all() -> None:
    from medsearch.models.device import INTERACTIVE_TOKENS, threads_for

    assert threads_for(12, configured=2) == 1
    assert threads_for(INTERACTIVE_TOKENS, configured=8) == 1
    assert threads_for(INTERACTIVE_TOKENS + 1, configured=8) == 8
    assert threads_for(10_000, configured=0) == 1


# --- every GPU ---------------------------------------------------------------------------


def gpus(n: int) -> DeviceSupport:
    return DeviceSupport(
        cuda_available=n > 0, mps_available=False, bf16_supported=n > 0, cuda_devices=n
    )


def test_cuda_means_one_encoder_per_visible_gpu() -> None:
    from medsearch.models.device import resolve_devices

    assert resolve_devices("cuda", gpus(4)) == ("cuda:0", "cuda:1", "cuda:2", "cuda:3")
    assert resolve_devices("auto", gpus(2)) == ("cuda:0", "cuda:1")
    assert resolve_devices("cuda", gpus(1)) == ("cuda",)
    assert resolve_devices("cuda:1", gpus(2)) == ("cuda:1",)
    assert resolve_devices("auto", gpus(0)) == ("cpu",)


def test_a_list_of_gpus_chooses_them_and_an_absent_one_is_named() -> None:
    from medsearch.models.device import resolve_devices

    assert resolve_devices("cuda:0,2", gpus(4)) == ("cuda:0", "cuda:2")
    assert resolve_devices("cuda:1,1,0", gpus(2)) == ("cuda:1", "cuda:0")
    with pytest.raises(ModelError, match=r"2 visible GPU\(s\) \(cuda:0 to cuda:1\)"):
        resolve_devices("cuda:0,3", gpus(2))
    with pytest.raises(ModelError, match="CUDA is not available"):
        resolve_devices("cuda:0,1", gpus(0))
    # Single-device callers (search) take the first of a list.
    assert pick_device("cuda:1,0", gpus(2)) == "cuda:1"
