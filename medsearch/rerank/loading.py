"""Finding the corpus's Delta model, and refusing one that no longer fits the corpus.

The rule of whether a model still fits (:func:`fit`: :data:`MIN_ARTICLES`,
:func:`staleness`) is written here once, below retrieval: searches apply it when they
load the model, ingest when it offers training, and the trainer when it refuses a corpus.

When training kept the first-stage order, the searches after it say so once, with the
held-out figures; a small ``told.json`` beside the model remembers that it was said, so
later searches stay quiet until the corpus has changed enough (:func:`staleness`) for
training again to possibly decide otherwise.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.rerank.scorer import DeltaScorer

TOLD = "told.json"
MIN_ARTICLES = 1_000
"""Below this a corpus is too small to train on; ingest offers training above it."""
STALE_GROWTH = 0.25  # retrain once the corpus grew or shrank by a quarter


def staleness(meta: dict[str, Any], stamp: dict[str, Any]) -> str | None:
    """Why a trained model no longer fits this corpus, or None when it does."""
    was = meta.get("corpus", {})
    trained_on = int(was.get("articles", 0))
    now = int(stamp.get("articles", 0))
    if trained_on <= 0 or abs(now - trained_on) > STALE_GROWTH * trained_on:
        return f"it was trained on {trained_on:,} articles and the corpus now has {now:,}"
    if meta.get("used_profile") and was.get("profile") != stamp.get("profile"):
        return f"it was trained with model profile {was.get('profile')!r}"
    return None


@dataclass(frozen=True)
class Fit:
    """How the installed Delta model stands against the corpus it would rerank."""

    directory: Path | None = None
    """The model in use (:func:`medsearch.rerank.install.current`); None: none installed."""
    meta: dict[str, Any] = field(default_factory=dict)
    unreadable: str | None = None
    """Why its ``meta.json`` cannot be read, if it cannot."""
    stale: str | None = None
    """Why it no longer fits the corpus (:func:`staleness`), if it does not."""


def fit(link: Path, articles: int, profile: str | None) -> Fit:
    """The installed model behind ``link`` (``rerank/delta``) against a corpus of
    ``articles`` searched with model ``profile``."""
    from medsearch.rerank.install import current

    found = current(link)
    if found is None:
        return Fit()
    try:
        meta = json.loads((found / "meta.json").read_text(encoding="utf-8"))
        if not isinstance(meta, dict):
            raise ValueError("meta.json is not an object")
    except (OSError, ValueError) as exc:
        return Fit(found, unreadable=str(exc))
    return Fit(found, meta, stale=staleness(meta, {"articles": articles, "profile": profile}))


@dataclass(frozen=True)
class DeltaStatus:
    scorer: DeltaScorer | None
    problem: str | None = None
    """Why there is no usable model (None when there is one)."""
    trainable: bool = True
    """False when training again would not help (a corpus too small to train on, or a
    model that kept the first-stage order on this corpus): searches then do not ask for it."""
    fits: bool = False
    """A model trained on this corpus is installed (even one that keeps the first-stage
    order): training again on the same corpus would learn the same."""
    news: str | None = None
    """What the last training concluded, for the next search to say once (None: nothing
    to say, or said already)."""
    identity: str = ""
    """Which trained model this is (its training time and directory), for :data:`TOLD`."""


def load_delta(directory: Path | None, store: Store, profile: str | None) -> DeltaStatus:
    from medsearch.rerank.scorer import DeltaScorer, RerankerError

    if directory is None:
        return DeltaStatus(None, "no Delta model for this searcher", trainable=False)
    count = store.count()
    model = fit(directory, count, profile)
    found, meta = model.directory, model.meta
    if found is None:
        if count < MIN_ARTICLES:
            return DeltaStatus(
                None,
                f"the corpus has {count:,} articles; training needs at least {MIN_ARTICLES:,}",
                trainable=False,
            )
        return DeltaStatus(None, "no Delta model has been trained on this corpus yet")
    if model.unreadable is not None:
        return DeltaStatus(
            None,
            f"cannot read the Delta model in {found} ({model.unreadable}); run"
            " `medsearch rerank train` to rebuild it",
        )
    if model.stale is not None:
        return DeltaStatus(None, f"the Delta model is out of date: {model.stale}")
    if float(meta.get("blend", 1.0)) <= 0.0:
        # reordering with it would cost time and change nothing, and training again on
        # the same corpus would decide the same: say so once, and never ask for it
        identity = f"{meta.get('trained_at', '')} {found.resolve().name}"
        outcome = kept_first_stage(meta)
        said = _told(directory.parent) == identity
        return DeltaStatus(
            None,
            outcome,
            trainable=False,
            fits=True,
            news=None if said else outcome,
            identity=identity,
        )
    try:
        scorer = DeltaScorer.load(found)
    except RerankerError as exc:
        return DeltaStatus(None, str(exc))
    return DeltaStatus(scorer, fits=True)


def kept_first_stage(meta: dict[str, Any]) -> str:
    """What a training that kept the first-stage order concluded, with its figures."""
    scores = meta.get("validation") or {}
    blends = [v for k, v in scores.items() if k.startswith("blend_") and k != "blend_0.0"]
    figures = ""
    if blends and "first_stage" in scores:
        first = float(scores["first_stage"])
        figures = f" (nDCG@10 {max(blends):.4f} at best with Delta, {first:.4f} without)"
    on = meta.get("judged_on") or "held-out queries"
    return (
        "rerank train kept the first-stage order: the Delta model did not beat the first"
        f" stage on {on}{figures}, so searches use the first stage until the corpus grows"
        " or shrinks by a quarter"
    )


def told(directory: Path | None, status: DeltaStatus) -> DeltaStatus:
    """``status`` once its news has been said: remembered beside the model, so that the
    next searches (other processes included) do not say it again."""
    if status.news is None or directory is None:
        return status
    target = directory.parent / TOLD
    staged = target.with_name(f"{TOLD}.{os.getpid()}.tmp")
    try:
        staged.write_text(json.dumps({"model": status.identity}), encoding="utf-8")
        os.replace(staged, target)
    except OSError:
        # a data home this user cannot write (shared, read-only): the searches are
        # unharmed, they only say the news again
        staged.unlink(missing_ok=True)
    return replace(status, news=None)


def _told(rerank_dir: Path) -> str | None:
    """The model whose news was said last, if any."""
    try:
        raw = json.loads((rerank_dir / TOLD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return str(raw.get("model")) if isinstance(raw, dict) else None
