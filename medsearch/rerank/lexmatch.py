"""The three lexical-match features of the paper's "Delta-32-Lex3" model.

Chosen there by greedy search over 18 candidates: BM25 of the query on the abstract
(which makes up for the network reading only the first 50 words), and the IDF-weighted
Jaccard similarity and IDF-weighted query coverage of the title (which catch exact
matches of words the word vectors do not know). Tokens are the paper's, with numbers as
written and no rare-word conflation; document frequencies come from the user's corpus.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

BM25_K1 = 1.2
BM25_B = 0.75
LEX_FEATURES = ("bm25_abstract", "idf_jaccard_title", "idf_coverage_title")
"""In the order the network reads them (:func:`medsearch.rerank.scorer.featurise`)."""


@dataclass(frozen=True)
class IdfTable:
    """Document frequencies from the corpus (or the sample the reranker trained on)."""

    docs: int
    df: Mapping[str, int]
    mean_abstract_words: float

    def idf(self, word: str) -> float:
        df = self.df.get(word, 0)
        return math.log(1.0 + (self.docs - df + 0.5) / (df + 0.5))
