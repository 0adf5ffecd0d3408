"""The dense side: an encoder plus the article and sentence vector collections.

Filters must not empty the dense side. When filters are given we ask the lexical index
(which holds year, journal, type and language as indexed fields) for the set of PMIDs
that pass; a set up to ``ALLOWED_MAX`` is searched exactly inside, anything larger is
searched deeper and filtered afterwards, deepening until enough hits survive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from medsearch.errors import NotFoundError, UsageError, VectorsMissingError
from medsearch.records import split_sentence_id

if TYPE_CHECKING:
    from medsearch.index.vector import VectorCollection
    from medsearch.models.encoders import Encoder

ALLOWED_MAX = 200_000  # exact search over this many filtered vectors stays < ~50 ms at 768-d
DEEPEN = (4, 16, 64)  # over-fetch factors tried when post-filtering


@dataclass
class DenseSide:
    encoder: Encoder
    articles: VectorCollection
    sentences: VectorCollection | None = None

    def close(self) -> None:
        self.articles.close()
        if self.sentences is not None:
            self.sentences.close()

    def encode_query(self, text: str) -> np.ndarray:
        if not text.strip():
            raise UsageError("the text to search with is empty")
        return self.encoder.encode_queries([text])

    def search_vector(
        self,
        vector: np.ndarray,
        k: int,
        *,
        allowed: np.ndarray | None = None,
        accept: Callable[[Sequence[int]], set[int]] | None = None,
        exclude: frozenset[int] = frozenset(),
    ) -> list[tuple[int, float]]:
        """Top ``k`` articles by inner product, honouring a filter given either way."""
        if allowed is not None:
            found = self.articles.search(vector, k + len(exclude), allowed_ids=allowed)[0]
            return [(i, s) for i, s in found if i not in exclude][:k]
        hits: list[tuple[int, float]] = []
        for factor in DEEPEN if accept is not None else (1,):
            fetch = k * factor + len(exclude)
            raw = self.articles.search(vector, fetch, allowed_ids=None)[0]
            raw = [(i, s) for i, s in raw if i not in exclude]
            if accept is not None:
                ok = accept([i for i, _ in raw])
                raw = [(i, s) for i, s in raw if i in ok]
            hits = raw[:k]
            if len(hits) >= k or len(raw) < fetch - len(exclude):
                break
        return hits

    def article_vector(self, pmid: int) -> np.ndarray:
        if not self.articles.contains(np.array([pmid], dtype=np.int64))[0]:
            raise VectorsMissingError(
                f"PMID {pmid} has no article vector yet; run `medsearch ingest` to encode it"
            )
        return self.articles.get(np.array([pmid], dtype=np.int64))

    def search_sentences(self, text: str, k: int) -> list[tuple[int, int, float]]:
        """(pmid, position, score) of the nearest abstract sentences."""
        if self.sentences is None or len(self.sentences) == 0:
            raise VectorsMissingError(
                "no sentence vectors yet; run `medsearch ingest` (without --no-encode)"
            )
        hits = self.sentences.search(self.encode_query(text), k)[0]
        out = []
        for sid, score in hits:
            pmid, position = split_sentence_id(sid)
            out.append((pmid, position, score))
        return out

    def best_sentence(self, query_vec: np.ndarray, pmid: int, count: int) -> tuple[int, float]:
        """The abstract sentence of ``pmid`` closest to the query (the evidence shown)."""
        if self.sentences is None or count == 0:
            raise NotFoundError(f"PMID {pmid} has no sentence vectors")
        ids = np.arange(count, dtype=np.int64) + pmid * 1000
        present = ids[self.sentences.contains(ids)]
        if len(present) == 0:
            raise NotFoundError(f"PMID {pmid} has no sentence vectors")
        vecs = self.sentences.get(present)
        scores = vecs @ query_vec.reshape(-1)
        best = int(np.argmax(scores))
        return int(present[best] - pmid * 1000), float(scores[best])
