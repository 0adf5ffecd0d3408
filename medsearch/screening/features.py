"""TF-IDF features of the records' titles and abstracts, as a SciPy sparse matrix.

The shape of ASReview's default feature extractor (scikit-learn's ``TfidfVectorizer``),
written here on NumPy and SciPy so that screening needs no scikit-learn: words of two or
more letters or digits, lower-cased, English stop words out, unigrams and bigrams, kept
when they occur in at least ``min_df`` records, sublinear term frequency, smooth IDF,
rows scaled to unit length. docs/screening.md has what was measured: unigrams alone
and ``min_df=1`` were within noise of this default (3 seeds, 3 data sets).
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


def tokens(text: str, *, bigrams: bool = True) -> list[str]:
    words = [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]
    if not bigrams:
        return words
    return words + [f"{a} {b}" for a, b in itertools.pairwise(words)]


def tfidf(texts: Sequence[str], *, min_df: int = 2, bigrams: bool = True) -> Features:
    """The TF-IDF matrix of ``texts``."""
    ids: dict[str, int] = {}
    indptr = [0]
    indices: list[int] = []
    data: list[float] = []
    for text in texts:
        counts: dict[int, int] = {}
        for token in tokens(text, bigrams=bigrams):
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
    keep = np.flatnonzero(df >= min(min_df, max(n, 1)))
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
