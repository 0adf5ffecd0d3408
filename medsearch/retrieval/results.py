"""Result containers shared by every retrieval command, the CLI and the TUI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from medsearch.notices import notice_for, notices
from medsearch.records import Article, Filters, Hit

ALL_WORDS = "all_words"
"""The hit field (``--json``) saying whether a plain-words hit holds every word."""

BEYOND = "not all words"
"""The marker (CLI, TUI) of a ranked plain-words hit outside the count's set."""


def beyond(extra: tuple[tuple[str, Any], ...]) -> bool:
    """Whether a hit with these fields was ranked in from beyond the all-words set."""
    return dict(extra).get(ALL_WORDS) is False


@dataclass(frozen=True, slots=True)
class Candidate:
    """A document on its way through the stages (before it becomes a :class:`Hit`)."""

    pmid: int
    score: float
    sources: tuple[str, ...] = ()
    snippet: str = ""
    extra: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One command's answer: ``to_dict`` is exactly what ``--json`` prints."""

    hits: tuple[Hit, ...]
    mode: str
    total: int
    context: tuple[tuple[str, Any], ...] = ()  # ("query", ...), ("pmid", ...), ...
    filters: Filters = field(default_factory=Filters)
    reranked: bool = False  # the cross-encoder has ordered the head
    rerankers: tuple[str, ...] = ()  # every reranker that ordered the list, in order
    notes: tuple[str, ...] = ()
    timings: tuple[tuple[str, float], ...] = ()
    counted: str | None = None
    """What ``total`` counts: ``"set"`` (a set query's articles, PubMed's count) or
    ``"all_words"`` (plain words: the articles holding every word); None where a total
    is no count of matches (similar articles, sentences)."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.context)
        out.update(
            {
                "mode": self.mode,
                "total": self.total,
                **({"counted": self.counted} if self.counted else {}),
                "reranked": self.reranked,
                "reranker": "+".join(self.rerankers) or None,
                "hits": [h.to_dict() for h in self.hits],
            }
        )
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    def with_hits(self, hits: Sequence[Hit], **changes: Any) -> SearchResult:
        return replace(self, hits=tuple(hits), **changes)


def make_hits(
    candidates: Sequence[Candidate], articles: Mapping[int, Article], *, start: int = 1
) -> list[Hit]:
    """Join candidates with their stored records; candidates whose PMID is gone are dropped.

    The lexical index can briefly be ahead of the store after an interrupted ingest; a
    hit without a record would show an empty row, so it is left out.
    """
    hits: list[Hit] = []
    for cand in candidates:
        article = articles.get(cand.pmid)
        if article is None:
            continue
        hits.append(
            Hit(
                rank=start + len(hits),
                pmid=cand.pmid,
                score=cand.score,
                title=article.title,
                journal=article.journal_abbrev or article.journal,
                year=article.year,
                authors=tuple(a.display for a in article.authors[:3]),
                snippet=cand.snippet,
                sources=cand.sources,
                extra=cand.extra,
                notices=notices(article),
                notice_for=notice_for(article),
            )
        )
    return hits
