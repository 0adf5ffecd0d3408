"""Training examples without click logs: pseudo-queries, first-stage candidates, grades.

PubMed's Delta model learned from 20K queries with clicks. A private corpus has none,
so the queries come from the articles themselves, shaped like what PubMed users type
(one or two concepts): an article's author keywords and major MeSH headings, and its
title. The article is the positive; the first stage's other results for the same query
are the negatives (hard ones, as at search time). Where a cross-encoder is at hand its
scores grade the candidates instead, and the user's own marks add real queries.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from medsearch.records import Article

KEYWORDS, TITLES, SENTENCES, CROSS, MARKS = "keywords", "titles", "sentences", "cross", "marks"
SIGNALS = (KEYWORDS, TITLES, SENTENCES, CROSS, MARKS)
POSITIVE = 100.0  # the paper's top scaled relevance
HELD_OUT = 0.1  # share of queries kept for validation (and for choosing the blend)


@dataclass(frozen=True, slots=True)
class PseudoQuery:
    text: str
    kind: str
    gains: tuple[tuple[int, float], ...]  # PMIDs known relevant, with their scaled relevance
    hide: str = ""
    """Text taken out of the source article before the model sees it (the inverse cloze
    task): a title or sentence used as the query would otherwise be found verbatim, and
    the model would learn to copy the first stage instead of judging relevance."""


def hidden(title: str, abstract: str, query: PseudoQuery, source: bool) -> tuple[str, str]:
    """A candidate as the model sees it in training: the inverse cloze task.

    A sentence query is cut out of its source abstract. A title query hides every
    candidate's title, not only the source's: a blank title on the positive alone would
    teach the model that sharing words with the title is a sign of irrelevance.
    """
    if not query.hide:
        return title, abstract
    if query.kind == TITLES:
        return "", abstract
    return (title, abstract.replace(query.hide, " ")) if source else (title, abstract)


def keyword_query(article: Article, rng: random.Random) -> str | None:
    """One or two of the article's concepts, as PubMed users type them."""
    concepts = list(
        dict.fromkeys([*article.keywords, *(m.descriptor for m in article.mesh if m.is_major)])
    )
    concepts = [c for c in concepts if c.strip()]
    if not concepts:
        return None
    picked = rng.sample(concepts, k=min(len(concepts), rng.choice((1, 1, 2))))
    return " ".join(picked)


def sentence_query(article: Article, rng: random.Random) -> str | None:
    """One of the abstract's sentences: a claim, shaped like a citing sentence."""
    parts = [p.strip() for p in article.abstract_text.split(". ")]
    parts = [p for p in parts if 6 <= len(p.split()) <= 40 and "\n" not in p]
    return rng.choice(parts) if parts else None


def pseudo_queries(
    articles: Iterator[list[Article]], kinds: Sequence[str], limit: int, seed: int
) -> Iterator[PseudoQuery]:
    """Up to ``limit`` queries, one per enabled kind per article, from a stream of samples."""
    rng = random.Random(seed)
    made = 0
    for batch in articles:
        for article in batch:
            texts: list[tuple[str, str | None]] = []
            if KEYWORDS in kinds:
                texts.append((KEYWORDS, keyword_query(article, rng)))
            if TITLES in kinds:
                texts.append((TITLES, article.title))
            if SENTENCES in kinds:
                texts.append((SENTENCES, sentence_query(article, rng)))
            for kind, text in texts:
                if text:
                    hide = text if kind in (TITLES, SENTENCES) else ""
                    yield PseudoQuery(text, kind, ((article.pmid, POSITIVE),), hide)
                    made += 1
                    if made >= limit:
                        return


def held_out(query: str) -> bool:
    """A stable, seed-free validation split (the same query is always on the same side)."""
    digest = hashlib.blake2b(query.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") / 2**32 < HELD_OUT


def cross_gains(scores: np.ndarray) -> np.ndarray:
    """Cross-encoder logits as the paper's scaled relevance: 1 + 98 * softmax, in (1, 99]."""
    z = np.exp(scores - scores.max())
    out: np.ndarray = 1.0 + 98.0 * z / z.sum()
    return out


def pairs_for(
    gains: Sequence[float], negatives: int, rng: random.Random
) -> list[tuple[int, int, float]]:
    """(better, worse, weight) index pairs: each graded document against up to
    ``negatives`` lower ones, weighted by the square root of the relevance gap."""
    out: list[tuple[int, int, float]] = []
    order = sorted(range(len(gains)), key=lambda i: -gains[i])
    for i in order:
        if gains[i] <= 0:
            break
        lower = [j for j in range(len(gains)) if gains[j] < gains[i] - 0.5]
        for j in rng.sample(lower, k=min(negatives, len(lower))):
            out.append((i, j, math.sqrt(gains[i] - gains[j])))
    return out


def ndcg_at(order: Sequence[int], gains: Sequence[float], k: int = 10) -> float:
    """nDCG@k of candidate indices ``order`` under ``gains`` (the paper's 2^rel - 1 form
    on relevance rescaled to 0-1, so a 100 is not 2^100)."""

    def dcg(idx: Sequence[int]) -> float:
        return math.fsum(
            (2.0 ** (gains[i] / POSITIVE) - 1.0) / math.log2(r + 2) for r, i in enumerate(idx[:k])
        )

    ideal = dcg(sorted(range(len(gains)), key=lambda i: -gains[i]))
    return dcg(order) / ideal if ideal > 0 else 0.0
