"""Result containers shared by every retrieval command, the CLI and the TUI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from medsearch.notices import notice_for, notices
from medsearch.records import Article, Filters, Hit, SentenceMatch
from medsearch.retrieval.sets import Plan

ALL_WORDS = "all_words"
"""What ``total`` counts for plain words (:attr:`SearchResult.counted`)."""

BEYOND = "not all words"
"""The marker (CLI, TUI) of a ranked plain-words hit outside the count's set."""


def beyond(hit: Hit) -> bool:
    """Whether a plain-words hit was ranked in from beyond the all-words set."""
    return hit.all_words is False


@dataclass(frozen=True, slots=True)
class Candidate:
    """A document on its way through the stages (before it becomes a :class:`Hit`)."""

    pmid: int
    score: float
    sources: tuple[str, ...] = ()
    snippet: str = ""
    source_ranks: tuple[tuple[str, int], ...] = ()
    """Its rank in each list fusion merged."""
    first_stage_rank: int | None = None
    """Its rank before the Delta reranker reordered the list."""
    sentence: SentenceMatch | None = None


@dataclass(frozen=True, slots=True)
class SearchResult:
    """One command's answer: ``to_dict`` is exactly what ``--json`` prints."""

    hits: tuple[Hit, ...]
    mode: str
    total: int
    query: str | None = None
    """The text searched (search, sentences); rerankers read it."""
    citance: str | None = None
    """The citing sentence searched (``cite``), markers removed; rerankers read it."""
    pmid: int | None = None
    """The article asked about (similar articles, references, cited by)."""
    details: tuple[tuple[str, Any], ...] = ()
    """A command's own fields that only ``--json`` shows, in its order (``seeds``, ``by``...)."""
    translation: str | None = None
    """The MeSH translation the search ran (PubMed's "Search details"); None without MeSH."""
    sort: str | None = None
    """The order the hits were sorted in after ranking (None: relevance)."""
    long_query: str | None = None
    """The note (one of ``notes``) saying a long query's commonest words were left out
    of its BM25 ranking (WordBudget); None when the query was ranked whole."""
    filters: Filters = field(default_factory=Filters)
    reranked: bool = False  # the cross-encoder has ordered the head
    rerankers: tuple[str, ...] = ()  # every reranker that ordered the list, in order
    notes: tuple[str, ...] = ()
    timings: tuple[tuple[str, float], ...] = ()
    counted: str | None = None
    """What ``total`` counts: ``"set"`` (a set query's articles, PubMed's count) or
    ``"all_words"`` (plain words: the articles holding every word); None where a total
    is no count of matches (similar articles, sentences)."""
    plan: Plan | None = field(default=None, compare=False)
    """The query as run (a search's one plan): what the history keeps the set of,
    ``--explain`` counts and ``rerun`` compares; None for other commands."""

    def to_dict(self) -> dict[str, Any]:
        named = {"query": self.query, "citance": self.citance, "pmid": self.pmid}
        out: dict[str, Any] = {k: v for k, v in named.items() if v is not None}
        out.update(self.details)
        if self.translation is not None:
            out["translation"] = self.translation
        if self.sort is not None:
            out["sort"] = self.sort
        in_search = "delta" in self.rerankers  # see Hit.to_dict
        out.update(
            {
                "mode": self.mode,
                "total": self.total,
                **({"counted": self.counted} if self.counted else {}),
                "reranked": self.reranked,
                "reranker": "+".join(self.rerankers) or None,
                "hits": [h.to_dict(reranked_in_search=in_search) for h in self.hits],
            }
        )
        if self.notes:
            out["notes"] = list(self.notes)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchResult:
        """A result from its ``--json`` form, as a running service sends it, so the CLI
        prints a served answer as text with the printer of its own (``to_dict`` of it
        gives ``data`` back; the plan and the timings do not travel)."""
        own = {"query", "citance", "pmid", "translation", "sort", "mode", "total", "counted"}
        own |= {"reranked", "reranker", "hits", "notes"}
        beside = {"served", "did_you_mean", "record", "explain"}
        reranker = data.get("reranker")
        return cls(
            hits=tuple(Hit.from_dict(h) for h in data.get("hits", ())),
            mode=str(data["mode"]),
            total=int(data["total"]),
            query=data.get("query"),
            citance=data.get("citance"),
            pmid=data.get("pmid"),
            details=tuple((k, v) for k, v in data.items() if k not in own | beside),
            translation=data.get("translation"),
            sort=data.get("sort"),
            reranked=bool(data.get("reranked", False)),
            rerankers=tuple(reranker.split("+")) if reranker else (),
            notes=tuple(data.get("notes", ())),
            counted=data.get("counted"),
        )

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
                source_ranks=cand.source_ranks,
                first_stage_rank=cand.first_stage_rank,
                sentence=cand.sentence,
                notices=notices(article),
                notice_for=notice_for(article),
            )
        )
    return hits
