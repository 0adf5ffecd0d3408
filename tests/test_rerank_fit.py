"""Whether an installed Delta model still fits the corpus: the one rule that searches
(when they load the model) and ingest (when it offers training) both apply."""

from __future__ import annotations

import json
from pathlib import Path

from medsearch.rerank.loading import fit


def install_meta(link: Path, meta: object) -> None:
    link.mkdir(parents=True, exist_ok=True)
    (link / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def test_a_model_fits_until_the_corpus_grows_or_shrinks_by_a_quarter(tmp_path: Path) -> None:
    link = tmp_path / "rerank" / "delta"
    assert fit(link, 5_000, None).directory is None  # nothing installed yet
    install_meta(link, {"corpus": {"articles": 4_000, "profile": "medcpt"}})
    assert fit(link, 5_000, "medcpt").stale is None
    assert fit(link, 3_000, "medcpt").stale is None
    grown = fit(link, 5_001, "medcpt").stale
    assert grown == "it was trained on 4,000 articles and the corpus now has 5,001"
    assert fit(link, 2_999, "medcpt").stale is not None


def test_a_model_distilled_from_one_profile_does_not_fit_another(tmp_path: Path) -> None:
    link = tmp_path / "rerank" / "delta"
    trained = {"corpus": {"articles": 4_000, "profile": "medcpt"}}
    install_meta(link, {**trained, "used_profile": False})
    assert fit(link, 4_000, "minilm").stale is None  # the profile was not a signal
    install_meta(link, {**trained, "used_profile": True})
    assert fit(link, 4_000, "minilm").stale == "it was trained with model profile 'medcpt'"


def test_an_unreadable_model_is_said_so_not_raised(tmp_path: Path) -> None:
    link = tmp_path / "rerank" / "delta"
    install_meta(link, ["not", "an", "object"])
    found = fit(link, 4_000, None)
    assert found.directory == link and found.unreadable and found.stale is None
