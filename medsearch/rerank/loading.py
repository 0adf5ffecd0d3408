"""Finding the corpus's Delta model, and refusing one that no longer fits the corpus."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.rerank.scorer import DeltaScorer


@dataclass(frozen=True)
class DeltaStatus:
    scorer: DeltaScorer | None
    problem: str | None = None
    """Why there is no usable model (None when there is one)."""
    trainable: bool = True
    """False when the corpus is too small to train on: searches then say nothing of it."""
    fits: bool = False
    """A model trained on this corpus is installed (even one that keeps the first-stage
    order): training again on the same corpus would learn the same."""


def load_delta(directory: Path | None, store: Store, profile: str | None) -> DeltaStatus:
    from medsearch.rerank.scorer import DeltaScorer, RerankerError
    from medsearch.rerank.train import MIN_ARTICLES, staleness

    if directory is None:
        return DeltaStatus(None, "no Delta model for this searcher", trainable=False)
    if not (directory / "meta.json").exists():
        count = store.count()
        if count < MIN_ARTICLES:
            return DeltaStatus(
                None,
                f"the corpus has {count:,} articles; training needs at least {MIN_ARTICLES:,}",
                trainable=False,
            )
        return DeltaStatus(None, "no Delta model has been trained on this corpus yet")
    try:
        scorer = DeltaScorer.load(directory)
    except RerankerError as exc:
        return DeltaStatus(None, str(exc))
    why = staleness(scorer.meta, {"articles": store.count(), "profile": profile})
    if why is not None:
        return DeltaStatus(None, f"the Delta model is out of date: {why}")
    if scorer.blend <= 0.0:
        # training kept the first-stage order on held-out queries: reordering with it
        # would cost time and change nothing, and retraining on the same corpus won't help
        return DeltaStatus(
            None,
            "the trained Delta model did not beat the first stage on held-out queries,"
            " so the first-stage order is kept",
            trainable=False,
            fits=True,
        )
    return DeltaStatus(scorer, fits=True)
