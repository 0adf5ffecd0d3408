"""Rank and score fusion: merge the lexical and dense result lists into one.

The functions are pure: they take what each retriever returned (PMIDs in rank order, or
``(pmid, score)`` pairs) and give back one list of :class:`FusedHit`, best first. They
know nothing about indexes, so the hybrid searcher can be assembled from any retrievers
and these functions can be checked against worked examples by hand.

Reciprocal rank fusion is the default in the hybrid searcher because it needs no score
calibration: BM25 scores are unbounded and query-dependent, MedCPT scores are raw inner
products, and only their ranks are comparable. Score fusion is there for experiments
(``eval --mode hybrid``) where normalised scores may carry more information than ranks.

Determinism: equal fused scores are broken by the best single rank a document reached
in any list (a document some retriever put first beats one that was only ever second),
then by the smaller PMID. ``sources`` lists the retrievers that returned a document in
the order the caller's mapping gives them, so the output never depends on set order.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from medsearch.retrieval.results import Candidate

RRF_K = 60  # Cormack et al. 2009: k=60 was near-optimal across their TREC runs


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One document after fusion.

    ``ranks`` pairs each source that returned the document with its 1-based rank there,
    in the same order as ``sources``; the UI shows it as "lexical #3, dense #1".
    """

    pmid: int
    score: float
    sources: tuple[str, ...]
    ranks: tuple[tuple[str, int], ...]

    @property
    def best_rank(self) -> int:
        return min(rank for _, rank in self.ranks)


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[int]],
    *,
    k: int = RRF_K,
    weights: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ranked PMID lists with (weighted) reciprocal rank fusion.

    Cormack, Clarke & Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
    individual rank learning methods", SIGIR 2009::

        score(d) = sum over rankings r containing d of  w_r / (k + rank_r(d))

    with 1-based ranks and ``w_r = 1`` unless ``weights`` says otherwise (a source missing
    from ``weights`` keeps weight 1). A PMID listed twice in one ranking counts once, at
    its first (best) position. ``limit`` keeps the best ``limit`` hits.
    """
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    per_source = {name: _first_positions(pmids) for name, pmids in rankings.items()}
    scores: dict[int, float] = {}
    seen_in: dict[int, list[tuple[str, int]]] = {}
    for name, positions in per_source.items():
        weight = _weight(weights, name)
        for pmid, rank in positions.items():
            scores[pmid] = scores.get(pmid, 0.0) + weight / (k + rank)
            seen_in.setdefault(pmid, []).append((name, rank))
    return _ordered(scores, seen_in, limit)


def score_fusion(
    scored: Mapping[str, Sequence[tuple[int, float]]],
    *,
    weights: Mapping[str, float] | None = None,
    normalize: Literal["minmax", "zscore"] = "minmax",
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ``(pmid, score)`` lists by a weighted sum of per-list normalised scores.

    Each list is normalised on its own, because scores from different retrievers live on
    different scales:

    - ``minmax``: ``(s - min) / (max - min)``, so the list's best hit gets 1 and its worst
      0. A list whose scores are all equal (one hit, or ties throughout) carries no
      ordering, only "retrieved": its hits get 1.
    - ``zscore``: ``(s - mean) / std`` (population std). A constant list gets 0 for all.

    A document missing from a list contributes that list's minimum normalised score
    (0 under min-max): not being retrieved is treated like being the worst retrieved.
    A PMID listed twice in one list keeps its higher score. ``ranks`` are positions in
    each list sorted by score (descending, stable for ties).
    """
    if normalize not in ("minmax", "zscore"):
        raise ValueError(f"unknown normalisation {normalize!r}: use 'minmax' or 'zscore'")
    sides: dict[str, dict[int, float]] = {}
    for name, pairs in scored.items():
        best: dict[int, float] = {}
        for pmid, score in pairs:
            value = float(score)
            if not math.isfinite(value):
                raise ValueError(f"{name}: score {score!r} for PMID {pmid} is not finite")
            if pmid not in best or value > best[pmid]:
                best[pmid] = value
        sides[name] = best
    normalised = {
        name: _minmax(side) if normalize == "minmax" else _zscore(side)
        for name, side in sides.items()
    }
    everyone = {pmid for side in sides.values() for pmid in side}
    scores = dict.fromkeys(everyone, 0.0)
    seen_in: dict[int, list[tuple[str, int]]] = {}
    for name, side in normalised.items():
        weight = _weight(weights, name)
        # min-max: 0 (also below a constant list's 1s); z-score: the list's lowest z.
        floor = 0.0 if normalize == "minmax" else min(side.values(), default=0.0)
        ranks = _ranks_by_score(sides[name])
        for pmid in everyone:
            scores[pmid] += weight * side.get(pmid, floor)
        for pmid, rank in ranks.items():
            seen_in.setdefault(pmid, []).append((name, rank))
    return _ordered(scores, seen_in, limit)


