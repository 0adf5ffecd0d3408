"""The cross-encoder reranker: one relevance logit per (query, article) pair.

MedCPT's cross-encoder reads the pair (query, ``title + " " + abstract``), truncated to
512 tokens, and returns an unbounded logit; higher is more relevant. On the CPU it is
quantised to int8 by default (about twice as fast, DESIGN.md), which is what makes a
short background rerank of the head of a result list feel immediate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch

from medsearch.errors import ModelError
from medsearch.models.backbone import (
    Backbone,
    default_batch_size,
    load_backbone,
    quantize_int8,
    run_batched,
    run_prepared,
    tokenize,
)
from medsearch.models.cache import require_model
from medsearch.models.encoders import load_runtime
from medsearch.models.host_text import pad_rows
from medsearch.models.profiles import ModelProfile
from medsearch.paths import Paths

# On the CPU a batch of 8 pairs at 512 tokens takes ~1 s (int8): cancellation between
# batches stays as prompt as the Searcher's old chunks of 8, with no extra cost.
CPU_PAIRS_PER_BATCH = 8


def article_text(title: str, abstract: str) -> str:
    """The document side of a cross-encoder pair, exactly as MedCPT builds it."""
    return f"{title} {abstract}"


def _logits(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    logits: torch.Tensor = model(**inputs).logits
    return logits[:, 0].float()


class CrossEncoder:
    """Scores documents against one query; higher is more relevant."""

    def __init__(self, profile: ModelProfile, backbone: Backbone, batch_size: int) -> None:
        self.profile = profile
        self.device = backbone.device
        self.dtype = backbone.dtype
        self.quantized = backbone.quantized
        self.batch_size = batch_size
        self._backbone = backbone

    @property
    def max_length(self) -> int:
        """Tokens kept of each (query, article) pair; the longer side is cut first."""
        return self._backbone.clamp_length(self.profile.cross_max_length)

    def score_pairs(
        self,
        query: str,
        docs: Sequence[tuple[str, str]],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
        is_cancelled: Callable[[], bool] | None = None,
    ) -> np.ndarray:
        """One float32 logit per (title, abstract) document, in the order given.

        All pairs are tokenised at once and scored in length-sorted batches under the
        device's token budget: on a GPU the default head (100 pairs at 512 tokens) is
        one or two forward passes. ``is_cancelled`` is asked before every batch; when it
        says yes, :class:`~medsearch.models.batching.Cancelled` is raised.
        """
        if not docs:
            return np.zeros((0,), dtype=np.float32)
        texts = [article_text(title, abstract) for title, abstract in docs]
        features = tokenize(self._backbone, [query] * len(texts), texts, self.max_length)
        size = batch_size or self.batch_size
        if self.device == "cpu":
            # Consecutive batches of candidates, never regrouped by length: int8 dynamic
            # quantisation scales each batch by its own range, so regrouping pairs would
            # move CPU scores by quantisation noise, and a pair's score would depend on
            # the other candidates it happened to be batched with.
            pad_id = self._backbone.tokenizer.pad_token_id or 0
            batches = [
                pad_rows(features, range(i, min(i + size, len(texts))), pad_id)
                for i in range(0, len(texts), size)
            ]
            scores = run_prepared(
                self._backbone, batches, _logits, progress=progress, is_cancelled=is_cancelled
            )
        else:
            scores = run_batched(
                self._backbone,
                features,
                _logits,
                batch_size=size,
                max_length=self.max_length,
                progress=progress,
                is_cancelled=is_cancelled,
            )
        return np.ascontiguousarray(scores, dtype=np.float32)

    def rank(
        self,
        query: str,
        docs: Sequence[tuple[str, str]],
        *,
        top_k: int | None = None,
        batch_size: int | None = None,
    ) -> list[tuple[int, float]]:
        """``(index into docs, score)`` sorted by score, highest first (ties: input order)."""
        scores = self.score_pairs(query, docs, batch_size=batch_size)
        order = np.argsort(-scores, kind="stable")
        if top_k is not None:
            order = order[:top_k]
        return [(int(i), float(scores[i])) for i in order]


def load_cross_encoder(
    profile: ModelProfile,
    *,
    device: str = "auto",
    quantize: bool | None = None,
    paths: Paths | None = None,
    batch_size: int | None = None,
) -> CrossEncoder | None:
    """Load the profile's reranker; None when the profile has none.

    ``quantize=None`` means int8 on the CPU and full precision elsewhere; asking for
    int8 on a GPU is an error (dynamic quantisation is a CPU kernel).
    """
    if profile.cross_model is None:
        return None
    where = paths if paths is not None else Paths.resolve()
    resolved, dtype = load_runtime(device)
    if quantize and resolved != "cpu":
        raise ModelError(f"int8 quantisation runs on the CPU only, not on {resolved}")
    path = require_model(profile.cross_model, where, profile.name)
    backbone = load_backbone(profile.cross_model, path, kind="cross", device=resolved, dtype=dtype)
    if quantize or (quantize is None and resolved == "cpu"):
        backbone = quantize_int8(backbone)
    default = CPU_PAIRS_PER_BATCH if resolved == "cpu" else default_batch_size(resolved)
    return CrossEncoder(profile, backbone, batch_size or default)
