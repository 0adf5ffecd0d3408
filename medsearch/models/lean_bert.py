"""BERT in plain torch, so that a search does not have to import transformers.

Why: a ``medsearch search --json`` command on the 10M-article home took ~4.2 s, of which
the search was ~0.15 s. The rest was start-up: torch (0.9 s) and transformers' BERT
modules (1.6 s beyond ``import transformers``: they pull in ``torch.distributed.tensor``,
dynamo, sympy and, through the generation utilities, scikit-learn), then the weights.
On a GPU workstation the same imports made a hybrid search take 16 s (issue 42). The
encoders medsearch uses (MedCPT's, and minilm offline) are plain BERT: absolute
positions, exact GELU, LayerNorm after each block; MedCPT's cross-encoder is the same
BERT with a pooler and one linear logit (``BertForSequenceClassification``). Their
forward pass is a few dozen lines of torch, and the tokenizer is the ``tokenizers``
library's own ``tokenizer.json``, which transformers wraps anyway.

Used on every device, for the encoders and the cross-encoder alike, for a folder that
holds exactly that architecture (:func:`supported`), a single weights file and
``tokenizer.json``; anything else loads through transformers. The module names mirror
transformers' so the saved weights load as they are; the outputs equal ``BertModel``'s
(and ``BertForSequenceClassification``'s logits) to float rounding, and the token ids
are the same tokenizer's (tests compare both on the test suite's models and on minilm).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from medsearch.errors import ModelError
from medsearch.models.bert_folder import (
    ARCHITECTURES,
    INPUT_NAMES,
    WEIGHTS,
    BertShape,
    Kind,
    LeanTokenizer,
    supported,
)

__all__ = [
    "ARCHITECTURES",
    "INPUT_NAMES",
    "WEIGHTS",
    "BertShape",
    "Kind",
    "LeanBert",
    "LeanCrossBert",
    "LeanTokenizer",
    "load_model",
    "load_weights",
    "supported",
]


class _Embeddings(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(s.vocab_size, s.hidden_size)
        self.position_embeddings = nn.Embedding(s.max_position_embeddings, s.hidden_size)
        self.token_type_embeddings = nn.Embedding(s.type_vocab_size, s.hidden_size)
        self.LayerNorm = nn.LayerNorm(s.hidden_size, eps=s.layer_norm_eps)

    def forward(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        summed = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(positions)[None]
        )
        out: torch.Tensor = self.LayerNorm(summed)
        return out


class _SelfAttention(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.heads = s.num_attention_heads
        self.query = nn.Linear(s.hidden_size, s.hidden_size)
        self.key = nn.Linear(s.hidden_size, s.hidden_size)
        self.value = nn.Linear(s.hidden_size, s.hidden_size)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, n, self.heads, d // self.heads).transpose(1, 2)

        out = F.scaled_dot_product_attention(
            heads(self.query(x)), heads(self.key(x)), heads(self.value(x)), attn_mask=mask
        )
        return out.transpose(1, 2).reshape(b, n, d)


class _DenseNorm(nn.Module):
    """``LayerNorm(dense(x) + residual)``: a block's output, named as transformers does."""

    def __init__(self, inside: int, s: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(inside, s.hidden_size)
        self.LayerNorm = nn.LayerNorm(s.hidden_size, eps=s.layer_norm_eps)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.LayerNorm(self.dense(x) + residual)
        return out


class _Attention(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.self = _SelfAttention(s)
        self.output = _DenseNorm(s.hidden_size, s)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.output(self.self(x, mask), x)
        return out


class _Intermediate(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(s.hidden_size, s.intermediate_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.dense(x))


class _Layer(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.attention = _Attention(s)
        self.intermediate = _Intermediate(s)
        self.output = _DenseNorm(s.intermediate_size, s)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        attended = self.attention(x, mask)
        out: torch.Tensor = self.output(self.intermediate(attended), attended)
        return out


class _Stack(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.layer = nn.ModuleList(_Layer(s) for _ in range(s.num_hidden_layers))


class Hidden(NamedTuple):
    """What ``BertModel`` returns that medsearch reads (a tuple: ``torch.compile`` keeps it)."""

    last_hidden_state: torch.Tensor


class Logits(NamedTuple):
    """What ``BertForSequenceClassification`` returns that medsearch reads."""

    logits: torch.Tensor


class LeanBert(nn.Module):
    """``BertModel(...).last_hidden_state`` for inference; no pooler (medsearch pools)."""

    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.shape = shape
        self.embeddings = _Embeddings(shape)
        self.encoder = _Stack(shape)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> Hidden:
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        x = self.embeddings(input_ids, token_type_ids)
        keep = torch.ones_like(input_ids) if attention_mask is None else attention_mask
        mask = keep[:, None, None, :].to(torch.bool)  # True: attend to this key
        for layer in self.encoder.layer:
            x = layer(x, mask)
        return Hidden(last_hidden_state=x)


class _Pooler(nn.Module):
    def __init__(self, s: BertShape) -> None:
        super().__init__()
        self.dense = nn.Linear(s.hidden_size, s.hidden_size)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.dense(hidden[:, 0]))


class _PooledBert(LeanBert):
    def __init__(self, shape: BertShape) -> None:
        super().__init__(shape)
        self.pooler = _Pooler(shape)


class LeanCrossBert(nn.Module):
    """``BertForSequenceClassification(...).logits`` with one label, for inference: the
    pooler (tanh of a dense layer over [CLS]) and the classifier; dropout is off."""

    def __init__(self, shape: BertShape) -> None:
        super().__init__()
        self.shape = shape
        self.bert = _PooledBert(shape)
        self.classifier = nn.Linear(shape.hidden_size, 1)

    def forward(
        self,
        input_ids: torch.Tensor,
        token_type_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
    ) -> Logits:
        hidden = self.bert(input_ids, token_type_ids, attention_mask).last_hidden_state
        return Logits(logits=self.classifier(self.bert.pooler(hidden)))


def load_weights(folder: Path, kind: Kind = "encoder") -> dict[str, torch.Tensor]:
    path = next(folder / name for name in WEIGHTS if (folder / name).is_file())
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = torch.load(path, map_location="cpu", weights_only=True)
    prefix = "bert."  # weights saved from a model that wrapped BertModel
    if kind == "encoder" and any(k.startswith(prefix) for k in state):
        state = {k.removeprefix(prefix): v for k, v in state.items() if k.startswith(prefix)}
    return state


_INIT_LOCK = threading.Lock()


@contextlib.contextmanager
def _uninitialised() -> Iterator[None]:
    """Build layers without drawing their random initial weights, which the saved ones
    replace: for BERT-base that is 110M random numbers, seconds on a busy 2-core CPU
    (transformers skips it the same way). Not the meta device: its initialisers go
    through ``torch._refs``, which imports dynamo and sympy (issue 42)."""
    classes: tuple[type[nn.Module], ...] = (nn.Linear, nn.Embedding, nn.LayerNorm)
    with _INIT_LOCK:
        saved = [vars(layer)["reset_parameters"] for layer in classes]
        try:
            for layer in classes:
                setattr(layer, "reset_parameters", _skip)  # noqa: B010 (a method, on purpose)
            yield
        finally:
            for layer, method in zip(classes, saved, strict=True):
                setattr(layer, "reset_parameters", method)  # noqa: B010


def _skip(self: nn.Module) -> None:
    """A layer's ``reset_parameters`` while :func:`_uninitialised` builds a model."""


def load_model(folder: Path, shape: BertShape, kind: Kind = "encoder") -> nn.Module:
    """The folder's weights in :class:`LeanBert` (or :class:`LeanCrossBert`), in eval mode."""
    with _uninitialised():
        model: nn.Module = LeanBert(shape) if kind == "encoder" else LeanCrossBert(shape)
    missing, _ = model.load_state_dict(load_weights(folder, kind), strict=False, assign=True)
    if missing:  # the pooler and position_ids buffers may be extra; nothing may be missing
        raise ModelError(f"{folder}: weights lack {', '.join(missing[:3])}")
    return model.eval()
