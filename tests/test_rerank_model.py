"""The Delta reranker's parts: tokenizer, Delta stage, network, loss, persistence, plan."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from medsearch.errors import UsageError
from medsearch.rerank.lexmatch import IdfTable
from medsearch.rerank.loading import DeltaStatus
from medsearch.rerank.plan import plan_rerank
from medsearch.rerank.scorer import (
    PAD,
    UNK,
    DeltaConfig,
    DeltaScorer,
    Featurised,
    RerankerError,
    Vocabulary,
    blend_order,
    featurise,
    nearest_query_word,
)
from medsearch.rerank.text import (
    DOLLARS,
    FRACTION,
    INTEGER,
    PERCENT,
    REAL,
    YEAR_19,
    YEAR_20,
    head_tokens,
    number_class,
    raw_tokens,
    tokens,
)
from medsearch.training.examples import cross_gains, held_out, ndcg_at, pairs_for
from medsearch.training.net import DeltaNet, pairwise_loss

# -- the paper's tokenizer -------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("12", INTEGER),
        ("1,000", INTEGER),
        ("0.05", FRACTION),
        ("3.5", REAL),
        ("1.0", REAL),
        ("1987", YEAR_19),
        ("2021", YEAR_20),
        ("2100", INTEGER),
        ("45%", PERCENT),
        ("2.5%", PERCENT),
        ("$100", DOLLARS),
        ("il-6", None),
        ("covid-19", None),
        ("brca1", None),
    ],
)
def test_numbers_fall_into_the_papers_seven_classes(token: str, expected: str | None) -> None:
    assert number_class(token) == expected


def test_tokens_are_lower_case_words_with_abbreviations_and_numbers_kept_whole() -> None:
    text = "IL-6 rose 45% (p<0.05) in 2020, e.g. in COVID-19; BRCA1/2 and α-synuclein."
    assert raw_tokens(text) == [
        "il-6", "rose", "45%", "p", "0.05", "in", "2020", "e.g", "in", "covid-19",
        "brca1", "2", "and", "α-synuclein",
    ]  # fmt: skip
    assert tokens(text) == [
        "il-6", "rose", "<percent>", "p", "<fraction>", "in", "<year20xx>", "e.g", "in",
        "covid-19", "brca1", "<int>", "and", "α-synuclein",
    ]  # fmt: skip


def test_the_document_is_title_then_abstract_truncated_to_n_words() -> None:
    words = head_tokens("A short title", " ".join(f"w{i}" for i in range(100)), limit=10)
    assert words == ["a", "short", "title", "w0", "w1", "w2", "w3", "w4", "w5", "w6"]


# -- the Delta stage, by hand ------------------------------------------------------------


def test_delta_stage_matches_a_hand_computed_example() -> None:
    # two query words on the axes; a document word at (3, 4)
    query = np.array([[1.0, 0.0], [0.0, 2.0]], dtype=np.float32)
    words = np.array([[3.0, 4.0]], dtype=np.float32)
    nearest, feats = nearest_query_word(words, query)
    diff = words - query[nearest]
    # distances: to (1,0) sqrt(4+16)=4.472; to (0,2) sqrt(9+4)=3.606 -> nearest is (0,2)
    assert diff.tolist() == [[3.0, 2.0]]
    cos, dist, prox = feats[0]
    assert dist == pytest.approx(math.sqrt(13), rel=1e-5)
    assert cos == pytest.approx(8.0 / (5.0 * 2.0), rel=1e-5)  # (3,4).(0,2) / (|5| |2|)
    assert prox == pytest.approx(1.0 - math.sqrt(13) / (5.0 + 2.0), rel=1e-5)


# -- the network ---------------------------------------------------------------------------


def _vectors(n: int = 60, dim: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors[PAD] = 0.0
    vectors[UNK] = rng.uniform(-0.25, 0.25, dim)
    return vectors


def test_fast_scorer_computes_exactly_what_the_torch_network_computes() -> None:
    config = DeltaConfig(dim=12)
    vectors = _vectors()
    torch.manual_seed(0)
    net = DeltaNet(vectors, config).eval()
    scorer = DeltaScorer(config, Vocabulary({}), vectors, net.numpy_weights(), IdfTable(10, {}, 5))
    rng = np.random.default_rng(1)
    docs = rng.integers(1, len(vectors), size=(5, config.doc_words))
    docs[0, 20:] = PAD  # a short document
    docs[1, :] = PAD  # an empty one
    query = np.array([3, 8, 11])
    lex = rng.normal(size=(5, 3)).astype(np.float32)
    fast = scorer.forward(Featurised(query, docs, lex))
    padded_query = np.tile(np.pad(query, (0, config.query_words - 3)), (5, 1))
    with torch.no_grad():
        slow = net(torch.from_numpy(docs), torch.from_numpy(padded_query), torch.from_numpy(lex))
    np.testing.assert_allclose(fast, slow.numpy(), rtol=1e-4, atol=1e-5)


def test_a_pairwise_loss_step_lowers_the_loss_on_a_toy_batch() -> None:
    config = DeltaConfig(dim=12)
    torch.manual_seed(0)
    net = DeltaNet(_vectors(), config, dropout=0.0)
    rng = np.random.default_rng(2)
    pos = torch.from_numpy(rng.integers(1, 60, size=(16, config.doc_words)))
    neg = torch.from_numpy(rng.integers(1, 60, size=(16, config.doc_words)))
    query = torch.from_numpy(np.tile(np.array([3, 8, 0, 0, 0, 0, 0]), (16, 1)))
    lex_pos, lex_neg = torch.ones(16, 3), torch.zeros(16, 3)
    weight = torch.full((16,), 10.0)  # sqrt of a relevance gap of 100 (pairs_for)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)

    def loss() -> torch.Tensor:
        return pairwise_loss(net(pos, query, lex_pos), net(neg, query, lex_neg), weight)

    before = loss()
    optimiser.zero_grad()
    before.backward()  # type: ignore[no-untyped-call]
    optimiser.step()
    assert loss().item() < before.item()


def test_the_loss_is_the_papers_weighted_hinge() -> None:
    pos, neg = torch.tensor([2.0, 0.5]), torch.tensor([0.0, 0.0])
    # pair 1 is separated by more than the margin; pair 2 costs 1 - 0.5 = 0.5, weighted 4
    assert pairwise_loss(pos, neg, torch.tensor([1.0, 4.0])).item() == pytest.approx(1.0)


# -- persistence ---------------------------------------------------------------------------


def _scorer(meta: dict[str, object] | None = None) -> DeltaScorer:
    config = DeltaConfig(dim=12)
    torch.manual_seed(0)
    net = DeltaNet(_vectors(), config)
    words = {"<pad>": 0, "<unk>": 1, **{f"w{i}": i for i in range(2, 60)}}
    idf = IdfTable(docs=100, df={"w2": 50, "w3": 2}, mean_abstract_words=120.0)
    return DeltaScorer(config, Vocabulary(words), _vectors(), net.numpy_weights(), idf, meta or {})


def test_save_and_load_round_trip_scores_the_same(tmp_path: Path) -> None:
    scorer = _scorer({"blend": 0.5})
    docs = [("w2 w3 title", "w4 w5 w6 abstract 12"), ("w7", "w2 w2 w2"), ("", "")]
    before = scorer.score("w2 w9 query", docs)
    scorer.save(tmp_path / "delta")
    loaded = DeltaScorer.load(tmp_path / "delta")
    assert loaded.blend == 0.5
    assert loaded.idf.df == {"w2": 50, "w3": 2}
    np.testing.assert_allclose(loaded.score("w2 w9 query", docs), before, rtol=1e-3, atol=1e-3)
    assert not (tmp_path / "delta.tmp").exists()


def test_a_damaged_model_is_a_clear_error(tmp_path: Path) -> None:
    _scorer().save(tmp_path / "delta")
    (tmp_path / "delta" / "weights.npz").write_bytes(b"not a zip")
    with pytest.raises(RerankerError, match="rerank train"):
        DeltaScorer.load(tmp_path / "delta")


def test_lexical_features_read_bm25_and_idf_weighted_title_overlap() -> None:
    idf = IdfTable(docs=100, df={"rare": 1, "common": 90}, mean_abstract_words=4.0)
    vocab = Vocabulary({"<pad>": 0, "<unk>": 1})
    config = DeltaConfig()
    out = featurise(
        "rare common",
        [("rare title", "rare rare x y"), ("common title", "x y z w"), ("nothing", "")],
        vocab,
        idf,
        config,
    )
    bm25, jaccard, coverage = out.lex.T
    assert bm25[0] > 0 and bm25[1] == 0 and bm25[2] == 0
    # title 1 holds the rare word (high IDF), title 2 the common one: coverage follows IDF
    assert coverage[0] > 0.5 > coverage[1] > 0 and coverage[2] == 0
    assert 0 < jaccard[1] < jaccard[0] < coverage[0]
    assert out.doc_ids[0, :2].tolist() == [UNK, UNK]  # words without vectors are UNK


# -- blending, examples, plan ----------------------------------------------------------


def test_blend_zero_keeps_the_first_stage_and_one_is_delta_alone() -> None:
    scores = np.array([0.1, 0.9, 0.5], dtype=np.float32)
    assert blend_order(scores, 0.0) == [0, 1, 2]
    assert blend_order(scores, 1.0) == [1, 2, 0]


def test_pairs_weight_each_graded_document_by_the_square_root_of_the_gap() -> None:
    import random

    pairs = pairs_for([100.0, 0.0, 36.0, 0.0], negatives=5, rng=random.Random(0))
    got = {(a, b): w for a, b, w in pairs}
    assert got[(0, 1)] == pytest.approx(10.0)
    assert got[(0, 2)] == pytest.approx(8.0)  # sqrt(100 - 36)
    assert got[(2, 3)] == pytest.approx(6.0)
    assert (2, 0) not in got and (1, 3) not in got


def test_ndcg_and_cross_gains() -> None:
    assert ndcg_at([0, 1], [100.0, 0.0]) == pytest.approx(1.0)
    assert ndcg_at([1, 0], [100.0, 0.0]) == pytest.approx(1 / math.log2(3))
    gains = cross_gains(np.array([3.0, 1.0, -2.0]))
    assert gains[0] > gains[1] > gains[2] >= 1.0 and gains.max() <= 99.0
    assert held_out("a query") == held_out("a query")


NO_MODEL = DeltaStatus(None, "no Delta model has been trained on this corpus yet")
MODEL = DeltaStatus(_scorer())


@pytest.mark.parametrize(
    ("choice", "device", "delta", "cross", "expected"),
    [
        ("auto", "cpu", MODEL, True, (True, True)),  # Delta now, cross-encoder on the head later
        ("auto", None, MODEL, False, (True, False)),  # lexical-only corpus on a laptop
        ("auto", "cuda", MODEL, True, (False, True)),  # a GPU reranks with the cross-encoder
        ("auto", "cuda", MODEL, False, (True, False)),
        ("auto", "cpu", NO_MODEL, True, (False, True)),  # no Delta model: the cross-encoder alone
        ("delta", "cuda", MODEL, True, (True, False)),
        ("cross", "cpu", MODEL, True, (False, True)),
        ("none", "cpu", MODEL, True, (False, False)),
    ],
)
def test_which_rerankers_a_choice_means(
    choice: str, device: str | None, delta: DeltaStatus, cross: bool, expected: tuple[bool, bool]
) -> None:
    plan = plan_rerank(choice, device=device, delta=delta, has_cross=cross)
    assert (plan.delta, plan.cross) == expected


def test_without_a_model_searches_say_how_to_train_one_unless_the_corpus_is_too_small() -> None:
    plan = plan_rerank("auto", device=None, delta=NO_MODEL, has_cross=False)
    assert any("medsearch rerank train" in n for n in plan.notes)
    small = DeltaStatus(None, "too small", trainable=False)
    assert plan_rerank("auto", device=None, delta=small, has_cross=False).notes == ()
    asked = plan_rerank("delta", device=None, delta=small, has_cross=False)
    assert not asked.delta and "too small" in asked.notes[0]
    assert "rerank train" not in asked.notes[0]  # training would refuse it


def test_a_kept_first_stage_order_is_news_for_one_search_then_silence() -> None:
    kept = DeltaStatus(None, "kept the first stage", trainable=False, fits=True, news="kept it")
    first = plan_rerank("auto", device="cpu", delta=kept, has_cross=False)
    assert (first.delta, first.notes, first.news) == (False, ("kept it",), True)
    said = DeltaStatus(None, "kept the first stage", trainable=False, fits=True)
    assert plan_rerank("auto", device="cpu", delta=said, has_cross=False).notes == ()
    asked = plan_rerank("delta", device="cpu", delta=said, has_cross=False)
    assert asked.notes == ("Delta reranker unavailable (kept the first stage)",)
    with pytest.raises(UsageError, match="unknown reranker"):
        plan_rerank("bm25", device=None, delta=MODEL, has_cross=False)
