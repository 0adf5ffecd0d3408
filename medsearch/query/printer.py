"""The one printer of a query: a parsed query (or a plan's, MeSH applied) written back as
query text, for the history, ``#N``, ``--explain``, the PRISMA log and ``rerun``.

Two spellings of the same text, from the same walk: the query as read (short tags,
``heart[ti]``) and PubMed's "Search details" (``details``: PubMed's tag names and every
tagged value quoted, ``"Mice"[MeSH Terms]``), which is how a translated query is shown
beside PubMed's own. Before this module was the only one, MeSH's translation had its own
printer that wrote dates as whole years, and a search was written one way in
``--explain`` and another in the history.

The text is canonical: tags in their short form, explicit ``AND``/``OR``/``NOT`` with
every group parenthesised (PubMed reads operators left to right with no precedence, so
only parentheses make the grouping unambiguous), dates spelt out, restrictions written
as the tags they mean. Parsing the text again gives the same tree, which is what makes
``#3 AND #5`` and ``history rerun`` run what was run, not what was typed.
"""

from __future__ import annotations

from medsearch.query.nodes import (
    And,
    Node,
    Not,
    Or,
    ParsedQuery,
    Phrase,
    Prefix,
    Tagged,
    Term,
    YearRange,
)
from medsearch.records import Filters

OPEN_END = 3000
"""The year an open range (``2015:``) is printed to, as PubMed prints ``2015:3000``."""

DETAIL_NAMES = {
    "mh": "MeSH Terms",
    "majr": "MeSH Major Topic",
    "sh": "Subheading",
    "nm": "Supplementary Concept",
    "ta": "Journal",
    "au": "Author",
    "pt": "Publication Type",
    "la": "Language",
    "tw": "Text Word",
    "all": "All Fields",
    "rn": "EC/RN Number",
    "pa": "Pharmacological Action",
}
"""PubMed's names for the tags its "Search details" spells out (the parser reads each)."""


def format_query(
    parsed: ParsedQuery, filters: Filters | None = None, *, details: bool = False
) -> str:
    """``parsed`` with its lifted restrictions, then ``filters`` (from the command line,
    searched beside the query's own) as clauses ANDed after it; ``details``: spelt as
    PubMed's "Search details" (see the module docstring)."""
    clauses = [format_node(parsed.node, details=details)] if parsed.node is not None else []
    clauses += filter_clauses(parsed.filters, details=details)
    if filters is not None:
        clauses += filter_clauses(filters, details=details)
    if len(clauses) > 1 and parsed.node is not None and _is_group(parsed.node):
        clauses[0] = f"({clauses[0]})"
    return " AND ".join(clauses)


def translation_text(parsed: ParsedQuery) -> str:
    """``parsed`` as PubMed's "Search details" prints it: the query, then the
    restrictions lifted out of it."""
    return format_query(parsed, details=True)


def format_node(node: Node, *, details: bool = False) -> str:
    """One node (and everything under it) as query text."""
    if isinstance(node, Term):
        return node.text
    if isinstance(node, Phrase):
        return f'"{node.text}"'
    if isinstance(node, Prefix):
        return f'"{node.text}*"' if " " in node.text else f"{node.text}*"
    if isinstance(node, YearRange):
        return f"{_dates(node)}[{node.tag}]"
    if isinstance(node, Tagged):
        inner = node.node
        near = f":~{inner.near}" if isinstance(inner, Phrase) and inner.near is not None else ""
        text = format_node(inner, details=details)
        if _is_group(inner):
            text = f"({text})"
        elif isinstance(inner, Term) and (" " in inner.text or details):
            text = f'"{inner.text}"'
        noexp = ":noexp" if node.noexp else ""
        name = DETAIL_NAMES.get(node.tag, node.tag) if details else node.tag
        return f"{text}[{name}{noexp}{near}]"
    if isinstance(node, Not):
        return f"NOT {_operand(node.child, details)}"
    if isinstance(node, Or):
        joint = " " if node.words else " OR "
        return joint.join(_operand(child, details) for child in node.children)
    parts = [_operand(node.children[0], details)]
    for child in node.children[1:]:
        if isinstance(child, Not):
            parts.append(f"NOT {_operand(child.child, details)}")
        else:
            parts.append(f"AND {_operand(child, details)}")
    return " ".join(parts)


def filter_clauses(filters: Filters, *, details: bool = False) -> list[str]:
    """``filters`` as the tags that mean them, one clause per kind."""
    out: list[str] = []
    if filters.year_from is not None or filters.year_to is not None:
        low = filters.year_from if filters.year_from is not None else 1000
        high = filters.year_to if filters.year_to is not None else OPEN_END
        out.append(f"{low}[dp]" if low == high else f"{low}:{high}[dp]")
    if filters.date_from is not None or filters.date_to is not None:
        first = filters.date_from if filters.date_from is not None else 1000 * 10000
        last = filters.date_to if filters.date_to is not None else OPEN_END * 10000 + 1231
        out.append(f"{_span(first, last)}[dp]")
    for tag, values in (
        ("pt", filters.publication_types),
        ("ta", filters.journals),
        ("la", filters.languages),
    ):
        if values:
            name = DETAIL_NAMES[tag] if details else tag
            alternatives = " OR ".join(f'"{v}"[{name}]' for v in values)
            out.append(f"({alternatives})" if len(values) > 1 else alternatives)
    return out


def _operand(node: Node, details: bool = False) -> str:
    text = format_node(node, details=details)
    return f"({text})" if _is_group(node) else text


def _is_group(node: Node) -> bool:
    return isinstance(node, And | Or | Not) and not (
        isinstance(node, And | Or) and len(node.children) == 1
    )


def _dates(node: YearRange) -> str:
    if node.first and node.last:
        return _span(node.first, node.last)
    return str(node.start) if node.start == node.end else f"{node.start}:{node.end}"


def _span(first: int, last: int) -> str:
    """``YYYYMMDD`` bounds (:func:`~medsearch.field_keys.date_bounds`) as the shortest
    dates that give them back: a month or day of 0 at the start and 12/31 or 31 at the
    end are what a date without them covers."""
    year, month, day = first // 10000, first // 100 % 100, first % 100
    start = (
        f"{year}"
        if not month
        else f"{year}/{month:02d}"
        if not day
        else f"{year}/{month:02d}/{day:02d}"
    )
    year, month, day = last // 10000, last // 100 % 100, last % 100
    end = (
        f"{year}"
        if (month, day) == (12, 31)
        else f"{year}/{month:02d}"
        if day == 31
        else f"{year}/{month:02d}/{day:02d}"
    )
    return start if start == end else f"{start}:{end}"
