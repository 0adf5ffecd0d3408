"""How close each of a candidate set's articles is to a seed set, by the hybrid
searcher's own two sides restricted to the candidates (what ``snowball`` ranks by).

- **Lexical**: the seeds' titles, MeSH headings and keywords as one plain-words query,
  scored by BM25 among the candidates alone (:meth:`LexicalIndex.scores` inside
  :meth:`LexicalIndex.within`): the index's corpus-wide IDF, not the few hundred
  candidates'. Abstracts are left out: a dozen seeds' abstracts are a thousand words,
  and the titles and headings already say what the seeds are about.
- **Dense**, when the home has vectors: the mean of the seeds' stored article vectors
  (no encoder loads: they are already encoded), searched with the candidates as the
  allowed ids, which the vector collection scores exactly while the set is small
  (``exact_filter_max``), as a set query's dense side does.

The two orders are fused by reciprocal rank fusion with the searcher's ``rrf_k``, as
a hybrid search fuses them. Candidates neither side scores come last.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from medsearch.errors import MedsearchError
from medsearch.records import Article

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher


@dataclass(frozen=True, slots=True)
class SeedScores:
    """Each scored candidate's fused score; ``mode``: "hybrid" or "lexical";
    ``notes``: why the dense side did not take part, when it did not."""

    scores: dict[int, float]
    mode: str
    notes: tuple[str, ...] = ()


def seed_text(seeds: Iterable[Article]) -> str:
    """What the seeds are about, as plain words: titles, MeSH headings, keywords."""
    parts: list[str] = []
    for article in seeds:
        parts.append(article.title)
        parts.extend(m.descriptor for m in article.mesh)
        parts.extend(article.keywords)
    return " ".join(p for p in parts if p)


def lexical_order(searcher: Searcher, text: str, candidates: Sequence[int]) -> list[int]:
    """The candidates the seeds' words match, best BM25 first (ties by PMID)."""
    from medsearch.query.parser import parse_plain

    if not text.strip() or not candidates:
        return []
    lexical = searcher.lexical
    scores = lexical.scores(candidates, parse_plain(text), within=lexical.within(candidates))
    return sorted(scores, key=lambda p: (-scores[p], p))


def dense_order(searcher: Searcher, seeds: Sequence[int], candidates: Sequence[int]) -> list[int]:
    """The candidates with vectors, nearest to the seeds' mean vector first."""
    dense = searcher.dense_side("ranking by the seeds")
    collection = dense.articles
    seed_ids = np.asarray(seeds, dtype=np.int64)
    seed_ids = seed_ids[collection.contains(seed_ids)]
    allowed = np.asarray(candidates, dtype=np.int64)
    allowed = allowed[collection.contains(allowed)]
    if not len(seed_ids) or not len(allowed):
        return []
    centre = collection.get(seed_ids).mean(axis=0, keepdims=True).astype(np.float32)
    norm = float(np.linalg.norm(centre))
    if norm > 0:
        centre /= norm
    pairs = dense.search_vector(centre, len(allowed), allowed=allowed)
    return [p for p, _ in pairs]


def rank_by_seeds(
    searcher: Searcher, seeds: dict[int, Article], candidates: Sequence[int]
) -> SeedScores:
    """Fused scores of ``candidates`` (stored PMIDs) against ``seeds`` (their records)."""
    from medsearch.retrieval.fusion import reciprocal_rank_fusion

    rankings = {"lexical": lexical_order(searcher, seed_text(seeds.values()), candidates)}
    notes: list[str] = []
    mode = "lexical"
    if searcher.has_vectors:
        try:
            rankings["dense"] = dense_order(searcher, sorted(seeds), candidates)
            mode = "hybrid"
        except MedsearchError as exc:
            notes.append(f"ranked by words alone: {exc}")
    fused = reciprocal_rank_fusion(rankings, k=searcher.settings.rrf_k)
    return SeedScores({f.pmid: f.score for f in fused}, mode, tuple(notes))
