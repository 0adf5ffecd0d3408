"""A model folder that ships only ``pytorch_model.bin`` gets the NumPy query path too.

CPU searches encode the query in NumPy from a memory-mapped ``model.safetensors``
(issue 42); a folder with only the pickled ``.bin`` would import torch on every search.
``medsearch models download`` converts such a folder once (:func:`ensure_safetensors`).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from tiny_models import (  # noqa: F401  (session fixture)
    TinyModels,
    install_in_hub_cache,
    tiny_models_fixture,
    tiny_profile_for,
)

from medsearch.models.cache import ensure_safetensors, locate_model
from medsearch.models.numpy_bert import NumpyQueryEncoder, load_numpy_query_encoder
from medsearch.paths import Paths


def _bin_only_copy(source: Path, target: Path) -> Path:
    """``source`` with its weights as ``pytorch_model.bin`` only, as older hub repos ship.

    transformers 5 ignores ``save_pretrained(safe_serialization=False)`` and writes
    safetensors regardless, so the ``.bin`` is written the way transformers 4 did it:
    ``torch.save`` of the state dict."""
    import torch
    from safetensors.torch import load_file

    shutil.copytree(source, target)
    state = load_file(str(target / "model.safetensors"))
    torch.save(state, target / "pytorch_model.bin")
    (target / "model.safetensors").unlink()
    return target


@pytest.fixture(scope="module")
def bin_only(tiny_models: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _bin_only_copy(tiny_models.query_dir, tmp_path_factory.mktemp("bin") / "query")


def test_a_bin_only_folder_is_converted_once_and_then_takes_the_numpy_path(
    bin_only: Path, tiny_models: TinyModels, tmp_path: Path
) -> None:
    paths = Paths(tmp_path / "home")
    snapshot = install_in_hub_cache(paths.models_cache, "org/tiny-query", bin_only)
    assert not (snapshot / "model.safetensors").exists()
    profile = tiny_profile_for(tiny_models)
    asked: list[str] = []

    def full() -> NumpyQueryEncoder:
        asked.append("torch")
        raise AssertionError("the torch encoder is not needed for a query")

    assert load_numpy_query_encoder(profile, snapshot, full) is None  # before: torch

    assert ensure_safetensors(snapshot) is True
    assert (snapshot / "model.safetensors").is_file()
    assert not (snapshot / "model.safetensors.partial").exists()
    assert ensure_safetensors(snapshot) is False  # once: a second call writes nothing
    assert locate_model("org/tiny-query", paths).path == snapshot

    light = load_numpy_query_encoder(profile, snapshot, full)
    assert isinstance(light, NumpyQueryEncoder)
    reference = load_numpy_query_encoder(profile, tiny_models.query_dir, full)
    assert reference is not None
    texts = ["cataract surgery", "risk of retina surgery in children"]
    np.testing.assert_allclose(
        light.encode_queries(texts), reference.encode_queries(texts), rtol=1e-5, atol=1e-6
    )
    assert asked == []


def test_a_folder_with_safetensors_or_without_weights_is_left_alone(
    tiny_models: TinyModels, tmp_path: Path
) -> None:
    shipped = shutil.copytree(tiny_models.query_dir, tmp_path / "shipped")
    before = (shipped / "model.safetensors").stat().st_mtime_ns
    assert ensure_safetensors(shipped) is False
    assert (shipped / "model.safetensors").stat().st_mtime_ns == before
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ensure_safetensors(empty) is False
    assert list(empty.iterdir()) == []
