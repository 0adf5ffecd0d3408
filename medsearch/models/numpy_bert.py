"""The query side of a BERT profile in NumPy: a CPU search that never imports torch.

Why: after transformers left the search path (:mod:`medsearch.models.lean_bert`), a
hybrid search on a 2-core CPU still spent most of its wall time importing torch (1.5-3 s
of a command whose search takes a tenth of that; 9 s of 13 s on a loaded machine, issue
42). A search encodes one query of a few dozen tokens: 12 BERT-base layers over 10
tokens are ~1 GFLOP, tens of milliseconds through NumPy's BLAS. The weights are the
folder's own ``model.safetensors``, memory-mapped (only the pages a query touches are
read), and the tokenizer is its ``tokenizer.json`` (:mod:`medsearch.models.bert_folder`).

The forward pass is :class:`~medsearch.models.lean_bert.LeanBert`'s, op for op, in
float32; the exact GELU's ``erf`` is Abramowitz and Stegun 7.1.26 (absolute error under
1.5e-7, float32's own rounding). Vectors equal the torch path's to ~1e-5 (a test
compares them), so rankings against vectors torch encoded at ingest are the same.

:class:`NumpyQueryEncoder` is an :class:`~medsearch.models.encoders.Encoder` for what a
search asks of one (queries, sentences, token counts); anything else (articles, a long
text read as an article) loads the full torch encoder on first need and asks it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import struct
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medsearch.models.bert_folder import BertShape, LeanTokenizer, supported
from medsearch.models.host_text import pad_rows, tokenize_fast
from medsearch.models.profiles import ModelProfile

if TYPE_CHECKING:
    from medsearch.models.encoders import Encoder

NUMPY_ENV = "MEDSEARCH_NUMPY_QUERY"
"""``0`` sends CPU searches through torch (the lean path), as before."""

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
_BATCH = 16


def read_safetensors(path: Path) -> dict[str, np.ndarray] | None:
    """The tensors of a ``.safetensors`` file as memory-mapped arrays (float32 ones are
    not copied); None for a file this reader does not take (bfloat16, say)."""
    try:
        with path.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    except (OSError, ValueError, struct.error):
        return None
    out: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info.get("dtype"))
        if dtype is None:
            return None
        start, end = info["data_offsets"]
        array = data[start:end].view(dtype).reshape(info["shape"])
        out[name] = array if dtype is np.float32 else array.astype(np.float32)
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz and Stegun 7.1.26 (|error| < 1.5e-7): NumPy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    out: np.ndarray = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = (0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))).astype(np.float32)
    return out


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(axis=-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(axis=-1, keepdims=True)
    out: np.ndarray = (centred / np.sqrt(var + np.float32(eps)) * weight + bias).astype(np.float32)
    return out


class NumpyBert:
    """``BertModel(...).last_hidden_state`` over memory-mapped weights, in NumPy."""

    def __init__(self, shape: BertShape, weights: dict[str, np.ndarray]) -> None:
        if any(k.startswith("bert.") for k in weights):
            weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        self.shape = shape
        self.w = weights
        for name in self._names():
            if name not in weights:
                raise KeyError(name)

    def _names(self) -> list[str]:
        names = [
            "embeddings.word_embeddings.weight",
            "embeddings.position_embeddings.weight",
            "embeddings.token_type_embeddings.weight",
            "embeddings.LayerNorm.weight",
            "embeddings.LayerNorm.bias",
        ]
        for i in range(self.shape.num_hidden_layers):
            p = f"encoder.layer.{i}."
            for part in (
                "attention.self.query",
                "attention.self.key",
                "attention.self.value",
                "attention.output.dense",
                "intermediate.dense",
                "output.dense",
            ):
                names += [f"{p}{part}.weight", f"{p}{part}.bias"]
            for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
                names += [f"{p}{norm}.weight", f"{p}{norm}.bias"]
        return names

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        out: np.ndarray = x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]
        return out

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        w = self.w
        return _layer_norm(x, w[f"{name}.weight"], w[f"{name}.bias"], self.shape.layer_norm_eps)

    def __call__(
        self, input_ids: np.ndarray, token_type_ids: np.ndarray, attention_mask: np.ndarray
    ) -> np.ndarray:
        s, w = self.shape, self.w
        b, n = input_ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][input_ids]
            + w["embeddings.token_type_embeddings.weight"][token_type_ids]
            + w["embeddings.position_embeddings.weight"][:n][None]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        heads = s.num_attention_heads
        size = s.hidden_size // heads
        masked = np.where(attention_mask.astype(bool), 0.0, -np.inf).astype(np.float32)
        masked = masked[:, None, None, :]
        scale = np.float32(1.0 / math.sqrt(size))

        def split(t: np.ndarray) -> np.ndarray:
            return t.reshape(b, n, heads, size).transpose(0, 2, 1, 3)

        for i in range(s.num_hidden_layers):
            p = f"encoder.layer.{i}."
            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + masked
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(b, n, s.hidden_size)
            attended = self._norm(
                self._linear(context, p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            inner = _gelu(self._linear(attended, p + "intermediate.dense"))
            x = self._norm(
                self._linear(inner, p + "output.dense") + attended, p + "output.LayerNorm"
            )
        return x.astype(np.float32, copy=False)


class NumpyQueryEncoder:
    """A profile's query encoder on the CPU in NumPy, standing in for an
    :class:`~medsearch.models.encoders.Encoder` in a search; ``full`` loads the real one
    (torch) for anything this one does not do."""

    device = "cpu"
    dtype = "float32"

    def __init__(
        self,
        profile: ModelProfile,
        model: NumpyBert,
        tokenizer: LeanTokenizer,
        full: Callable[[], Encoder],
    ) -> None:
        self.profile = dataclasses.replace(profile, dim=model.shape.hidden_size)
        self.dim = model.shape.hidden_size
        self.batch_size = _BATCH
        self.load_seconds = 0.0
        self._model = model
        self._tokenizer = tokenizer
        self._lock = threading.Lock()  # the tokenizer keeps truncation state
        self._load_full = full
        self._full: Encoder | None = None
        limit = tokenizer.model_max_length
        self._max_positions = min(model.shape.max_position_embeddings, limit)

    def __getattr__(self, name: str) -> Any:
        """Anything but the query side (articles, say) from the torch encoder."""
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.full_encoder(), name)

    def full_encoder(self) -> Encoder:
        """The profile's torch encoder, loaded on first need."""
        with self._lock:
            if self._full is None:
                self._full = self._load_full()
            return self._full

    @property
    def query_max_length(self) -> int:
        return min(self.profile.query_max_length, self._max_positions)

    @property
    def sentence_max_length(self) -> int:
        return self.query_max_length

    def _features(self, texts: Sequence[str], max_length: int) -> dict[str, list[list[int]]]:
        names = ("input_ids", "token_type_ids")
        with self._lock:
            return tokenize_fast(self._tokenizer.backend_tokenizer, texts, None, max_length, names)

    def query_tokens(self, text: str) -> int:
        """How many tokens ``text`` is for the query encoder (special tokens included)."""
        return len(self._features([text], 1 << 20)["input_ids"][0])

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        features = self._features(texts, self.query_max_length)
        lengths = [len(ids) for ids in features["input_ids"]]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        pad = self._tokenizer.pad_token_id or 0
        for start in range(0, len(order), self.batch_size):
            rows = order[start : start + self.batch_size]
            batch = pad_rows(features, rows, pad)
            arrays = batch.arrays
            types = arrays.get("token_type_ids", np.zeros_like(arrays["input_ids"]))
            mask = arrays["attention_mask"]
            with _blas_threads(batch.tokens):
                hidden = self._model(arrays["input_ids"], types, mask)
            out[rows] = _pool(hidden, mask, self.profile)
        return out

    def encode_queries(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        return self._encode(texts)

    def encode_sentences(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Abstract sentences, with the query encoder (as ingest encoded them)."""
        vectors = self._encode(texts)
        if progress is not None:
            progress(len(texts))
        return vectors


ONE_THREAD_TOKENS = 256
"""Batches of fewer tokens run BLAS on one thread. A query's matrix products are a few
rows against each weight matrix: memory-bound, where a second thread only adds its
start-up and, on a shared machine, waits: one thread took 57 ms a product and two 199
ms on the loaded 2-core machine of issue 42's measurements."""


def _blas_threads(tokens: int) -> contextlib.AbstractContextManager[object]:
    if tokens >= ONE_THREAD_TOKENS:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    limits: contextlib.AbstractContextManager[object] = threadpool_limits(1, user_api="blas")
    return limits


def _pool(hidden: np.ndarray, mask: np.ndarray, profile: ModelProfile) -> np.ndarray:
    """[CLS] or the masked mean, then L2 normalisation when the profile asks."""
    if profile.pooling == "cls":
        vectors = hidden[:, 0]
    else:
        weights = mask[..., None].astype(np.float32)
        vectors = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    if profile.normalize:
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.maximum(norms, 1e-12)
    return np.ascontiguousarray(vectors, dtype=np.float32)


def load_numpy_query_encoder(
    profile: ModelProfile, folder: Path, full: Callable[[], Encoder]
) -> NumpyQueryEncoder | None:
    """The NumPy query encoder for ``folder``, or None when it cannot stand in for the
    torch one (not plain BERT, weights not in safetensors, names not BERT's, or
    ``MEDSEARCH_NUMPY_QUERY=0`` / ``MEDSEARCH_LEAN_BERT=0``)."""
    if os.environ.get(NUMPY_ENV, "1") == "0" or os.environ.get("MEDSEARCH_LEAN_BERT") == "0":
        return None
    shape = supported(folder)
    weights_file = folder / "model.safetensors"
    if shape is None or not weights_file.is_file():
        return None
    weights = read_safetensors(weights_file)
    if weights is None:
        return None
    try:
        model = NumpyBert(shape, weights)
        tokenizer = LeanTokenizer(folder)
    except (KeyError, OSError, ValueError):
        return None  # the torch path loads it, or names what is wrong
    return NumpyQueryEncoder(profile, model, tokenizer, full)


def cpu_only(device: str) -> bool:
    """Whether ``device`` means the CPU on this machine, known without importing torch:
    ``cpu``, or ``auto`` where no GPU driver is present (no NVIDIA driver on Linux, not
    macOS, whose ``auto`` may be MPS)."""
    if device == "cpu":
        return True
    if device != "auto":
        return False
    if sys.platform == "darwin":
        return False
    driver = Path("/proc/driver/nvidia/version").exists() or Path("/dev/nvidia0").exists()
    return not driver and not Path("/dev/kfd").exists()  # nor ROCm
