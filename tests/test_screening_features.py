"""The screening model's TF-IDF features are ASReview 2's ``elas_u4`` features: unigrams
and bigrams, stop words kept, a term seen once kept, a term in more than 95% of the
records dropped, sublinear term frequency, unit rows; and ``elas`` is its linear SVM."""

from __future__ import annotations

import numpy as np

from medsearch.screening.features import tfidf
from medsearch.screening.model import fit


def test_the_features_are_elas_u4s() -> None:
    texts = [f"trial {i} of statins and not placebo" for i in range(19)] + [
        "trial zebrafish zebrafish zebrafish"
    ]
    features = tfidf(texts)
    vocabulary = features.vocabulary
    assert "trial" not in vocabulary  # in all 20 records: more than 95%
    assert "not" in vocabulary and "and not" in vocabulary  # stop words kept, in bigrams
    assert "zebrafish" in vocabulary  # in one record only: kept (min_df 1)
    row = features.matrix[19].toarray().ravel()
    assert np.isclose(np.linalg.norm(row), 1.0)
    # sublinear tf: three zebrafish weigh 1 + ln 3 times one "trial zebrafish", not 3 times
    z, tz = row[vocabulary["zebrafish"]], row[vocabulary["trial zebrafish"]]
    idf_ratio = 1.0  # both occur in one record: the same idf
    assert np.isclose(z / tz, (1 + np.log(3)) * idf_ratio, rtol=1e-5)


def test_records_sharing_every_word_still_have_features() -> None:
    assert tfidf(["statin trial", "statin trial"]).matrix.shape[1] > 0


def test_the_elas_model_ranks_the_relevant_words_first() -> None:
    texts = ["statin cholesterol trial", "surgery knee", "statin ldl", "knee brace", "statin"]
    matrix = tfidf(texts).matrix
    fitted = fit("elas", matrix, np.array([0, 1]), np.array([1, 0]))
    scores = fitted.scores(matrix)
    assert scores[2] > scores[3] and scores[4] > scores[3]
