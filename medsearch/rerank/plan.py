"""Which rerankers order a result list: ``auto``, ``delta``, ``cross`` or ``none``.

On a CPU the cross-encoder costs a quarter of a second per document, so ``auto`` lets
Delta order the first stage's top 500 at once (milliseconds) and the cross-encoder, if
the profile has one, refine the head in the background. On a GPU the cross-encoder
scores the top 100 in tens of milliseconds and is the better model, so ``auto`` uses it
alone. A choice that cannot be honoured says why instead of failing the search.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from medsearch.errors import UsageError

if TYPE_CHECKING:
    from medsearch.rerank.loading import DeltaStatus

RERANKERS = ("auto", "delta", "cross", "none")
TRAIN_HINT = "run `medsearch rerank train` to train the Delta reranker on this corpus"


@dataclass(frozen=True, slots=True)
class RerankPlan:
    delta: bool = False
    cross: bool = False
    notes: tuple[str, ...] = ()
    news: bool = False
    """The notes say what the last training concluded: a search that shows them marks it
    said (:func:`medsearch.rerank.loading.told`)."""


def plan_rerank(
    choice: str, *, device: str | None, delta: DeltaStatus, has_cross: bool
) -> RerankPlan:
    """The rerankers for ``choice`` given what this searcher has.

    ``delta`` says whether a usable Delta model is installed, and if not why (no model
    yet, one trained on a different corpus, a corpus too small to train on, or one that
    kept the first-stage order). Training is suggested only where it could help.
    """
    if choice not in RERANKERS:
        raise UsageError(f"unknown reranker {choice!r}; choose one of {', '.join(RERANKERS)}")
    has_delta = delta.scorer is not None
    on_gpu = device is not None and device != "cpu"
    if choice == "none":
        return RerankPlan()
    if choice == "cross":
        if has_cross:
            return RerankPlan(cross=True)
        return RerankPlan(notes=("no cross-encoder in this model profile: first-stage order kept",))
    news = delta.news is not None
    if choice == "delta":
        if has_delta:
            return RerankPlan(delta=True)
        hint = f"; {TRAIN_HINT}" if delta.trainable else ""
        return RerankPlan(notes=(f"Delta reranker unavailable ({delta.problem}){hint}",), news=news)
    if on_gpu and has_cross:
        return RerankPlan(cross=True)
    if has_delta:
        return RerankPlan(delta=True, cross=has_cross)
    if delta.trainable:
        return RerankPlan(
            cross=has_cross, notes=(f"no Delta reranker ({delta.problem}): {TRAIN_HINT}",)
        )
    said = (delta.news,) if delta.news is not None else ()
    return RerankPlan(cross=has_cross, notes=said, news=news)
