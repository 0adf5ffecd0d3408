"""Loading one transformer (tokenizer + weights) and running it over many texts.

Shared by the bi-encoders and the cross-encoder: tokenise once without padding (with the
``tokenizers`` batch API directly), plan length-sorted batches under a token budget, pad
each batch on the host, copy it to the device (pinned and non-blocking on CUDA), run the
model under ``torch.inference_mode()`` with out-of-memory back-off, and return rows in
input order. Tokenising and padding need no torch and run ahead of the device in the
vector stage's pipeline (:func:`prepare_batches` there, :func:`run_prepared` here).
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
from medsearch.models.batching import (
    Cancelled,
    TokenBudget,
    budget_for,
    is_out_of_memory,
    restore_order,
    run_with_backoff,
)
from medsearch.models.device import cpu_threads, usable_cores
from medsearch.models.host_text import (
    Features,
    PaddedBatch,
    plan_and_pad,
    tokenize_fast,
)

Kind = Literal["encoder", "cross"]
# A forward pass over one padded batch, returning one float32 row per text.
ForwardFn = Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]

# Batch sizes (texts) before the token budget and OOM back-off adjust them. CPU
# throughput flattens out early; a GPU wants enough rows to fill its cores.
DEFAULT_BATCH = {"cpu": 16, "gpu": 64}
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
    compiled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    """Fast tokenizers keep truncation state: one caller at a time (TUI workers are threads)."""
    fast: Any | None = None
    """The Rust tokenizer behind ``tokenizer`` (:func:`fast_tokenizer`); None for slow ones."""

    def clamp_length(self, wanted: int) -> int:
        """The profile's max length, but never past what the model can position."""
        return min(wanted, self.max_positions)


def configure_cpu_threads() -> None:
    """Use the cores sensibly unless the user already chose (OMP_NUM_THREADS)."""
    if "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(cpu_threads(usable_cores()))


LEAN_ENV = "MEDSEARCH_LEAN_BERT"


def load_backbone(ref: str, path: Path, *, kind: Kind, device: str, dtype: str) -> Backbone:
    """Load tokenizer and weights from a local directory (never from the network).

    A plain BERT encoder or one-logit BERT cross-encoder loads without transformers on
    every device (:mod:`medsearch.models.lean_bert`: seconds less start-up for every
    command that encodes a query or reranks, issue 42); ``MEDSEARCH_LEAN_BERT=0``
    forces transformers.
    """
    if os.environ.get(LEAN_ENV, "1") != "0":
        from medsearch.models import lean_bert

        shape = lean_bert.supported(path, kind)
        lean = _lean_backbone(ref, path, shape, kind, device, dtype) if shape else None
        if lean is not None:
            return lean
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
    positions = getattr(model.config, "max_position_embeddings", _NO_LIMIT)
    hidden = int(getattr(model.config, "hidden_size", 0))
    return _assemble(ref, path, tokenizer, model, device, dtype, positions, hidden)


def _assemble(
    ref: str,
    path: Path,
    tokenizer: Any,
    model: torch.nn.Module,
    device: str,
    dtype: str,
    positions: int,
    hidden: int,
) -> Backbone:
    """The backbone of a loaded model: it reads no further than its positions and its
    tokenizer's own limit allow."""
    limits = [positions]
    if isinstance(tokenizer.model_max_length, int) and tokenizer.model_max_length < _NO_LIMIT:
        limits.append(tokenizer.model_max_length)
    return Backbone(
        ref,
        path,
        tokenizer,
        model,
        device,
        dtype,
        max_positions=min(limits),
        hidden_size=hidden,
        fast=fast_tokenizer(tokenizer),
    )


def _lean_backbone(
    ref: str, path: Path, shape: Any, kind: Kind, device: str, dtype: str
) -> Backbone | None:
    """The lean backbone, or None when its weights are not laid out as expected (then
    transformers loads the folder, and reports any real damage)."""
    from medsearch.models import lean_bert

    try:
        tokenizer = lean_bert.LeanTokenizer(path)
        model = lean_bert.load_model(path, shape, kind)
    except (OSError, RuntimeError, ValueError, ModelError):
        return None
    model.to(device=torch.device(device), dtype=getattr(torch, dtype))
    positions, hidden = shape.max_position_embeddings, shape.hidden_size
    return _assemble(ref, path, tokenizer, model, device, dtype, positions, hidden)


COMPILE_ENV = "MEDSEARCH_TORCH_COMPILE"
# Articles a CUDA run must encode before compiling pays. Measured on an H200 (BENCHMARKS.md,
# 120K articles): compiling cost ~27 s once; it saved 30 us an article on the article side
# (steady 5,178 -> 6,139 articles/s) and up to 25 us more on their sentences (bare forward
# 41.6K -> 47.3K sentences/s), so it breaks even at 0.5-0.9M articles.
COMPILE_MIN_ARTICLES = 1_000_000


