"""Filters and date ranges as tantivy queries: constant-score clauses that select
articles and never change a score.

Kept apart from :mod:`medsearch.index.lexical.query`, which translates the ranked and
boolean query; these are the restrictions every query carries the same way (CLI flags
and lifted field tags alike).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tantivy

from medsearch import field_keys as fk
from medsearch.index.lexical import schema as ls
from medsearch.notice_links import RETRACTED_TYPE
from medsearch.records import Filters


def match_all() -> Any:
    """Every article (the bookkeeping document has no PMID), scoring 0."""
    return tantivy.Query.const_score_query(tantivy.Query.exists_query(ls.PMID), 0.0)


def exclude(base: Any, excluded: Any) -> Any:
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Must, base), (tantivy.Occur.MustNot, excluded)]
    )


def year_range(schema: Any, start: int | None, end: int | None) -> Any:
    return tantivy.Query.range_query(
        schema, ls.YEAR, tantivy.FieldType.Integer, lower_bound=start, upper_bound=end
    )


def date_range(schema: Any, first: int | None, last: int | None) -> Any:
    """Articles published in ``first``..``last`` (``YYYYMMDD``), as PubMed's ``[dp]``
    reads it: the print date's span (``field_keys.date_span``) overlaps the range, or
    the electronic date falls in it."""
    printed = _print_date_range(schema, first, last)
    if first is None and last is None:
        return printed
    electronic = tantivy.Query.range_query(
        schema,
        ls.ELECTRONIC_DATE,
        tantivy.FieldType.Integer,
        lower_bound=first,
        upper_bound=last,
    )
    return tantivy.Query.boolean_query(
        [(tantivy.Occur.Should, printed), (tantivy.Occur.Should, electronic)]
    )


def tagged_date_range(schema: Any, tag: str, first: int | None, last: int | None) -> Any:
    """A date tag's range (:data:`medsearch.query.nodes.DATE_TAGS`): ``[dp]`` as
    :func:`date_range`, ``[ppdat]`` the print date alone, ``[epdat]`` the electronic date
    alone, and the record dates (``[crdt]``, ``[edat]``, ``[mhda]``, ``[dcom]``, ``[lr]``)
    their one day each (PubMed help, "Search by date")."""
    if tag == "dp":
        return date_range(schema, first, last)
    if tag == "ppdat":
        return _print_date_range(schema, first, last)
    name = ls.ELECTRONIC_DATE if tag == "epdat" else ls.RECORD_DATE_FIELDS[tag]
    return tantivy.Query.range_query(
        schema, name, tantivy.FieldType.Integer, lower_bound=first, upper_bound=last
    )


def _print_date_range(schema: Any, first: int | None, last: int | None) -> Any:
    """The print date's span overlaps ``first``..``last``: it starts by ``last`` and
    ends from ``first``."""
    clauses = []
    if last is not None:
        clauses.append(
            tantivy.Query.range_query(
                schema,
                ls.DATE_START,
                tantivy.FieldType.Integer,
                lower_bound=None,
                upper_bound=last,
            )
        )
    if first is not None:
        clauses.append(
            tantivy.Query.range_query(
                schema,
                ls.DATE_END,
                tantivy.FieldType.Integer,
                lower_bound=first,
                upper_bound=None,
            )
        )
    if not clauses:
        return tantivy.Query.exists_query(ls.DATE_START)
    if len(clauses) == 1:
        return clauses[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, c) for c in clauses])


def _any_of(
    schema: Any, field_name: str, values: tuple[str, ...], key: Callable[[str], str] = ls.exact_key
) -> Any:
    keys = sorted({key(v) for v in values})
    return tantivy.Query.term_set_query(schema, field_name, keys)


def filter_clauses(schema: Any, filters: Filters) -> list[Any]:
    """Each restriction as a constant-0 query: they select, they never rank."""
    clauses: list[Any] = []
    if filters.year_from is not None or filters.year_to is not None:
        clauses.append(year_range(schema, filters.year_from, filters.year_to))
    if filters.date_from is not None or filters.date_to is not None:
        clauses.append(date_range(schema, filters.date_from, filters.date_to))
    if filters.journals:
        clauses.append(_any_of(schema, ls.JOURNAL_KEY, filters.journals, fk.journal_key))
    if filters.publication_types:
        clauses.append(_any_of(schema, ls.PUB_TYPE, filters.publication_types))
    if filters.languages:
        clauses.append(_any_of(schema, ls.LANGUAGE, filters.languages))
    if filters.exclude_retracted:
        clauses.append(exclude(match_all(), _any_of(schema, ls.PUB_TYPE, (RETRACTED_TYPE,))))
    return [tantivy.Query.const_score_query(c, 0.0) for c in clauses]
