"""Reference suggestions for citation sentences pasted from a manuscript (CiteRec's recipe).

Each citing sentence, stripped of its markers, is a query: hybrid retrieval (plain words,
never the query language, since manuscripts are full of brackets), then the
cross-encoder when there is one, then the abstract sentence that best supports the
suggestion as evidence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from medsearch.errors import UsageError
from medsearch.query.normalize import repair_undecodable
from medsearch.records import Evidence, Filters, Hit
from medsearch.retrieval.citances import Citance, split_citances
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.retrieval.resources import Resources
    from medsearch.retrieval.searcher import Searcher


@dataclass(frozen=True, slots=True)
class CitanceResult:
    citance: Citance
    result: SearchResult

    def to_dict(self) -> dict[str, Any]:
        out = self.result.to_dict()
        out.pop("query", None)
        return {
            "citance": self.citance.text,
            "original": self.citance.original,
            "markers": list(self.citance.markers),
            "has_citation": self.citance.has_citation,
            **out,
        }


@dataclass(frozen=True, slots=True)
class CiteResult:
    citances: tuple[CitanceResult, ...]
    before: int | None = None
    skipped: tuple[Citance, ...] = ()
    """Sentences not searched: without a marker in a paragraph where others have one."""

    @property
    def notes(self) -> tuple[str, ...]:
        """Which sentences were searched and why the others were not (never silently)."""
        if not self.skipped:
            return ()
        n, used = len(self.skipped), len(self.citances)
        quoted = "; ".join(f'"{_short(c.original)}"' for c in self.skipped)
        return (
            f"searched the {used} sentence{'s' * (used != 1)} with a citation marker;"
            f" skipped {n} without one: {quoted} (--all-sentences searches every sentence)",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "citances": [c.to_dict() for c in self.citances],
            "skipped": [c.original for c in self.skipped],
            "notes": list(self.notes),
        }


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def suggest(
    searcher: Searcher,
    paragraph: str,
    *,
    k: int = 5,
    before: int | None = None,
    rerank: bool | str = True,
    all_sentences: bool = False,
    is_cancelled: Callable[[], bool] | None = None,
) -> CiteResult:
    """Ranked references for each citing sentence of ``paragraph``.

    ``before`` keeps only work published before that year (strictly earlier: a
    manuscript from 2020 is offered nothing from 2020 on). Sentences without a marker are
    treated as citing when no sentence in the paragraph has one (the user pasted bare
    claims) or when ``all_sentences`` is set. ``is_cancelled`` is checked between
    sentences and inside each rerank; a cancelled call returns the sentences finished so
    far.
    """
    paragraph = repair_undecodable(paragraph)  # bytes that were not UTF-8, from argv
    if not paragraph.strip():
        raise UsageError("paste a paragraph (or give --file) to get citation suggestions")
    citances = split_citances(paragraph)
    any_marked = any(c.has_citation for c in citances)
    chosen: list[Citance] = []
    skipped: list[Citance] = []
    for c in citances:
        if c.has_citation or all_sentences or not any_marked:
            chosen.append(c)
        elif c.text.strip():
            skipped.append(c)
    filters = Filters(year_to=before - 1) if before is not None else Filters()
    # True: the configured rerankers; False: none; or a choice (auto/delta/cross/none)
    choice = None if rerank is True else "none" if rerank is False else str(rerank)
    out: list[CitanceResult] = []
    for citance in chosen:
        if is_cancelled is not None and is_cancelled():
            break
        if not citance.text.strip():
            continue
        result = searcher.search_reranked(
            citance.text,
            k=k,
            filters=filters,
            syntax=False,
            rerank=choice,
            is_cancelled=is_cancelled,
        )
        result = replace(result, query=None, translation=None, citance=citance.text)
        result = result.with_hits(with_evidence(searcher, citance.text, result.hits))
        out.append(CitanceResult(citance=citance, result=result))
    return CiteResult(citances=tuple(out), before=before, skipped=tuple(skipped))


def _overlap(words: set[str], sentence: str) -> int:
    return len(words & {w.casefold().strip(".,;:()") for w in sentence.split()})


def with_evidence(searcher: Resources, text: str, hits: tuple[Hit, ...]) -> list[Hit]:
    """Each hit with the abstract sentence closest to ``text`` (dense when possible)."""
    from medsearch.sentences import article_sentences

    records = searcher.articles([h.pmid for h in hits])
    # Dense evidence only where the search loaded the encoders; when they are missing
    # the search went lexical (and said why), and word overlap picks the sentence.
    dense = searcher.dense if searcher.device is not None else None
    vector = None
    if dense is not None and dense.sentences is not None:
        vector = dense.encode_query(text)
    words = {w.casefold().strip(".,;:()") for w in text.split() if len(w) > 3}
    per_hit = [article_sentences(records[h.pmid]) if h.pmid in records else [] for h in hits]
    dense_best = [-1] * len(hits)
    if vector is not None and dense is not None:
        dense_best = dense.best_sentences(vector, [[s.text for s in g] for g in per_hit])
    out: list[Hit] = []
    for hit, sents, best in zip(hits, per_hit, dense_best, strict=True):
        if not sents:
            out.append(hit)
            continue
        if best < 0 or best >= len(sents):
            overlaps = [_overlap(words, s.text) for s in sents]
            best = overlaps.index(max(overlaps))
        sentence = sents[best]
        out.append(replace(hit, evidence=Evidence(sentence.text, sentence.label)))
    return out
