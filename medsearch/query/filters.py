"""Lift restriction tags (``[dp]``, ``[pt]``, ``[ta]``, ``[la]``) out of a query into Filters.

A tag that restricts the whole query (it sits in the top-level AND, or is the whole
query) means the same as the CLI's ``--year``/``--type``/``--journal``/``--language``, so
every retriever (dense ones too) can apply it. A tag anywhere else (``cancer OR
review[pt]``) changes which documents match in a way a filter cannot express, so it
stays in the query and the lexical index evaluates it there.

``Filters`` holds alternatives (any journal of ``journals``), so only one clause per kind
is lifted: ``nature[ta] AND science[ta]`` asks for both at once and stays in the query.
``(review[pt] OR editorial[pt])`` is one clause with two alternatives and is lifted.
"""

from __future__ import annotations

from collections import Counter

from medsearch.query.nodes import EXACT_TAGS, And, Node, Or, Phrase, Tagged, Term, YearRange
from medsearch.records import Filters


def lift_filters(node: Node | None) -> tuple[Node | None, Filters]:
    """``node`` without its liftable restriction clauses, and those clauses as Filters."""
    if node is None:
        return None, Filters()
    clauses = node.children if isinstance(node, And) else (node,)
    kinds = [_clause_kind(c) for c in clauses]
    counts = Counter(k for k in kinds if k is not None)
    filters = Filters()
    kept: list[Node] = []
    for clause, kind in zip(clauses, kinds, strict=True):
        if kind is None or (kind != "dp" and counts[kind] > 1):
            kept.append(clause)
        else:
            filters = filters.merge(_as_filters(clause, kind))
    if not kept:
        return None, filters
    if len(kept) == 1:
        return kept[0], filters
    return And(tuple(kept)), filters


def _exact_values(node: Node, tag: str | None) -> list[str] | None:
    """The alternatives of an exact-tag clause, or None if ``node`` is not one."""
    if isinstance(node, Tagged) and node.tag in EXACT_TAGS and tag in (None, node.tag):
        inner = node.node
        if isinstance(inner, Term | Phrase):
            return [inner.text.strip()]
        return None
    if isinstance(node, Or):
        values: list[str] = []
        first_tag = tag
        for child in node.children:
            if first_tag is None and isinstance(child, Tagged):
                first_tag = child.tag
            got = _exact_values(child, first_tag)
            if got is None:
                return None
            values.extend(got)
        return values
    return None


def _clause_kind(node: Node) -> str | None:
    if isinstance(node, YearRange):  # the record's own dates are no Filters field
        return "dp" if node.tag == "dp" else None
    values = _exact_values(node, None)
    if not values or not all(values):
        return None
    return _first_tag(node)


def _first_tag(node: Node) -> str | None:
    if isinstance(node, Tagged):
        return node.tag
    if isinstance(node, Or):
        return _first_tag(node.children[0])
    return None


def _as_filters(node: Node, kind: str) -> Filters:
    if isinstance(node, YearRange):  # the whole date: a MedlineDate's span counts
        first, last = node.bounds
        return Filters(date_from=first, date_to=last)
    values = tuple(_exact_values(node, kind) or ())
    if kind == "pt":
        return Filters(publication_types=values)
    if kind == "ta":
        return Filters(journals=values)
    return Filters(languages=values)
