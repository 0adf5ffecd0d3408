"""What a search hands back: one ranked hit, with the sentence or the evidence it
carries, and its ``--json`` form."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medsearch.records.article import Notice


@dataclass(frozen=True, slots=True)
class SentenceMatch:
    """The abstract sentence a sentence search matched, between its neighbours."""

    text: str
    label: str | None
    sentence_id: int
    before: str = ""
    after: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """The abstract sentence that best supports a citation suggestion."""

    text: str
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result. ``sources`` says which retriever(s) found it.

    The fields after ``notice_for`` are set by the stage or command that knows them and
    stay None (left out of ``--json``) elsewhere.
    """

    rank: int
    pmid: int
    score: float
    title: str = ""
    journal: str = ""
    year: int | None = None
    authors: tuple[str, ...] = ()
    snippet: str = ""
    sources: tuple[str, ...] = ()  # "lexical", "dense"
    notices: tuple[Notice, ...] = ()  # retraction, expression of concern, erratum, update
    notice_for: tuple[Notice, ...] = ()  # the articles this hit is itself a notice about
    source_ranks: tuple[tuple[str, int], ...] = ()
    """Its rank in each first-stage list that fusion merged (``--json``: ``lexical_rank``...)."""
    first_stage_rank: int | None = None
    """Its rank before a reranker (Delta or the cross-encoder) reordered the list."""
    all_words: bool | None = None
    """Plain words: whether it holds every word (in the count) or was ranked in from
    beyond that set. None for set queries, whose hits are all in their set."""
    sentence: SentenceMatch | None = None
    in_corpus: bool | None = None
    """Citation answers: whether the cited or citing article is stored here."""
    doi: str | None = None
    citation: str | None = None
    """An article not stored here: the citation text a stored record's reference list
    gives it ("Arthritis Rheum. 1999 Mar;42(3):415-20"), where one does."""
    reference_source: str | None = None
    """Where a reference came from: the record's reference list or an imported graph."""
    seed_links: int | None = None
    """Snowballing: how many seeds it is linked to."""
    cited_by: int | None = None
    """How many articles in this corpus cite it."""
    evidence: Evidence | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hit:
        """A hit from its ``--json`` form (what a running service sends the CLI)."""

        def notices(key: str) -> tuple[Notice, ...]:
            return tuple(Notice(n["status"], n["type"], n.get("pmid")) for n in data.get(key, ()))

        sentence = None
        if "sentence" in data:
            context = data.get("context") or {}
            sentence = SentenceMatch(
                data["sentence"],
                data.get("label"),
                int(data["sentence_id"]),
                context.get("before", ""),
                context.get("after", ""),
            )
        evidence = None
        if "evidence" in data:
            evidence = Evidence(data["evidence"], data.get("evidence_label"))
        ranks = tuple(
            (key.removesuffix("_rank"), int(value))
            for key, value in data.items()
            if key.endswith("_rank") and key != "first_stage_rank"
        )
        return cls(
            rank=int(data["rank"]),
            pmid=int(data["pmid"]),
            score=float(data["score"]),
            title=data.get("title", ""),
            journal=data.get("journal", ""),
            year=data.get("year"),
            authors=tuple(data.get("authors", ())),
            snippet=data.get("snippet", ""),
            sources=tuple(data.get("sources", ())),
            notices=notices("notices"),
            notice_for=notices("notice_for"),
            source_ranks=ranks,
            first_stage_rank=data.get("first_stage_rank"),
            all_words=data.get("all_words"),
            sentence=sentence,
            in_corpus=data.get("in_corpus"),
            doi=data.get("doi"),
            reference_source=data.get("source"),
            seed_links=data.get("seed_links"),
            cited_by=data.get("cited_by"),
            evidence=evidence,
        )

    @property
    def notice(self) -> str | None:
        """The strongest status among :attr:`notices` (they come strongest first)."""
        return self.notices[0].status if self.notices else None

    def to_dict(self, *, reranked_in_search: bool = False) -> dict[str, Any]:
        """The hit as ``--json`` prints it: the command's own fields after the common ones,
        in the order the stages set them. ``reranked_in_search``: the Delta reranker set
        ``first_stage_rank`` inside the search, before the all-words mark; the
        cross-encoder sets it after."""
        out: dict[str, Any] = {
            "rank": self.rank,
            "pmid": self.pmid,
            "score": round(float(self.score), 6),
            "title": self.title,
            "journal": self.journal,
            "year": self.year,
            "authors": list(self.authors),
            "snippet": self.snippet,
            "sources": list(self.sources),
            "notice": self.notice,
            "notices": [n.to_dict() for n in self.notices],
            "notice_for": [n.to_dict() for n in self.notice_for],
        }
        out.update((f"{name}_rank", rank) for name, rank in self.source_ranks)
        first = {} if self.first_stage_rank is None else {"first_stage_rank": self.first_stage_rank}
        if reranked_in_search:
            out.update(first)
        if self.all_words is not None:
            out["all_words"] = self.all_words
        out.update(first)  # a key set again keeps its place
        if self.sentence is not None:
            out["sentence"] = self.sentence.text
            out["label"] = self.sentence.label
            out["sentence_id"] = self.sentence.sentence_id
            out["context"] = {"before": self.sentence.before, "after": self.sentence.after}
        fields = {
            "in_corpus": self.in_corpus,
            "doi": self.doi,
            "citation": self.citation,
            "source": self.reference_source,
            "seed_links": self.seed_links,
            "cited_by": self.cited_by,
        }
        out.update((k, v) for k, v in fields.items() if v is not None)
        if self.evidence is not None:
            out["evidence"] = self.evidence.text
            out["evidence_label"] = self.evidence.label
        return out
