"""What one chunk of the vector stage is: the texts to encode, the vector ids they
get, the ids they replace, and the ``encoded`` rows the writer records once the chunk's
vectors are committed. Made by the in-process reader and by the reader processes
(:mod:`ingest.encode_readers`) alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ingest.encoded import previous_items, sentence_ids
from medsearch.records import Article
from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.models.host_text import Prepared

ARTICLES, SENTENCES = "articles", "sentences"
_NO_IDS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, slots=True)
class ChunkRows:
    """What the writer stores for one chunk: vector ids, ids to drop first, ``encoded`` rows."""

    ids: np.ndarray
    drop: np.ndarray
    rows: tuple[tuple[int, str, int], ...]  # (pmid, content hash, vectors it now has)


ChunkBuilder = Callable[[Store, list[Article]], tuple[ChunkRows, "Prepared"]]


def article_chunk(
    articles: list[Article], prepare: Callable[[list[str], list[str]], Prepared]
) -> tuple[ChunkRows, Prepared]:
    """One chunk of articles: their ids and ``encoded`` rows, and the prepared pairs."""
    prepared = prepare([a.title for a in articles], [a.abstract_text for a in articles])
    ids = np.array([a.pmid for a in articles], dtype=np.int64)
    rows = tuple((a.pmid, a.content_hash, 1) for a in articles)
    return ChunkRows(ids, _NO_IDS, rows), prepared


def sentence_chunk(
    reader: Store, articles: list[Article], prepare: Callable[[list[str]], Prepared]
) -> tuple[ChunkRows, Prepared]:
    """One chunk's abstract sentences: their ids, the ids they replace, the prepared
    texts and ``encoded`` rows (each article with its sentence count)."""
    from medsearch.sentences import article_sentences

    before = previous_items(reader, SENTENCES, [a.pmid for a in articles])
    drop = [sentence_ids(p, n) for p, n in before.items() if n]
    per_article = [(a, article_sentences(a)) for a in articles]
    texts = [s.text for _, sents in per_article for s in sents]
    ids = np.array([s.sentence_id for _, sents in per_article for s in sents], dtype=np.int64)
    rows = tuple((a.pmid, a.content_hash, len(sents)) for a, sents in per_article)
    dropped = np.concatenate(drop) if drop else _NO_IDS
    return ChunkRows(ids, dropped, rows), prepare(texts)
