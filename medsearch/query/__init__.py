"""PubMed-style query language: text -> :class:`ParsedQuery` (AST + lifted filters).

The AST is engine-neutral; ``medsearch.index.lexical.index`` turns it into a tantivy query and
dense retrievers use its filters and words. See :mod:`medsearch.query.parser` for the
grammar.
"""

from __future__ import annotations

from medsearch.errors import QuerySyntaxError
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
    leaves,
)
from medsearch.query.normalize import normalize_text, normalize_with_offsets, repair_undecodable
from medsearch.query.parser import parse_plain, parse_query

__all__ = [
    "And",
    "Node",
    "Not",
    "Or",
    "ParsedQuery",
    "Phrase",
    "Prefix",
    "QuerySyntaxError",
    "Tagged",
    "Term",
    "YearRange",
    "leaves",
    "normalize_text",
    "normalize_with_offsets",
    "parse_plain",
    "parse_query",
    "repair_undecodable",
]
