"""Texts to padded token batches on the host: no torch, so worker processes can do it.

The vector stage's readers tokenise and pad in processes of their own (the GIL would
otherwise serialise the Python parts of splitting and padding with the threads that
launch GPU kernels); :class:`HostTokenizer` is what such a process needs: the Rust
tokenizer as JSON, the inputs the model takes, its pad id, max length and token budget.
It prepares exactly what :meth:`medsearch.models.encoders.Encoder.prepare_sentences`
and ``prepare_articles`` prepare in the calling process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from medsearch.models.batching import TokenBudget, plan_with_budget

Features = dict[str, list[list[int]]]


def tokenize_fast(
    fast: Any,
    first: Sequence[str],
    second: Sequence[str] | None,
    max_length: int,
    names: tuple[str, ...],
) -> Features:
    """Token ids through the ``tokenizers`` batch API (pairs truncate longest-first)."""
    fast.enable_truncation(max_length, strategy="longest_first")
    inputs: list[Any] = list(first) if second is None else list(zip(first, second, strict=True))
    encodings = fast.encode_batch_fast(inputs, add_special_tokens=True)
    features: Features = {"input_ids": [e.ids for e in encodings]}
    if "token_type_ids" in names:
        features["token_type_ids"] = [e.type_ids for e in encodings]
    return features


@dataclass(frozen=True, slots=True)
class PaddedBatch:
    """One planned batch, padded on the host: ``rows`` says which inputs it holds."""

    rows: np.ndarray
    arrays: dict[str, np.ndarray]
    tokens: int


def pad_rows(
    features: Features, indices: Sequence[int], pad_id: int, *, multiple: int = 1
) -> PaddedBatch:
    """Right-pad the chosen rows to their longest (rounded up to ``multiple``).

    One slice copy per row: on SciFact this beat scattering a flat array through the
    mask (docs/benchmarks-history.md). In the vector stage it runs in a reader, off
    the device's critical path.
    """
    ids = features["input_ids"]
    lengths = np.fromiter((len(ids[i]) for i in indices), dtype=np.int64, count=len(indices))
    longest = int(lengths.max()) if len(indices) else 1
    width = -(-max(1, longest) // multiple) * multiple
    mask = np.arange(width)[None, :] < lengths[:, None]
    total = int(lengths.sum())
    arrays: dict[str, np.ndarray] = {}
    for name, rows in features.items():
        block = np.full((len(indices), width), pad_id if name == "input_ids" else 0, np.int64)
        for row, index in enumerate(indices):
            values = rows[index]
            block[row, : len(values)] = values
        arrays[name] = block
    arrays["attention_mask"] = mask.astype(np.int64)
    return PaddedBatch(np.asarray(indices, dtype=np.int64), arrays, total)


def plan_and_pad(features: Features, pad_id: int, budget: TokenBudget) -> list[PaddedBatch]:
    """Plan batches under ``budget`` and pad each."""
    lengths = [len(ids) for ids in features["input_ids"]]
    return [
        pad_rows(features, batch, pad_id, multiple=budget.multiple)
        for batch in plan_with_budget(lengths, budget)
    ]


Role = Literal["query", "article"]


@dataclass(frozen=True, slots=True)
class Prepared:
    """Texts tokenised and padded into batches on the host, ready for ``Encoder.run``."""

    role: Role
    batches: tuple[PaddedBatch, ...]
    count: int
    tokens: int
    """Real (unpadded) tokens: what a tokens/s rate counts."""


@dataclass(frozen=True)
class HostTokenizer:
    """One role's tokenising and padding, picklable into a worker process."""

    role: Role
    tokenizer_json: str
    names: tuple[str, ...]
    pad_id: int
    max_length: int
    budget: TokenBudget
    joined_pairs: bool
    """Symmetric profiles encode an article as ``title + " " + abstract``, not a pair."""
    _fast: list[Any] = field(default_factory=list, compare=False, repr=False)

    def _tokenizer(self) -> Any:
        if not self._fast:
            from tokenizers import Tokenizer

            fast = Tokenizer.from_str(self.tokenizer_json)
            fast.no_padding()
            self._fast.append(fast)
        return self._fast[0]

    def __getstate__(self) -> dict[str, Any]:
        state = {name: getattr(self, name) for name in self.__dataclass_fields__}
        state["_fast"] = []  # the Rust object is rebuilt from JSON in the worker
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)

    def prepare(self, first: Sequence[str], second: Sequence[str] | None = None) -> Prepared:
        """These texts (or pairs) prepared as the encoder in the parent would."""
        if not first:
            return Prepared(self.role, (), 0, 0)
        if second is not None and self.joined_pairs:
            first = [f"{t} {a}" for t, a in zip(first, second, strict=True)]
            second = None
        features = tokenize_fast(self._tokenizer(), first, second, self.max_length, self.names)
        batches = plan_and_pad(features, self.pad_id, self.budget)
        tokens = sum(b.tokens for b in batches)
        return Prepared(self.role, tuple(batches), len(first), tokens)
