"""Retractions, expressions of concern, errata and updates: what happened to an article
after it was published, as PubMed's records say it.

NLM links a notice and the article it is about both ways (``CommentsCorrections``):
the article carries ``RetractionIn`` (``ExpressionOfConcernIn``, ``ErratumIn``,
``UpdateIn`` ...) naming the notice's PMID, and the notice carries ``RetractionOf``
(``ExpressionOfConcernFor``, ``ErratumFor``, ``UpdateOf`` ...) naming the article's.
A retracted article also gets the publication type ``Retracted Publication``, and the
notices get ``Retraction of Publication``, ``Expression of Concern`` or ``Published
Erratum``. Everything here is computed from one record, so the parser processes, the
store's SQL columns, the lexical index and the hits all agree on an article's status.

Which link or publication type gives which status is :mod:`medsearch.notice_links`;
this module turns a record's links into :class:`~medsearch.records.Notice` records and
names them for a reader. The statuses, strongest first: a retracted article that also
had an erratum is shown as retracted.
"""

from __future__ import annotations

from dataclasses import replace

from medsearch.notice_links import (
    ABOUT,
    CONCERN,
    CORRECTED,
    NOTICE_OF,
    NOTICE_TYPES,
    RETRACTED,
    RETRACTED_TYPE,
    STATUSES,
    UPDATED,
)
from medsearch.records import Article, Correction, Notice

__all__ = [
    # the statuses, named here too because every reader of notices compares with them
    "CONCERN",
    "CORRECTED",
    "LABELS",
    "MEDLINE_LINKS",
    "MEDLINE_TAGS",
    "NOTICE_NAMES",
    "RETRACTED",
    "STATUSES",
    "UPDATED",
    "describe",
    "describe_for",
    "notice_for",
    "notices",
    "ordered",
    "status",
    "with_notices",
]

MEDLINE_LINKS = {
    "CIN": "CommentIn",
    "CON": "CommentOn",
    "EIN": "ErratumIn",
    "EFR": "ErratumFor",
    "CRI": "CorrectedandRepublishedIn",
    "CRF": "CorrectedandRepublishedFrom",
    "ECI": "ExpressionOfConcernIn",
    "ECF": "ExpressionOfConcernFor",
    "RIN": "RetractionIn",
    "ROF": "RetractionOf",
    "RRI": "RetractedandRepublishedIn",
    "RRF": "RetractedandRepublishedFrom",
    "PRIN": "PartialRetractionIn",
    "PROF": "PartialRetractionOf",
    "RPI": "RepublishedIn",
    "RPF": "RepublishedFrom",
    "UIN": "UpdateIn",
    "UOF": "UpdateOf",
    "SPIN": "SummaryForPatientsIn",
    "ORI": "OriginalReportIn",
}
"""The MEDLINE format's tags for the XML's ``CommentsCorrections`` links (its RefType).
PubMed writes each as ``RIN - Source. PMID: 123``."""
MEDLINE_TAGS = {ref_type: tag for tag, ref_type in MEDLINE_LINKS.items()}

LABELS = {
    "RetractionIn": "retraction",
    "RetractedandRepublishedIn": "retraction and republication",
    "ExpressionOfConcernIn": "expression of concern",
    "PartialRetractionIn": "partial retraction",
    "ErratumIn": "erratum",
    "CorrectedandRepublishedIn": "correction and republication",
    "UpdateIn": "update",
    RETRACTED_TYPE: "retraction",
}
"""How a notice is named to a reader (``RETRACTED: retraction PMID 32167152``)."""

_ORDER = {status: rank for rank, status in enumerate(STATUSES)}


def notices(article: Article) -> tuple[Notice, ...]:
    """Every notice about ``article``, strongest first, each notice once."""
    found = [
        Notice(ABOUT[c.ref_type], c.ref_type, c.pmid)
        for c in article.corrections
        if c.ref_type in ABOUT
    ]
    if RETRACTED_TYPE in article.publication_types and not any(
        n.status == RETRACTED for n in found
    ):
        found.append(Notice(RETRACTED, RETRACTED_TYPE, None))
    return ordered(found)


def notice_for(article: Article) -> tuple[Notice, ...]:
    """The articles ``article`` is a notice about (``pmid`` is theirs), strongest first.

    A record typed as a notice but without a link still counts, with no PMID."""
    found = [
        Notice(NOTICE_OF[c.ref_type], c.ref_type, c.pmid)
        for c in article.corrections
        if c.ref_type in NOTICE_OF
    ]
    for kind, status in NOTICE_TYPES.items():
        if kind in article.publication_types and not any(n.status == status for n in found):
            found.append(Notice(status, kind, None))
    return ordered(found)


def status(article: Article) -> str | None:
    """The strongest status of ``article`` (None: no notice about it)."""
    found = notices(article)
    return found[0].status if found else None


def describe(found: tuple[Notice, ...]) -> str:
    """``RETRACTED (retraction PMID 32167152)``: the one line a hit or an export shows."""
    if not found:
        return ""
    parts = []
    for notice in found:
        label = LABELS.get(notice.ref_type, notice.ref_type)
        parts.append(f"{label} PMID {notice.pmid}" if notice.pmid else label)
    return f"{found[0].status.upper()} ({'; '.join(dict.fromkeys(parts))})"


def with_notices(article: Article, found: list[Notice]) -> Article | None:
    """``article`` with a link for each of ``found`` it does not already name (same
    status, same notice PMID), or None when it names them all."""
    known = {(n.status, n.pmid) for n in notices(article)}
    new = [n for n in found if (n.status, n.pmid) not in known]
    if not new:
        return None
    links = tuple(Correction(n.ref_type, None, n.pmid) for n in dict.fromkeys(new))
    return replace(article, corrections=article.corrections + links)


NOTICE_NAMES = {
    RETRACTED: "retraction notice",
    CONCERN: "expression of concern",
    CORRECTED: "erratum",
    UPDATED: "update",
}
"""What a record is when it is itself a notice, by the status it gives."""


def describe_for(found: tuple[Notice, ...]) -> str:
    """``Retraction notice for PMID 31541003``: the line a notice's own hit shows."""
    if not found:
        return ""
    pmids = [str(n.pmid) for n in found if n.pmid]
    name = NOTICE_NAMES[found[0].status].capitalize()
    return f"{name} for PMID {', '.join(dict.fromkeys(pmids))}" if pmids else name


def ordered(found: list[Notice]) -> tuple[Notice, ...]:
    """``found`` strongest first, each notice once."""
    unique = dict.fromkeys(found)
    return tuple(sorted(unique, key=lambda n: _ORDER[n.status]))
