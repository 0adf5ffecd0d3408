"""Which PubMed links and publication types say what happened to an article.

The vocabulary of :mod:`medsearch.notices`, kept apart from it because it needs nothing
but strings: ``records`` (``Filters.accepts``), the parser and the lexical index read it
without importing the code that builds :class:`~medsearch.records.Notice` records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medsearch.records import Article

RETRACTED = "retracted"
CONCERN = "expression of concern"
CORRECTED = "corrected"
UPDATED = "updated"
STATUSES = (RETRACTED, CONCERN, CORRECTED, UPDATED)
"""Strongest first: :func:`medsearch.notices.notices` sorts by this order."""

ABOUT = {
    "RetractionIn": RETRACTED,
    "RetractedandRepublishedIn": RETRACTED,
    "ExpressionOfConcernIn": CONCERN,
    "PartialRetractionIn": CORRECTED,
    "ErratumIn": CORRECTED,
    "CorrectedandRepublishedIn": CORRECTED,
    "UpdateIn": UPDATED,
}
"""Links on an article's own record naming a notice about it. A partial retraction
leaves the rest of the article standing, so it counts as a correction (its ``ref_type``
still says what it was)."""

NOTICE_OF = {
    "RetractionOf": RETRACTED,
    "RetractedandRepublishedFrom": RETRACTED,
    "ExpressionOfConcernFor": CONCERN,
    "PartialRetractionOf": CORRECTED,
    "ErratumFor": CORRECTED,
    "CorrectedandRepublishedFrom": CORRECTED,
    "UpdateOf": UPDATED,
}
"""The same links seen from the notice's record: it names the article it is about."""

ABOUT_OF = {
    "RetractionOf": "RetractionIn",
    "RetractedandRepublishedFrom": "RetractedandRepublishedIn",
    "ExpressionOfConcernFor": "ExpressionOfConcernIn",
    "PartialRetractionOf": "PartialRetractionIn",
    "ErratumFor": "ErratumIn",
    "CorrectedandRepublishedFrom": "CorrectedandRepublishedIn",
    "UpdateOf": "UpdateIn",
    "Retraction of Publication": "RetractionIn",
    "Expression of Concern": "ExpressionOfConcernIn",
    "Published Erratum": "ErratumIn",
}
"""A notice's link (or type) as the article's own record names it."""

RETRACTED_TYPE = "Retracted Publication"
"""The publication type NLM gives a retracted article; it counts without a link."""

NOTICE_TYPES = {
    "Retraction of Publication": RETRACTED,
    "Expression of Concern": CONCERN,
    "Published Erratum": CORRECTED,
}
"""Publication types of the notices themselves."""


def is_retracted(article: Article) -> bool:
    """Whether ``article`` is retracted: a link naming a retraction notice, or the
    publication type alone. Retracted is the strongest status, so this is the status
    :func:`medsearch.notices.status` gives, without building the notices."""
    return RETRACTED_TYPE in article.publication_types or any(
        ABOUT.get(c.ref_type) == RETRACTED for c in article.corrections
    )
