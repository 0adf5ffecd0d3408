"""``medsearch check``: find a reference list's articles in the corpus and say which were
retracted, corrected or put under an expression of concern.

Each reference is resolved by the strongest identifier it has: its PMID (when the
store holds it), then its DOI (the lexical index's ``[aid]`` keys, an exact term
lookup), then its title and year (the title's words ranked over the index, and a
candidate accepted only when its title is the same once case, accents and punctuation
are ignored, and its year is within one of the reference's: a reference manager often
records the print year of an article PubMed dates by its electronic publication).
Anything else is listed as unresolved; nothing is guessed.

The notices come from the SQL ``articles`` row (which also holds what a notice said
about an article whose own record has not been re-issued yet), else from the record.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from medsearch import notices as nt
from medsearch.query.nodes import ParsedQuery, Tagged, Term
from medsearch.query.parser import parse_plain
from medsearch.records import Notice
from medsearch.references import Reference, title_key
from medsearch.store.columns import notices_from_json
from medsearch.store.db import Store

if TYPE_CHECKING:
    from medsearch.index.lexical.index import Ranked

TITLE_CANDIDATES = 10
"""Title search: how many ranked candidates are compared with the reference's title."""
YEAR_SLACK = 1


class Ranker(Protocol):
    def rank(self, query: ParsedQuery, *, k: int = 10, count: bool = True) -> Ranked: ...


@dataclass(frozen=True, slots=True)
class Checked:
    """A reference and what became of it: ``pmid`` None when unresolved."""

    reference: Reference
    pmid: int | None = None
    resolved_by: str | None = None  # "pmid", "doi", "title"
    title: str = ""
    year: int | None = None
    notices: tuple[Notice, ...] = ()

    @property
    def notice(self) -> str | None:
        return self.notices[0].status if self.notices else None

    @property
    def alarming(self) -> bool:
        """Retracted or under an expression of concern: what fails a check."""
        return self.notice in (nt.RETRACTED, nt.CONCERN)

    def to_dict(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "label": ref.label,
            "pmid": self.pmid,
            "resolved_by": self.resolved_by,
            "title": self.title or ref.title,
            "year": self.year,
            "reference": {"pmid": ref.pmid, "doi": ref.doi, "title": ref.title, "year": ref.year},
            "notice": self.notice,
            "notices": [n.to_dict() for n in self.notices],
        }


def check(references: Sequence[Reference], store: Store, lexical: Ranker) -> list[Checked]:
    """Each of ``references`` resolved and with its notices, in the list's order."""
    stored = store.existing([r.pmid for r in references if r.pmid is not None])
    found: list[tuple[Reference, int | None, str | None]] = []
    for ref in references:
        if ref.pmid is not None and ref.pmid in stored:
            found.append((ref, ref.pmid, "pmid"))
        elif ref.doi and (pmid := _by_doi(ref.doi, lexical)) is not None:
            found.append((ref, pmid, "doi"))
        elif ref.title and (pmid := _by_title(ref, store, lexical)) is not None:
            found.append((ref, pmid, "title"))
        else:
            found.append((ref, None, None))
    pmids = [p for _, p, _ in found if p is not None]
    articles = store.get_many(pmids)
    rows = _notice_rows(store, pmids)
    out = []
    for ref, pmid, how in found:
        article = articles.get(pmid) if pmid is not None else None
        if pmid is None or article is None:
            out.append(Checked(ref))
            continue
        found_notices = notices_from_json(rows[pmid]) if pmid in rows else nt.notices(article)
        out.append(Checked(ref, pmid, how, article.title, article.year, found_notices))
    return out


def _by_doi(doi: str, lexical: Ranker) -> int | None:
    query = ParsedQuery(doi, Tagged("aid", Term(doi)), set_query=True)
    ranked = lexical.rank(query, k=2, count=False)
    return ranked.pmids[0] if len(ranked.pmids) == 1 else None  # a DOI names one article


def _by_title(ref: Reference, store: Store, lexical: Ranker) -> int | None:
    assert ref.title is not None
    wanted = title_key(ref.title)
    if not wanted:
        return None
    ranked = lexical.rank(parse_plain(ref.title), k=TITLE_CANDIDATES, count=False)
    candidates = store.get_many(ranked.pmids)
    for pmid in ranked.pmids:
        article = candidates.get(pmid)
        if article is None or title_key(article.title) != wanted:
            continue
        if ref.year is None or (
            article.year is not None and abs(article.year - ref.year) <= YEAR_SLACK
        ):
            return pmid
    return None


def _notice_rows(store: Store, pmids: Sequence[int]) -> dict[int, str]:
    """The ``notices`` column of ``pmids``' rows; empty when the table is not whole yet
    (an older store still being filled), so the records answer instead."""
    from medsearch.store.backfill import problem

    if not pmids or problem(store.conn) is not None:
        return {}
    out: dict[int, str] = {}
    unique = sorted(set(pmids))
    try:
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for pmid, text in store.conn.execute(
                f"SELECT pmid, notices FROM articles WHERE pmid IN ({marks})", chunk
            ):
                out[pmid] = text
    except sqlite3.OperationalError:  # a store not yet upgraded to the notice columns
        return {}
    return out
