"""The restrictions every retriever applies alike, and their reference semantics on one
record (``Filters.accepts``), which the index-side filters must agree with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medsearch.field_keys import date_span, journal_key, journal_keys, print_span
from medsearch.notice_links import is_retracted
from medsearch.records.article import Article


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrictions every retriever applies the same way (CLI flags or query field tags).

    Empty tuples and ``None`` mean "no restriction". Journals match the full title, the
    MedlineTA, the ISO abbreviation or an ISSN, ignoring case and punctuation
    (``field_keys.journal_key``); publication types match PubMed's names.
    """

    year_from: int | None = None
    year_to: int | None = None
    journals: tuple[str, ...] = ()
    publication_types: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    # YYYYMMDD bounds (``[dp]``, ``--date``): an article matches when its publication
    # date's span (``field_keys.date_span``) overlaps them
    date_from: int | None = None
    date_to: int | None = None
    # leave out retracted articles (``--exclude-retracted``): those whose record says so,
    # which the lexical index keys as the publication type "Retracted Publication"
    exclude_retracted: bool = False

    @property
    def empty(self) -> bool:
        return (
            not self.exclude_retracted
            and self.year_from is None
            and self.year_to is None
            and self.date_from is None
            and self.date_to is None
            and not self.journals
            and not self.publication_types
            and not self.languages
        )

    def merge(self, other: Filters) -> Filters:
        """Both sets of restrictions at once (CLI flags AND query tags)."""

        def tighter(a: int | None, b: int | None, pick: Any) -> int | None:
            return b if a is None else a if b is None else pick(a, b)

        return Filters(
            year_from=tighter(self.year_from, other.year_from, max),
            year_to=tighter(self.year_to, other.year_to, min),
            journals=self.journals + other.journals,
            publication_types=self.publication_types + other.publication_types,
            languages=self.languages + other.languages,
            date_from=tighter(self.date_from, other.date_from, max),
            date_to=tighter(self.date_to, other.date_to, min),
            exclude_retracted=self.exclude_retracted or other.exclude_retracted,
        )

    def _in_dates(self, span: tuple[int, int] | None) -> bool:
        """Whether a date ``span`` (YYYYMMDD) overlaps ``date_from``..``date_to``."""
        if not span:
            return False
        if self.date_to is not None and span[0] > self.date_to:
            return False
        return self.date_from is None or span[1] >= self.date_from

    def accepts(self, article: Article) -> bool:
        """The reference semantics: what an index-side filter must agree with."""
        if self.exclude_retracted and is_retracted(article):
            return False

        year = article.year
        if self.year_from is not None and (year is None or year < self.year_from):
            return False
        if self.year_to is not None and (year is None or year > self.year_to):
            return False
        if (self.date_from is not None or self.date_to is not None) and not any(
            self._in_dates(span)
            for span in (
                print_span(article),
                date_span(article.electronic_date) if article.electronic_date else None,
            )
        ):
            return False
        if self.journals:
            names = journal_keys(article)
            if not any(journal_key(j) in names for j in self.journals):
                return False
        if self.publication_types:
            types = {t.casefold() for t in article.publication_types}
            if not any(t.casefold() in types for t in self.publication_types):
                return False
        if self.languages:
            langs = {lang.casefold() for lang in article.languages}
            if not any(lang.casefold() in langs for lang in self.languages):
                return False
        return True
