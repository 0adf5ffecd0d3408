"""How a record's fields and a query's values meet: one normalising function per kind.

Each function here runs at index time (``lexical_schema.article_fields``), at query
time (``index.lexical.query``) and in the reference semantics (``Filters.accepts``), so a
value typed in any of PubMed's accepted forms reaches the same key.

* Journals (``[ta]``, ``--journal``): PubMed takes the MedlineTA (``J Biol Chem``), the
  ISO abbreviation (``J. Biol. Chem.``), the full title and the ISSN. Keys are casefolded
  with every run of punctuation and space made one space, so ``J. Biol. Chem.`` and
  ``J Biol Chem`` are one key and ``0021-9258`` is ``0021 9258`` both ways.
* MeSH (``[mh]``, ``[majr]``, ``[sh]``): a heading is a whole, casefolded name, never the
  words inside it (``Cataract`` is not ``Cataract Extraction``); ``heading/subheading``
  names one qualifier of one heading.
* Dates (``[dp]``, ``--date``): an integer ``YYYYMMDD`` span per record. A part the
  record leaves out covers all its values: a month-less date is any month of its year,
  as PubMed's help says ("Search by publication date", https://pubmed.ncbi.nlm.nih.gov/help/).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from medsearch.records import Article, PubDate

_PUNCT = re.compile(r"[\W_]+")
_YEAR = re.compile(r"\b(1[0-9]{3}|2[0-9]{3})\b")
_MONTH_WORDS = {
    m: i + 1
    for i, m in enumerate(
        ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
    )
}

SUBSETS = ("hasabstract", "medline", "pubmed not medline", "free full text", "pmc")
"""The ``[sb]`` values this index answers (PubMed's subsets that a record itself shows);
typed with or without spaces (``pubmednotmedline[sb]``), as PubMed takes them."""
MEDLINE_STATUSES = frozenset({"MEDLINE", "OLDMEDLINE"})
"""Citation statuses of records indexed for MEDLINE (``medline[sb]``)."""


_ASCII_PUNCT = bytes(c if chr(c).isalnum() else 32 for c in range(128)) + bytes(128)


def journal_key(value: str) -> str:
    """``J. Biol. Chem.`` -> ``j biol chem``: casefolded, punctuation and spaces as one space.

    ASCII (nearly every journal name) takes a translation table: ~4x cheaper than the
    Unicode regex, and ingest keys ~4 names a record."""
    folded = value.casefold()
    if folded.isascii():
        return " ".join(folded.encode().translate(_ASCII_PUNCT).decode().split())
    return " ".join(_PUNCT.sub(" ", folded).split())


def heading_key(value: str) -> str:
    """``Eye  Diseases / surgery`` -> ``eye diseases/surgery``: a whole casefolded heading."""
    if "/" not in value:
        return name_key(value)
    return "/".join(name_key(part) for part in value.split("/"))


def name_key(value: str) -> str:
    """One heading or qualifier name, casefolded, its spaces single."""
    return " ".join(value.casefold().split())


def subset_key(value: str) -> str:
    """``Free Full Text`` -> ``freefulltext``."""
    return "".join(value.casefold().split())


def journal_keys(article: Article) -> set[str]:
    """Every key ``article``'s journal answers to (titles, abbreviations, ISSNs)."""
    names = (article.journal, article.journal_abbrev, article.medline_ta, article.issn)
    return {k for v in (*names, *article.issns) if v and (k := journal_key(v))}


def subsets(article: Article) -> list[str]:
    """The :data:`SUBSETS` ``article`` belongs to. ``free full text`` is read from the
    PMCID alone: a PMC copy is free to read; publisher-free articles are not known here."""
    found = []
    if article.abstract_text:
        found.append("hasabstract")
    if article.status in MEDLINE_STATUSES:
        found.append("medline")
    elif article.status == "PubMed-not-MEDLINE":  # not in-process or publisher records
        found.append("pubmed not medline")
    if article.pmcid:
        found.extend(("free full text", "pmc"))
    return [subset_key(s) for s in found]


def date_bounds(year: int, month: int | None = None, day: int | None = None) -> tuple[int, int]:
    """The first and last ``YYYYMMDD`` a date as precise as it is given covers."""
    base = year * 10000
    return base + (month or 0) * 100 + (day or 0), base + (month or 12) * 100 + (day or 31)


def date_span(date: PubDate) -> tuple[int, int] | None:
    """The ``YYYYMMDD`` span of a publication date, None without a year.

    A MedlineDate spans from its first year (and month, when one is named before its
    next year) to its last (and month, when one is named after it): ``1998 Dec-1999
    Jan`` covers December 1998 and January 1999, ``2015 Oct-Dec`` three months.
    """
    if date.year is None:
        return None
    if not date.raw or date.month is not None:
        return date_bounds(date.year, date.month, date.day if date.month else None)
    raw = date.raw.casefold()
    years = [(m.start(), int(m.group())) for m in _YEAR.finditer(raw)] or [(0, date.year)]
    months = [
        (m.start(), n)
        for m in re.finditer(r"[a-z]+", raw)
        if (n := _MONTH_WORDS.get(m.group()[:3])) and len(m.group()) >= 3
    ]
    second_year = years[1][0] if len(years) > 1 else len(raw)
    last_year = years[-1][0] if len(years) > 1 else -1
    first_month = next((n for at, n in months if at < second_year), None)
    last_month = next((n for at, n in reversed(months) if at > last_year), None)
    start = date_bounds(years[0][1], first_month)[0]
    end = date_bounds(years[-1][1], last_month)[1]
    return (start, end) if start <= end else (end, start)


def print_span(article: Article) -> tuple[int, int] | None:
    """The span ``[dp]`` and ``[ppdat]`` read for the print date.

    A print date that gives only a year (``2019``), on a record whose electronic date
    (ArticleDate) falls in that year, is the point PubMed dates the record by: E-utilities
    give such a record the electronic date as its ``sortpubdate``, and PubMed does not
    find PMID 31388315 (print ``2019``, electronic 2019/06/28) with ``2019/08[dp]``. So it
    is read as the electronic date, not as every day of 2019. A year-only date with no
    electronic date in its year still covers the whole year (docs/query-language.md,
    "Dates").
    """
    date, electronic = article.pub_date, article.electronic_date
    span = date_span(date)
    if (
        span is not None
        and date.month is None
        and not date.season
        and not date.raw
        and electronic is not None
        and electronic.year == date.year
    ):
        return date_span(electronic)
    return span


RECORD_DATES: dict[str, tuple[str, ...]] = {
    "crdt": ("entrez", "pubmed"),
    "edat": ("pubmed", "entrez"),
    "mhda": ("medline", "pubmed"),
    "dcom": ("datecompleted",),
    "lr": ("daterevised",),
}
"""The record dates each date tag searches, by ``Article.record_dates`` status, the first
one a record has. PubMed help ("Create Date", "Entry Date", "MeSH Date", "Date
Completed", "Date Last Revised") and NLM's technical bulletin nd08 (Create Date): the
Create Date is the ``PubMedPubDate`` of PubStatus ``entrez`` (older records: the Entry
Date), the Entry Date (EDAT) that of ``pubmed``, the MeSH Date (MHDA) that of
``medline`` (set to the Entry Date until the record is indexed), DCOM the
``DateCompleted`` and LR the ``DateRevised``."""


def record_date(article: Article, tag: str) -> int | None:
    """``article``'s ``YYYYMMDD`` for one of :data:`RECORD_DATES`' tags, or None."""
    dates = dict(article.record_dates)
    return next((dates[s] for s in RECORD_DATES[tag] if s in dates), None)
