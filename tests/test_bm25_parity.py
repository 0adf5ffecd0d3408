"""tantivy's BM25 as we query it agrees with rank_bm25, the reference implementation.

One text field, no boosts, the same tokens on both sides (our analyzer's output). tantivy
uses Lucene's idf, ``ln(1 + (N - n + 0.5) / (n + 0.5))``, which never goes negative;
rank_bm25's ``BM25Okapi`` uses ``ln((N - n + 0.5) / (n + 0.5))`` with a floor, so the
oracle gets Lucene's idf and tantivy's k1 = 1.2, b = 0.75. Documents are at most 40
tokens, where tantivy's one-byte field-length encoding is exact, so scores match closely
and rankings must agree except between near-ties.
"""

from __future__ import annotations

import itertools
import math
import random
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex, Ranking
from medsearch.records import Article

# letters only, so each word is one token (a digit would split it: "w1x" -> w 1 x)
VOCABULARY = [f"z{a}{b}q" for a in "bcdfghjk" for b in "aeiouy"][:60]


class LuceneBM25(BM25Okapi):  # type: ignore[misc]
    """rank_bm25's Okapi scoring with Lucene's (tantivy's) idf."""

    def _calc_idf(self, nd: dict[str, int]) -> None:
        self.idf = {
            word: math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))
            for word, freq in nd.items()
        }


def make_corpus(seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]  # Zipf-like
    return [rng.choices(VOCABULARY, weights=weights, k=rng.randint(3, 40)) for _ in range(150)]


@pytest.mark.parametrize("seed", [0, 1])
def test_tantivy_bm25_ranks_like_rank_bm25(tmp_path: Path, seed: int) -> None:
    docs = make_corpus(seed)
    index = LexicalIndex.open(tmp_path / "lexical")
    index.upsert([Article(pmid=i + 1, title=" ".join(d)) for i, d in enumerate(docs)])
    index.commit()
    analyzers = ls.analyzers()
    oracle = LuceneBM25(
        [[t for _, t in analyzers.tokens(" ".join(d))] for d in docs], k1=1.2, b=0.75
    )
    single_field = Ranking(fields=((ls.TITLE, 1.0),), drop_stop_words=False)
    rng = random.Random(seed + 100)
    for _ in range(25):
        query = rng.sample(VOCABULARY, rng.randint(1, 3))
        expected = oracle.get_scores([t for _, t in analyzers.tokens(" ".join(query))])
        hits = index.search(" ".join(query), k=len(docs), ranking=single_field, snippets=0).hits
        got = {h.pmid - 1: h.score for h in hits}
        matching = {i for i, d in enumerate(docs) if set(query) & set(d)}
        assert set(got) == matching
        for i in matching:
            assert got[i] == pytest.approx(expected[i], rel=1e-3)
        order = [h.pmid - 1 for h in hits]
        for better, worse in itertools.pairwise(order):
            assert expected[better] >= expected[worse] - 1e-4 * abs(expected[better])
    index.close()