def compile_wanted(device: str, articles: int | None = None) -> bool:
    """Whether the encoders on ``device`` are worth ``torch.compile``.

    ``MEDSEARCH_TORCH_COMPILE=1`` or ``0`` decides; unset, a CUDA run compiles when it has
    at least :data:`COMPILE_MIN_ARTICLES` articles to encode (a baseline ingest, not a
    daily update or a search, which would pay the compilation and never get it back).
    Never on a CPU or MPS: the lean CPU path is faster there, and Inductor needs a C
    compiler a user may not have.
    """
    if not device.startswith("cuda"):
        return False
    setting = os.environ.get(COMPILE_ENV, "").strip()
    if setting in ("0", "1"):
        return setting == "1"
    return articles is not None and articles >= COMPILE_MIN_ARTICLES


def maybe_compile(backbone: Backbone, wanted: bool | None = None) -> Backbone:
    """``torch.compile(dynamic=True)`` of the model when ``wanted`` (None: the
    environment alone, see :func:`compile_wanted`).

    Measured on an H200 (60K articles): the bare forward +14% articles, +12% sentences
    (eager 5,591 / 41,212 a second, compiled 6,354 / 46,076), and the stage's steady
    article rate +19% at 120K; the GPU budget's lengths padded to 32 keep shapes few.
    Compilation runs at the first batch, in the device thread. Should it fail (no working
    Triton, say), Dynamo's ``suppress_errors`` runs the model eagerly instead of failing
    an hours-long ingest.
    """
    if wanted is None:
        wanted = compile_wanted(backbone.device)
    if wanted and backbone.device.startswith("cuda"):
        import torch._dynamo.config as dynamo_config

        dynamo_config.suppress_errors = True
        compiled: Any = torch.compile(backbone.model, dynamic=True)
        backbone.model = compiled
        backbone.compiled = True
    return backbone


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


