"""The dense side: the article and sentence vector collections, plus an encoder.

The encoder loads on first use, not with the vectors: neighbours of a stored article
vector need no model at all (see :mod:`medsearch.retrieval.sources`).

Filters must not empty the dense side. When filters are given we ask the lexical index
(which holds year, journal, type and language as indexed fields) for the set of PMIDs
that pass; a set up to ``ALLOWED_MAX`` is searched exactly inside, anything larger is
searched deeper and filtered afterwards, deepening until enough hits survive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from medsearch import heap
from medsearch.errors import IndexMismatchError, UsageError, VectorsMissingError
from medsearch.records import split_sentence_id

if TYPE_CHECKING:
    from medsearch.errors import MedsearchError
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_index import SentenceCollection
    from medsearch.models.encoders import Encoder

ALLOWED_MAX = 200_000  # exact search over this many filtered vectors stays < ~50 ms at 768-d
DEEPEN = (4, 16, 64)  # over-fetch factors tried when post-filtering

# Compressed sentence candidates re-scored exactly by re-encoding their text.
# benchmarks/sentence_index.py (BENCHMARKS.md): recall@10 against exact inner product
# was 0.986 on real minilm sentences and 0.956 on 1M synthetic 768-d vectors with 400
# candidates (0.98 / 0.85 with 100). 400 sentences are ~14K tokens: one batch, ~15 ms
# on a GPU, seconds on a CPU (measured there); lower it for CPU-only interactive use.
SENTENCE_CANDIDATES = 400
SENTENCE_CANDIDATES_CPU = 100  # the default on a CPU ([search] sentence_candidates)

SentenceTexts = Callable[[Sequence[int]], dict[int, str]]


@dataclass
class DenseSide:
    articles: VectorCollection
    load_encoder: Callable[[], Encoder]
    """Loads the profile's encoders (seconds; a missing model raises its ModelError)."""
    sentences: SentenceCollection | None = None
    sentences_error: MedsearchError | None = None  # why sentence vectors cannot be used
    sentence_candidates: int | None = None
    """``[search] sentence_candidates``; when None, set by the encoder's device as it loads."""
    _encoder: Encoder | None = field(default=None, init=False, repr=False)

    @property
    def encoder(self) -> Encoder:
        """The encoders, loaded on first use and checked against the stored vectors' size."""
        if self._encoder is None:
            encoder = self.load_encoder()
            for collection in (self.articles, self.sentences):
                if collection is not None and collection.dim != encoder.dim:
                    raise IndexMismatchError(
                        f"the vectors at {collection.path} have {collection.dim} dimensions,"
                        f" the model {encoder.profile.name!r} gives {encoder.dim}"
                    )
            self._encoder = encoder
            heap.settle()  # the model's objects live as long as the process
            if self.sentence_candidates is None:
                cpu = encoder.device == "cpu"
                self.sentence_candidates = SENTENCE_CANDIDATES_CPU if cpu else SENTENCE_CANDIDATES
        return self._encoder

    @property
    def device(self) -> str | None:
        """Where the encoders run; None until they are loaded."""
        return self._encoder.device if self._encoder is not None else None

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

    def search_sentences(
        self, text: str, k: int, sentence_texts: SentenceTexts
    ) -> list[tuple[int, int, float]]:
        """(pmid, position, score) of the nearest abstract sentences, exact scores.

        A compressed collection proposes :attr:`sentence_candidates`; their text
        (``sentence_texts``: sentence id -> text, from the store) is re-encoded with the
        query encoder in one batch and scored exactly, as the sentences were encoded.
        """
        if self.sentences_error is not None:
            raise self.sentences_error
        if self.sentences is None or len(self.sentences) == 0:
            raise VectorsMissingError(
                "no sentence vectors yet; run `medsearch ingest` (without --no-encode)"
            )
        query = self.encode_query(text)
        if self.sentences.exact:
            hits = self.sentences.search(query, k)[0]
        else:
            found = self.sentences.search(
                query, max(k, self.sentence_candidates or SENTENCE_CANDIDATES)
            )[0]
            hits = self.rescore(query, [sid for sid, _ in found], sentence_texts, k)
        out = []
        for sid, score in hits:
            pmid, position = split_sentence_id(sid)
            out.append((pmid, position, score))
        return out

    def rescore(
        self, query: np.ndarray, ids: Sequence[int], sentence_texts: SentenceTexts, k: int
    ) -> list[tuple[int, float]]:
        """Top ``k`` of ``ids`` by exact inner product with re-encoded sentence text.

        Ids whose text is gone (article deleted or shortened since it was encoded) drop
        out; ties go to the smaller id so the order is deterministic.
        """
        texts = sentence_texts(ids)
        kept = np.array([i for i in ids if i in texts], dtype=np.int64)
        if len(kept) == 0:
            return []
        vectors = self.encoder.encode_sentences([texts[int(i)] for i in kept])
        scores = vectors @ np.asarray(query, dtype=np.float32).reshape(-1)
        order = np.lexsort((kept, -scores))[:k]
        return [(int(kept[i]), float(scores[i])) for i in order]

    def best_sentences(self, query: np.ndarray, groups: Sequence[Sequence[str]]) -> list[int]:
        """Per group of sentences (one article's), the position closest to ``query``.

        Sentence vectors are not stored (only codes), so the candidates' sentences are
        encoded here, every group in one batch; an empty group gives -1.
        """
        flat = [t for group in groups for t in group]
        if not flat:
            return [-1 for _ in groups]
        scores = self.encoder.encode_sentences(flat) @ np.asarray(query).reshape(-1)
        out, start = [], 0
        for group in groups:
            part = scores[start : start + len(group)]
            out.append(int(np.argmax(part)) if len(part) else -1)
            start += len(group)
        return out
