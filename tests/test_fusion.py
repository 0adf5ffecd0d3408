"""Rank and score fusion, checked against worked examples written out by hand."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from medsearch.retrieval.fusion import FusedHit, reciprocal_rank_fusion, score_fusion


def pmids(hits: list[FusedHit]) -> list[int]:
    return [hit.pmid for hit in hits]


# ---------------------------------------------------------------- reciprocal rank fusion


def test_rrf_worked_example_k60() -> None:
    # lexical: 11, 22, 33      dense: 22, 44, 11
    # 11: 1/(60+1) + 1/(60+3) = 1/61 + 1/63 = 0.0163934 + 0.0158730 = 0.0322664
    # 22: 1/(60+2) + 1/(60+1) = 1/62 + 1/61 = 0.0161290 + 0.0163934 = 0.0325224
    # 33: 1/(60+3)            = 1/63        = 0.0158730
    # 44: 1/(60+2)            = 1/62        = 0.0161290
    # order: 22 > 11 > 44 > 33
    fused = reciprocal_rank_fusion({"lexical": [11, 22, 33], "dense": [22, 44, 11]})
    assert pmids(fused) == [22, 11, 44, 33]
    scores = {hit.pmid: hit.score for hit in fused}
    assert scores[22] == pytest.approx(1 / 62 + 1 / 61)
    assert scores[11] == pytest.approx(1 / 61 + 1 / 63)
    assert scores[44] == pytest.approx(1 / 62)
    assert scores[33] == pytest.approx(1 / 63)
    assert fused[0].sources == ("lexical", "dense")
    assert fused[0].ranks == (("lexical", 2), ("dense", 1))
    assert fused[2].sources == ("dense",)
    assert fused[2].ranks == (("dense", 2),)


def test_rrf_small_k_and_weights() -> None:
    # k=1, weights lexical 2, dense 1; lexical: 5, 6   dense: 6, 5
    # 5: 2/(1+1) + 1/(1+2) = 1 + 0.3333 = 1.3333
    # 6: 2/(1+2) + 1/(1+1) = 0.6667 + 0.5 = 1.1667
    fused = reciprocal_rank_fusion(
        {"lexical": [5, 6], "dense": [6, 5]}, k=1, weights={"lexical": 2.0, "dense": 1.0}
    )
    assert pmids(fused) == [5, 6]
    assert fused[0].score == pytest.approx(2 / 2 + 1 / 3)
    assert fused[1].score == pytest.approx(2 / 3 + 1 / 2)
    # Without the weights the two are tied (1/2 + 1/3 each) and the tie-break decides.
    unweighted = reciprocal_rank_fusion({"lexical": [5, 6], "dense": [6, 5]}, k=1)
    assert unweighted[0].score == pytest.approx(unweighted[1].score)


def test_rrf_source_missing_from_weights_keeps_weight_one() -> None:
    # dense has no weight given -> 1.0: 7 gets 0.5/(60+1) from lexical, 1/(60+1) from dense
    fused = reciprocal_rank_fusion({"lexical": [7], "dense": [7]}, weights={"lexical": 0.5})
    assert fused[0].score == pytest.approx(0.5 / 61 + 1 / 61)


def test_rrf_ties_broken_by_best_rank_then_pmid() -> None:
    # Symmetric lists a: [2, 1], b: [1, 2] -> both score 1/61 + 1/62 and both have
    # best rank 1, so the smaller PMID comes first.
    fused = reciprocal_rank_fusion({"a": [2, 1], "b": [1, 2]})
    assert fused[0].score == fused[1].score
    assert pmids(fused) == [1, 2]
    # Equal score, different best rank (k=0, weight of b = 2):
    # a: [90, 20]   b: [30, 20, 40, 90]
    # 90: 1/1 + 2/4 = 1.5 (best rank 1)     20: 1/2 + 2/2 = 1.5 (best rank 2)
    # 30: 2/1 = 2.0                          40: 2/3 = 0.667
    # 90 beats 20 on best rank although its PMID is larger.
    fused = reciprocal_rank_fusion({"a": [90, 20], "b": [30, 20, 40, 90]}, k=0, weights={"b": 2.0})
    assert pmids(fused) == [30, 90, 20, 40]
    assert [hit.score for hit in fused] == pytest.approx([2.0, 1.5, 1.5, 2 / 3])


def test_rrf_duplicate_in_one_ranking_counts_once_at_first_position() -> None:
    fused = reciprocal_rank_fusion({"lexical": [3, 4, 3]})
    assert {hit.pmid: hit.score for hit in fused} == {3: 1 / 61, 4: 1 / 62}
    assert fused[0].ranks == (("lexical", 1),)


def test_rrf_empty_inputs_and_limit() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"lexical": [], "dense": []}) == []
    # One side empty: the other side's order is kept.
    assert pmids(reciprocal_rank_fusion({"lexical": [], "dense": [8, 9, 7]})) == [8, 9, 7]
    assert pmids(reciprocal_rank_fusion({"dense": [8, 9, 7]}, limit=2)) == [8, 9]
    assert reciprocal_rank_fusion({"dense": [8, 9, 7]}, limit=0) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"dense": [1]}, k=-1)


@given(
    st.dictionaries(
        st.sampled_from(["lexical", "dense", "sentences"]),
        st.lists(st.integers(min_value=1, max_value=40), max_size=15, unique=True),
    )
)
def test_rrf_properties(rankings: dict[str, list[int]]) -> None:
    fused = reciprocal_rank_fusion(rankings)
    expected = {pmid for ranking in rankings.values() for pmid in ranking}
    assert sorted(pmids(fused)) == sorted(expected)
    for hit in fused:
        assert hit.score == pytest.approx(sum(1 / (60 + rank) for _, rank in hit.ranks))
        assert hit.sources == tuple(name for name, _ in hit.ranks)
        assert [n for n in rankings if hit.pmid in rankings[n]] == list(hit.sources)
    keys = [(-h.score, h.best_rank, h.pmid) for h in fused]
    assert keys == sorted(keys)
    # Single ranking: fusion is the identity on order.
    for name, ranking in rankings.items():
        assert pmids(reciprocal_rank_fusion({name: ranking})) == ranking


# ---------------------------------------------------------------- score fusion


def test_score_fusion_minmax_worked_example() -> None:
    # bm25:  1 -> 10.0, 2 -> 6.0, 3 -> 2.0      min 2, max 10, span 8
    #        normalised 1 -> 1.0, 2 -> 0.5, 3 -> 0.0
    # dense: 2 -> 0.9, 4 -> 0.7, 1 -> 0.5       min 0.5, max 0.9, span 0.4
    #        normalised 2 -> 1.0, 4 -> 0.5, 1 -> 0.0
    # missing -> 0: 3 missing from dense, 4 missing from bm25
    # fused: 1 = 1.0 + 0.0 = 1.0;  2 = 0.5 + 1.0 = 1.5;  3 = 0.0 + 0 = 0.0;  4 = 0 + 0.5 = 0.5
    fused = score_fusion(
        {"bm25": [(1, 10.0), (2, 6.0), (3, 2.0)], "dense": [(2, 0.9), (4, 0.7), (1, 0.5)]}
    )
    assert pmids(fused) == [2, 1, 4, 3]
    assert [hit.score for hit in fused] == pytest.approx([1.5, 1.0, 0.5, 0.0])
    by_pmid = {hit.pmid: hit for hit in fused}
    assert by_pmid[2].ranks == (("bm25", 2), ("dense", 1))
    assert by_pmid[4].sources == ("dense",)


def test_score_fusion_weights() -> None:
    # Same lists, weights bm25 0.25, dense 0.75:
    # 1 = 0.25*1.0 + 0.75*0.0 = 0.25;  2 = 0.25*0.5 + 0.75*1.0 = 0.875
    # 3 = 0.0;                          4 = 0.25*0 + 0.75*0.5 = 0.375
    fused = score_fusion(
        {"bm25": [(1, 10.0), (2, 6.0), (3, 2.0)], "dense": [(2, 0.9), (4, 0.7), (1, 0.5)]},
        weights={"bm25": 0.25, "dense": 0.75},
    )
    assert pmids(fused) == [2, 4, 1, 3]
    assert [hit.score for hit in fused] == pytest.approx([0.875, 0.375, 0.25, 0.0])


def test_score_fusion_zscore_worked_example() -> None:
    # a: 1 -> 3.0, 2 -> 1.0     mean 2, population std 1   -> z: 1 -> +1, 2 -> -1
    # b: 2 -> 5.0, 3 -> 5.0, 4 -> 2.0
    #    mean 4, variance ((1)^2 + (1)^2 + (-2)^2)/3 = 2, std sqrt(2) = 1.41421
    #    z: 2 -> 0.70711, 3 -> 0.70711, 4 -> -1.41421 (b's minimum)
    # missing from a -> a's min -1;  missing from b -> b's min -1.41421
    # 1 = +1 - 1.41421 = -0.41421;  2 = -1 + 0.70711 = -0.29289
    # 3 = -1 + 0.70711 = -0.29289;  4 = -1 - 1.41421 = -2.41421
    fused = score_fusion(
        {"a": [(1, 3.0), (2, 1.0)], "b": [(2, 5.0), (3, 5.0), (4, 2.0)]}, normalize="zscore"
    )
    s2 = math.sqrt(2)
    scores = {hit.pmid: hit.score for hit in fused}
    assert scores[1] == pytest.approx(1 - s2)
    assert scores[2] == pytest.approx(-1 + 1 / s2)
    assert scores[3] == pytest.approx(-1 + 1 / s2)
    assert scores[4] == pytest.approx(-1 - s2)
    # 2 and 3 tie on score; 2's best rank is 1 (b: 2 listed before 3 at equal score) -> 2 first
    assert pmids(fused) == [2, 3, 1, 4]


def test_score_fusion_constant_and_single_element_lists() -> None:
    # A one-hit list and a constant list carry only "retrieved": min-max gives them 1.
    # a: 1 -> 7.0 (alone) -> 1.0;   b: 1 -> 0.3, 2 -> 0.3 -> both 1.0
    # 1 = 1 + 1 = 2;  2 = 0 (missing from a) + 1 = 1
    fused = score_fusion({"a": [(1, 7.0)], "b": [(1, 0.3), (2, 0.3)]})
    assert [(hit.pmid, hit.score) for hit in fused] == [(1, 2.0), (2, 1.0)]
    # z-score of a constant list is 0 everywhere: no division by zero, no NaN.
    fused = score_fusion({"a": [(1, 7.0)], "b": [(1, 0.3), (2, 0.3)]}, normalize="zscore")
    assert [hit.score for hit in fused] == [0.0, 0.0]
    assert pmids(fused) == [1, 2]


def test_score_fusion_empty_side_and_limit() -> None:
    assert score_fusion({}) == []
    assert score_fusion({"a": [], "b": []}) == []
    fused = score_fusion({"a": [], "b": [(5, 1.0), (6, 3.0), (7, 2.0)]}, limit=2)
    # b normalised: 6 -> 1.0, 7 -> 0.5, 5 -> 0.0
    assert [(hit.pmid, hit.score) for hit in fused] == [(6, 1.0), (7, 0.5)]
    assert fused[0].ranks == (("b", 1),)


def test_score_fusion_duplicates_keep_higher_score_and_rejects_nan() -> None:
    fused = score_fusion({"a": [(1, 1.0), (2, 2.0), (1, 3.0)]})
    assert pmids(fused) == [1, 2]
    with pytest.raises(ValueError, match="not finite"):
        score_fusion({"a": [(1, float("nan"))]})
    with pytest.raises(ValueError, match="normalisation"):
        score_fusion({"a": [(1, 1.0)]}, normalize="softmax")  # type: ignore[arg-type]