def fast_tokenizer(tokenizer: Any) -> Any | None:
    """A private copy of the Rust tokenizer behind a transformers fast tokenizer.

    transformers' wrapper spends most of a batch call converting each encoding to
    Python lists and dicts (4.4 s of 7 s per 20K articles' sentences on the issue's
    profile); calling ``encode_batch`` on the backend directly skips that. The copy has
    its own truncation state, so it never disturbs the wrapper. None for slow tokenizers.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not getattr(tokenizer, "is_fast", False):
        return None
    from tokenizers import Tokenizer

    clone = Tokenizer.from_str(backend.to_str())
    clone.no_padding()
    return clone


def input_names(tokenizer: Any) -> tuple[str, ...]:
    """The inputs this model takes, of the three BERT-style ones we build."""
    wanted = ("input_ids", "token_type_ids", "attention_mask")
    return tuple(n for n in wanted if n in tokenizer.model_input_names)


def tokenize(
    backbone: Backbone, first: Sequence[str], second: Sequence[str] | None, max_length: int
) -> Features:
    """Token ids without padding; pairs truncate longest-first, as MedCPT does.

    The attention mask is not returned: unpadded, it is all ones, and
    :func:`~medsearch.models.host_text.pad_rows` builds it from the lengths.
    """
    names = input_names(backbone.tokenizer)
    with backbone.lock:
        if backbone.fast is not None:
            return tokenize_fast(backbone.fast, first, second, max_length, names)
        encoded = backbone.tokenizer(
            list(first),
            list(second) if second is not None else None,
            truncation="longest_first",
            max_length=max_length,
            padding=False,
        )
    return {n: encoded[n] for n in names if n in encoded and n != "attention_mask"}


def prepare_batches(
    backbone: Backbone, features: Features, budget: TokenBudget
) -> list[PaddedBatch]:
    """Plan batches under ``budget`` and pad each on the host (no torch, thread-safe)."""
    return plan_and_pad(features, backbone.tokenizer.pad_token_id or 0, budget)


def to_device(
    arrays: dict[str, np.ndarray], device: str, names: Sequence[str]
) -> dict[str, torch.Tensor]:
    """Host arrays to ``device``; on CUDA through pinned memory, without blocking the host
    (torch's caching host allocator reuses the pinned blocks from batch to batch)."""
    out: dict[str, torch.Tensor] = {}
    for name in names:
        tensor = torch.from_numpy(np.ascontiguousarray(arrays[name]))
        if device.startswith("cuda"):
            tensor = tensor.pin_memory().to(device, non_blocking=True)
        elif device != "cpu":
            tensor = tensor.to(device)
        out[name] = tensor
    return out


def _concat(parts: Sequence[Any]) -> Any:
    """Rows of sub-batches, on the host (numpy) or still on the device (torch)."""
    if isinstance(parts[0], np.ndarray):
        return np.concatenate(parts, axis=0)
    return parts[0] if len(parts) == 1 else torch.cat(list(parts), dim=0)


def run_prepared(
    backbone: Backbone,
    batches: Sequence[PaddedBatch],
    forward: ForwardFn,
    *,
    progress: Callable[[int], None] | None = None,
    is_cancelled: Callable[[], bool] | None = None,
) -> np.ndarray:
    """Run ``forward`` over padded batches; rows come back in input order.

    ``is_cancelled`` is asked before each batch (a GPU batch is the unit of work that
    cannot be interrupted); when it says yes, :class:`Cancelled` is raised.
    """
    names = [n for n in input_names(backbone.tokenizer)]
    if "input_ids" not in names:
        names.insert(0, "input_ids")

    def after_oom(new_size: int) -> None:
        backbone.oom_limit = new_size
        if backbone.device.startswith("cuda"):
            torch.cuda.empty_cache()

    on_gpu = backbone.device.startswith("cuda")
    outputs: list[Any] = []
    for batch in batches:
        if is_cancelled is not None and is_cancelled():
            raise Cancelled

        def run(chunk: Sequence[int], batch: PaddedBatch = batch) -> Any:
            if len(chunk) == len(batch.rows):
                sliced = batch.arrays  # the usual case: no copy
            else:  # a sub-batch after an out-of-memory back-off
                rows = np.asarray(chunk, dtype=np.int64)
                sliced = {n: batch.arrays[n][rows] for n in names}
            inputs = to_device(sliced, backbone.device, names)
            with torch.inference_mode():
                out = forward(backbone.model, inputs).float()
            # On a GPU the rows stay there until the last batch is queued: one wait per
            # call instead of one per batch, so the host prepares batch i+1 while the
            # device still runs batch i (an out-of-memory error is still raised here,
            # at allocation).
            return out if on_gpu else out.cpu().numpy()

        positions = list(range(len(batch.rows)))
        limit = backbone.oom_limit or len(positions)
        result = run_with_backoff(
            run, positions, min(limit, len(positions)), on_oom=after_oom, concat=_concat
        )
        outputs.append(result.output)
        if progress is not None:
            progress(len(positions))
    if on_gpu:
        return in_order_on_host([b.rows for b in batches], outputs)
    return restore_order([b.rows.tolist() for b in batches], outputs)


def in_order_on_host(rows: Sequence[np.ndarray], outputs: Sequence[torch.Tensor]) -> np.ndarray:
    """Per-batch outputs still on their device, put back in input order there and copied
    to the host once.

    Why on the device: the encoder thread does this between chunks, while the GPU has
    nothing queued. Copying a sentence chunk's 20 batches back (70K x 768 float32, 215
    MB, into fresh pages) and scattering them into a fresh array on the host took 46-550
    ms here (page faults included), and the H100's sentence pass spent ~330 ms a chunk
    more in its device thread than the bare forward's kernels
    (docs/benchmarks-history.md, "Measured on an H100 again"); a scatter on the GPU
    takes a millisecond. Short of device memory for the ordered copy, the rows come back
    first and are ordered on the host.
    """
    first = outputs[0]
    total = sum(len(o) for o in outputs)
    try:
        ordered = torch.empty((total, *first.shape[1:]), dtype=first.dtype, device=first.device)
        for where, part in zip(rows, outputs, strict=True):
            index = torch.from_numpy(np.ascontiguousarray(where, dtype=np.int64))
            ordered[index.to(first.device)] = part
    except (RuntimeError, MemoryError) as error:
        if not is_out_of_memory(error):
            raise
        host = [o.cpu().numpy() for o in outputs]
        return restore_order([np.asarray(r).tolist() for r in rows], host)
    return ordered.cpu().numpy()


def run_batched(
    backbone: Backbone,
    features: Features,
    forward: ForwardFn,
    *,
    batch_size: int,
    max_length: int,
    progress: Callable[[int], None] | None = None,
    budget: TokenBudget | None = None,
    is_cancelled: Callable[[], bool] | None = None,
) -> np.ndarray:
    """Run ``forward`` over every row of ``features``; rows come back in input order."""
    chosen = budget or budget_for(backbone.device, batch_size=batch_size, max_length=max_length)
    batches = prepare_batches(backbone, features, chosen)
    return run_prepared(backbone, batches, forward, progress=progress, is_cancelled=is_cancelled)


def default_batch_size(device: str) -> int:
    return DEFAULT_BATCH["cpu" if device == "cpu" else "gpu"]
