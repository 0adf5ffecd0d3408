"""TF-IDF features of the records' titles and abstracts, as a SciPy sparse matrix.

The shape of ASReview's default feature extractor (scikit-learn's ``TfidfVectorizer``),
written here on NumPy and SciPy so that screening needs no scikit-learn: words of two or
more letters or digits, lower-cased, unigrams and bigrams, stop words kept, a term
dropped when it is in more than 95% of the records (ASReview 2's ``elas_u4``:
``ngram_range=(1, 2), sublinear_tf=True, min_df=1, max_df=0.95``), sublinear term
frequency, smooth IDF, rows scaled to unit length. docs/screening.md has what was
measured: these settings lowered the mean normalised loss by about 10% against the
first release's (``min_df=2``, English stop words out) on three Cohen data sets.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

_WORD = re.compile(r"(?u)\b\w\w+\b")

STOP_WORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "also",
        "however",
        "may",
        "might",
        "must",
        "shall",
        "study",
    ]
)


@dataclass(frozen=True)
class Features:
    """One row per record (in the order given), L2-normalised TF-IDF."""

    matrix: sp.csr_matrix
    vocabulary: dict[str, int]


def tokens(text: str, *, bigrams: bool = True, stop_words: bool = True) -> list[str]:
    words = _WORD.findall(text.lower())
    if stop_words:
        words = [w for w in words if w not in STOP_WORDS]
    if not bigrams:
        return words
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def tfidf(
    texts: Sequence[str],
    *,
    min_df: int = 1,
    max_df: float = 0.95,
    bigrams: bool = True,
    stop_words: bool = False,
) -> Features:
    """The TF-IDF matrix of ``texts``. ``max_df`` drops terms in more than that share
    of the records; ``stop_words=True`` drops English stop words. The defaults are
    ASReview's ``elas_u4`` features (``min_df=1, max_df=0.95``, stop words kept), which
    measured better than ``min_df=2`` without stop words (docs/screening.md)."""
    ids: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for text in texts:
        counts: dict[int, int] = {}
        for token in tokens(text, bigrams=bigrams, stop_words=stop_words):
            j = ids.setdefault(token, len(ids))
            counts[j] = counts.get(j, 0) + 1
        indices.extend(counts)
        data.extend(counts.values())
        indptr.append(len(indices))
    n = len(texts)
    raw = sp.csr_matrix(
        (np.asarray(data, dtype=np.float64), np.asarray(indices, dtype=np.int64), indptr),
        shape=(n, max(len(ids), 1)),
    )
    df = np.bincount(raw.indices, minlength=raw.shape[1])
    keep = np.flatnonzero((df >= min(min_df, max(n, 1))) & (df <= max(max_df * n, 1)))
    if len(keep) == 0:  # a handful of records sharing every word: keep them all
        keep = np.flatnonzero(df >= 1)
    raw = raw[:, keep].tocsr()
    df = df[keep]
    names = {j: t for t, j in ids.items()}
    vocabulary = {names[int(j)]: k for k, j in enumerate(keep)}
    raw.data = 1.0 + np.log(raw.data)  # sublinear tf
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    matrix = (raw @ sp.diags(idf)).tocsr()
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    matrix = sp.diags(1.0 / norms) @ matrix
    return Features(sp.csr_matrix(matrix, dtype=np.float32), vocabulary)
