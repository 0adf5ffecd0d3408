"""Loading one transformer (tokenizer + weights) and running it over many texts.

Shared by the bi-encoders and the cross-encoder: tokenise once without padding, plan
length-sorted batches, pad each batch only to its own longest text, run the model under
``torch.inference_mode()`` with out-of-memory back-off, and return rows in input order.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from medsearch.errors import ModelError
from medsearch.models.batching import plan_batches, restore_order, run_with_backoff
from medsearch.models.device import cpu_threads, usable_cores

Kind = Literal["encoder", "cross"]
Features = dict[str, list[list[int]]]
# A forward pass over one padded batch, returning one float32 row per text.
ForwardFn = Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]

# Batch sizes (texts) before the token budget and OOM back-off adjust them. CPU
# throughput flattens out early; a GPU wants enough rows to fill its cores.
DEFAULT_BATCH = {"cpu": 16, "gpu": 64}
# Short texts may travel in batches this many times bigger (same token budget).
SHORT_TEXT_FACTOR = 4
_NO_LIMIT = 1_000_000


@dataclass
class Backbone:
    """One loaded model, shared by every role that uses it."""

    ref: str
    path: Path
    tokenizer: Any
    model: torch.nn.Module
    device: str
    dtype: str
    max_positions: int
    hidden_size: int
    quantized: bool = False
    oom_limit: int | None = None
    """Largest batch that fit after an out-of-memory back-off; later batches start there."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Fast tokenizers keep truncation state: one caller at a time (TUI workers are threads)."""

    def clamp_length(self, wanted: int) -> int:
        """The profile's max length, but never past what the model can position."""
        return min(wanted, self.max_positions)


def configure_cpu_threads() -> None:
    """Use the cores sensibly unless the user already chose (OMP_NUM_THREADS)."""
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(cpu_threads(usable_cores()))


def load_backbone(ref: str, path: Path, *, kind: Kind, device: str, dtype: str) -> Backbone:
    """Load tokenizer and weights from a local directory (never from the network)."""
    import transformers
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

    # medsearch draws its own progress; transformers' per-load bars would break it.
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    loader = AutoModelForSequenceClassification if kind == "cross" else AutoModel
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        model = loader.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError, KeyError) as error:
        raise ModelError(f"cannot load model {ref} from {path}: {error}") from error
    if kind == "cross" and getattr(model.config, "num_labels", 1) != 1:
        raise ModelError(
            f"model {ref} is not a cross-encoder with one relevance logit"
            f" (it has {model.config.num_labels} labels)"
        )
    model.eval()
    model.to(device=torch.device(device), dtype=getattr(torch, dtype))
    limits = [getattr(model.config, "max_position_embeddings", _NO_LIMIT)]
    if isinstance(tokenizer.model_max_length, int) and tokenizer.model_max_length < _NO_LIMIT:
        limits.append(tokenizer.model_max_length)
    hidden = int(getattr(model.config, "hidden_size", 0))
    return Backbone(
        ref, path, tokenizer, model, device, dtype, max_positions=min(limits), hidden_size=hidden
    )


def quantize_int8(backbone: Backbone) -> Backbone:
    """Dynamic int8 quantisation of the Linear layers (CPU only; ~2x faster reranking).

    ``torch.ao.quantization.quantize_dynamic`` is deprecated in favour of torchao, which
    is not a dependency; it still works in torch 2.13 and is what the measurements in
    DESIGN.md used. Its deprecation warnings are silenced here, nowhere else.
    """
    if backbone.device != "cpu":
        raise ModelError("int8 quantisation runs on the CPU only; use --no-quantize on a GPU")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            backbone.model, {torch.nn.Linear}, dtype=torch.qint8
        )
    backbone.model = quantized
    backbone.quantized = True
    return backbone


def tokenize(
    backbone: Backbone, first: Sequence[str], second: Sequence[str] | None, max_length: int
) -> Features:
    """Token ids without padding; pairs truncate longest-first, as MedCPT does."""
    with backbone.lock:
        encoded = backbone.tokenizer(
            list(first),
            list(second) if second is not None else None,
            truncation="longest_first",
            max_length=max_length,
            padding=False,
        )
    return {
        name: encoded[name]
        for name in backbone.tokenizer.model_input_names
        if name in encoded and name in ("input_ids", "token_type_ids", "attention_mask")
    }


def pad_batch(
    features: Features, indices: Sequence[int], pad_id: int, device: str
) -> dict[str, torch.Tensor]:
    """Right-pad the chosen rows to their longest; padding is masked out."""
    width = max(len(features["input_ids"][i]) for i in indices)
    tensors: dict[str, torch.Tensor] = {}
    for name, rows in features.items():
        fill = pad_id if name == "input_ids" else 0
        block = np.full((len(indices), width), fill, dtype=np.int64)
        for row, index in enumerate(indices):
            values = rows[index]
            block[row, : len(values)] = values
        tensors[name] = torch.from_numpy(block).to(device)
    return tensors


def run_batched(
    backbone: Backbone,
    features: Features,
    forward: ForwardFn,
    *,
    batch_size: int,
    max_length: int,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Run ``forward`` over every row of ``features``; rows come back in input order."""
    lengths = [len(ids) for ids in features["input_ids"]]
    batches = plan_batches(
        lengths,
        max_tokens_per_batch=batch_size * max_length,
        max_batch=batch_size * SHORT_TEXT_FACTOR,
    )
    pad_id = backbone.tokenizer.pad_token_id or 0

    def run(chunk: Sequence[int]) -> np.ndarray:
        inputs = pad_batch(features, chunk, pad_id, backbone.device)
        with torch.inference_mode():
            rows = forward(backbone.model, inputs)
        return rows.float().cpu().numpy()

    def after_oom(new_size: int) -> None:
        backbone.oom_limit = new_size
        if backbone.device.startswith("cuda"):
            torch.cuda.empty_cache()

    outputs: list[np.ndarray] = []
    for batch in batches:
        limit = backbone.oom_limit or len(batch)
        result = run_with_backoff(run, batch, min(limit, len(batch)), on_oom=after_oom)
        outputs.append(result.output)
        if progress is not None:
            progress(len(batch))
    return restore_order(batches, outputs)


def default_batch_size(device: str) -> int:
    return DEFAULT_BATCH["cpu" if device == "cpu" else "gpu"]
