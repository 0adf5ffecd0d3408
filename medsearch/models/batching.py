"""Batching for transformer inference: length-sorted batches and out-of-memory back-off.

A batch costs (number of texts) x (longest text in it) tokens because everything is
padded to the longest. Sorting by length puts texts of similar length together, so a
batch of titles-only records is not padded to 512 tokens; the token budget then lets
short texts travel in bigger batches. Results go back in the caller's order.

Longest batches run first: if the device is going to run out of memory it does so in
the first seconds, where :func:`run_with_backoff` halves the batch and carries on,
rather than an hour into an ingest.

On a GPU the budget is large (DESIGN.md: 32K-token batches ran at half the speed of
128K-token ones, launch overhead dominating), so thousands of short sentences travel
together; lengths are padded up to a multiple (:attr:`TokenBudget.multiple`) so a
compiled model or a fused attention kernel sees few distinct shapes. On a CPU the budget
stays small: throughput flattens early and a smaller batch keeps latency and memory low.

Pure logic, no torch: tested with plain functions that pretend to run out of memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from medsearch.errors import ModelError

# GPU batches: 128K tokens measured ~2x faster than 32K on an H100 (DESIGN.md); the cap
# on rows keeps a batch of 30-token sentences at ~4K rows (activations ~ a few GB).
GPU_BATCH_TOKENS = 131_072
GPU_MAX_ROWS = 4_096
GPU_PAD_MULTIPLE = 32


class Cancelled(Exception):
    """Raised between batches when the caller's ``is_cancelled()`` says stop."""


@dataclass(frozen=True, slots=True)
class TokenBudget:
    """How big one forward pass may be.

    ``tokens`` bounds rows x padded length; ``rows`` bounds the rows whatever their
    length; padded lengths are rounded up to ``multiple`` (1: pad to the longest only).
    """

    tokens: int
    rows: int
    multiple: int = 1

    def __post_init__(self) -> None:
        if self.tokens < 1 or self.rows < 1 or self.multiple < 1:
            raise ValueError("a token budget needs positive tokens, rows and multiple")

    def padded(self, length: int) -> int:
        """``length`` rounded up to the multiple (at least 1)."""
        length = max(1, length)
        return -(-length // self.multiple) * self.multiple


def budget_for(device: str, *, batch_size: int, max_length: int) -> TokenBudget:
    """The default budget on ``device`` for texts of at most ``max_length`` tokens.

    CPU (and MPS): ``batch_size`` texts at the longest length, up to 4x as many short
    ones, padded only to the longest (no shape to repeat for). CUDA: a fixed
    token budget, never smaller than the CPU one, with lengths padded to a multiple of
    32 so shapes repeat.
    """
    small = TokenBudget(tokens=batch_size * max_length, rows=batch_size * 4)
    if not device.startswith("cuda"):
        return small
    return TokenBudget(
        tokens=max(GPU_BATCH_TOKENS, small.tokens),
        rows=max(GPU_MAX_ROWS, small.rows),
        multiple=GPU_PAD_MULTIPLE,
    )


def plan_batches(
    lengths: Sequence[int], max_tokens_per_batch: int, max_batch: int, *, multiple: int = 1
) -> list[list[int]]:
    """Group item indices into batches, longest items first.

    Each batch holds at most ``max_batch`` items and, padded to its longest item
    (rounded up to ``multiple``), at most ``max_tokens_per_batch`` tokens; an item
    longer than the whole budget still gets a batch of its own. Equal lengths keep
    their input order (stable sort), so the plan is deterministic.
    """
    if max_tokens_per_batch < 1 or max_batch < 1 or multiple < 1:
        raise ValueError("max_tokens_per_batch, max_batch and multiple must be positive")
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for index in order:
        length = -(-max(1, lengths[index]) // multiple) * multiple
        if current:
            padded = (len(current) + 1) * max(longest, length)
            if len(current) >= max_batch or padded > max_tokens_per_batch:
                batches.append(current)
                current, longest = [], 0
        current.append(index)
        longest = max(longest, length)
    if current:
        batches.append(current)
    return batches


def restore_order(batches: Sequence[Sequence[int]], outputs: Sequence[np.ndarray]) -> np.ndarray:
    """Put per-batch outputs (rows in batch order) back into input order."""
    total = sum(len(b) for b in batches)
    if total == 0:
        raise ValueError("no batches to restore")
    first = outputs[0]
    result = np.empty((total, *first.shape[1:]), dtype=first.dtype)
    for indices, rows in zip(batches, outputs, strict=True):
        result[np.asarray(indices, dtype=np.int64)] = rows
    return result


def is_out_of_memory(error: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocation failures, recognised without importing torch.

    ``torch.cuda.OutOfMemoryError`` subclasses RuntimeError; MPS and older CUDA
    builds raise a bare RuntimeError whose message says "out of memory".
    """
    if type(error).__name__ == "OutOfMemoryError" or isinstance(error, MemoryError):
        return True
    return isinstance(error, RuntimeError) and "out of memory" in str(error).lower()


@dataclass(frozen=True, slots=True)
class BackoffResult:
    """The rows for a batch, and the sub-batch size that finally fit in memory."""

    output: Any
    """The rows: a NumPy array, or whatever ``concat`` made of the chunks' results."""
    batch_size: int


def run_with_backoff(
    fn: Callable[[Sequence[int]], Any],
    batch: Sequence[int],
    initial_size: int,
    *,
    is_oom: Callable[[BaseException], bool] = is_out_of_memory,
    on_oom: Callable[[int], None] | None = None,
    concat: Callable[[Sequence[Any]], Any] | None = None,
) -> BackoffResult:
    """Run ``fn`` over ``batch`` in chunks, halving the chunk size on out-of-memory.

    ``fn`` gets a chunk of ``batch`` (item indices) and returns one row per item.
    Chunks that already succeeded are kept; only the failing chunk is retried smaller.
    ``on_oom(new_size)`` runs after each failure (the encoder frees the CUDA cache
    there). Only when a single item does not fit is it a :class:`ModelError`.
    ``concat`` joins the chunks' rows (default: ``np.concatenate``; the GPU path keeps
    device tensors).
    """
    if not batch:
        raise ValueError("run_with_backoff needs a non-empty batch")
    size = max(1, min(initial_size, len(batch)))
    outputs: list[np.ndarray] = []
    start = 0
    while start < len(batch):
        chunk = batch[start : start + size]
        try:
            rows = fn(chunk)
        except Exception as error:
            if not is_oom(error):
                raise
            if size == 1:
                raise ModelError(
                    "out of memory even for a single text; use a smaller max length,"
                    " --device cpu, or free memory on the device"
                ) from error
            size = max(1, size // 2)
            if on_oom is not None:
                on_oom(size)
            continue
        outputs.append(rows)
        start += len(chunk)
    joined = concat(outputs) if concat is not None else np.concatenate(outputs, axis=0)
    return BackoffResult(output=joined, batch_size=size)


def plan_with_budget(lengths: Sequence[int], budget: TokenBudget) -> list[list[int]]:
    """:func:`plan_batches` under a :class:`TokenBudget`."""
    return plan_batches(lengths, budget.tokens, budget.rows, multiple=budget.multiple)
