"""What a saved BERT folder holds, read without torch: its shape, whether medsearch's own
forward passes run it exactly (:func:`supported`), and its tokenizer.

Shared by the torch forward (:mod:`medsearch.models.lean_bert`) and the NumPy query
encoder (:mod:`medsearch.models.numpy_bert`), which a CPU search uses so that it does
not import torch at all.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

WEIGHTS = ("model.safetensors", "pytorch_model.bin")
INPUT_NAMES = ["input_ids", "token_type_ids", "attention_mask"]
NO_LIMIT = 1_000_000


@dataclass(frozen=True, slots=True)
class BertShape:
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float


Kind = Literal["encoder", "cross"]
ARCHITECTURES: dict[Kind, list[str]] = {
    "encoder": ["BertModel"],
    "cross": ["BertForSequenceClassification"],
}


def _one_label(config: dict[str, Any]) -> bool:
    """A classifier with one output: the cross-encoder's unbounded relevance logit."""
    labels = config.get("id2label")
    count = len(labels) if isinstance(labels, dict) else config.get("num_labels", 2)
    return count == 1 and config.get("problem_type") in (None, "regression")


def supported(folder: Path, kind: Kind = "encoder") -> BertShape | None:
    """The model's shape when ``folder`` holds a plain BERT encoder (``kind="encoder"``)
    or a one-logit BERT classifier (``"cross"``) this module runs exactly, with one
    weights file and ``tokenizer.json``; otherwise None."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    plain = (
        config.get("model_type") == "bert"
        and config.get("hidden_act", "gelu") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and config.get("architectures", ARCHITECTURES[kind]) == ARCHITECTURES[kind]
        and (kind == "encoder" or _one_label(config))
        and not config.get("is_decoder", False)
        and (folder / "tokenizer.json").is_file()
        and any((folder / name).is_file() for name in WEIGHTS)
    )
    if not plain:
        return None
    try:
        return BertShape(
            vocab_size=int(config["vocab_size"]),
            hidden_size=int(config["hidden_size"]),
            num_hidden_layers=int(config["num_hidden_layers"]),
            num_attention_heads=int(config["num_attention_heads"]),
            intermediate_size=int(config["intermediate_size"]),
            max_position_embeddings=int(config.get("max_position_embeddings", 512)),
            type_vocab_size=int(config.get("type_vocab_size", 2)),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
    except (KeyError, TypeError, ValueError):
        return None


class LeanTokenizer:
    """The few attributes of a transformers tokenizer that medsearch reads, over the
    folder's own ``tokenizer.json`` (which is what transformers' fast tokenizer runs)."""

    is_fast = True
    model_input_names = INPUT_NAMES

    def __init__(self, folder: Path) -> None:
        from tokenizers import Tokenizer

        self.backend_tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        settings: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            settings = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
        limit = settings.get("model_max_length")
        self.model_max_length = int(limit) if isinstance(limit, int) else NO_LIMIT
        pad = settings.get("pad_token", "[PAD]")
        pad_text = pad.get("content") if isinstance(pad, dict) else pad
        self.pad_token_id = self.backend_tokenizer.token_to_id(str(pad_text)) or 0