def _weight(weights: Mapping[str, float] | None, name: str) -> float:
    if weights is None:
        return 1.0
    return float(weights.get(name, 1.0))


def _first_positions(pmids: Iterable[int]) -> dict[int, int]:
    """PMID -> 1-based rank of its first occurrence in one ranking."""
    positions: dict[int, int] = {}
    for rank, pmid in enumerate(pmids, start=1):
        positions.setdefault(pmid, rank)
    return positions


def _ranks_by_score(side: Mapping[int, float]) -> dict[int, int]:
    ordered = sorted(side.items(), key=lambda item: -item[1])  # stable: ties keep input order
    return {pmid: rank for rank, (pmid, _) in enumerate(ordered, start=1)}


def _minmax(side: Mapping[int, float]) -> dict[int, float]:
    if not side:
        return {}
    low, high = min(side.values()), max(side.values())
    if high == low:
        return dict.fromkeys(side, 1.0)
    span = high - low
    return {pmid: (score - low) / span for pmid, score in side.items()}


def _zscore(side: Mapping[int, float]) -> dict[int, float]:
    if not side:
        return {}
    mean = math.fsum(side.values()) / len(side)
    variance = math.fsum((s - mean) ** 2 for s in side.values()) / len(side)
    std = math.sqrt(variance)
    if std == 0.0:
        return dict.fromkeys(side, 0.0)
    return {pmid: (score - mean) / std for pmid, score in side.items()}


def _ordered(
    scores: Mapping[int, float],
    seen_in: Mapping[int, list[tuple[str, int]]],
    limit: int | None,
) -> list[FusedHit]:
    """The hits best first; only the kept ones are built (hybrid search fuses ~2,000
    candidates for a head of 10: building and sorting them all was ~3 ms a query)."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    keys = [
        (-score, min((rank for _, rank in seen_in.get(pmid, ())), default=0), pmid)
        for pmid, score in scores.items()
    ]
    if limit is None or limit >= len(keys):
        keys.sort()
    else:
        keys = heapq.nsmallest(limit, keys)
    hits = []
    for negative, _, pmid in keys:
        ranks = tuple(seen_in.get(pmid, ()))
        hits.append(
            FusedHit(
                pmid=pmid, score=-negative, sources=tuple(name for name, _ in ranks), ranks=ranks
            )
        )
    return hits


def fuse_candidates(
    lexical: Sequence[Candidate],
    dense: Sequence[Candidate],
    k: int,
    *,
    method: str = "rrf",
    rrf_k: int = RRF_K,
) -> list[Candidate]:
    """The hybrid searcher's fusion of its two candidate lists: ``method`` "score" fuses
    normalised scores, anything else ranks; each fused candidate keeps its lexical
    snippet and its rank on each side."""
    if method == "score":
        fused = score_fusion(
            {
                "lexical": [(c.pmid, c.score) for c in lexical],
                "dense": [(c.pmid, c.score) for c in dense],
            },
            limit=k,
        )
    else:
        fused = reciprocal_rank_fusion(
            {"lexical": [c.pmid for c in lexical], "dense": [c.pmid for c in dense]},
            k=rrf_k,
            limit=k,
        )
    snippets = {c.pmid: c.snippet for c in lexical}
    return [
        Candidate(
            pmid=f.pmid,
            score=f.score,
            sources=f.sources,
            snippet=snippets.get(f.pmid, ""),
            source_ranks=f.ranks,
        )
        for f in fused
    ]
