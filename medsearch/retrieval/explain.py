"""``--explain``: the query as run (PubMed's "Search details"), and the strategy as a
tree with the count of every clause.

PubMed shows only the whole translation and one count; a reviewer whose 40-line
strategy finds nothing cannot see which block emptied the set. Ovid's numbered lines
each carry a count; this tree gives the same for one query: every group of the plan
(an ``AND``, an ``OR``, a ``NOT``, a mapped word's alternatives) counted alone, down to
each term. A ``NOT`` clause counts the articles it excludes. The restrictions (the
query's own ``[dp]``/``[pt]``/``[ta]``/``[la]`` and the command line's) are one clause.

Each count is one lexical count of that clause over the whole corpus (no ranking
kept, ``k=1``): the cost grows with the clauses and the postings they read, measured
in BENCHMARKS.md ("--explain clause counts").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medsearch.query.nodes import And, Node, Not, Or, ParsedQuery, Tagged
from medsearch.query.printer import filter_clauses, format_node, format_query
from medsearch.records import Filters
from medsearch.retrieval.sets import Plan

NONE = Filters()
"""No restriction (a clause counted alone)."""


@dataclass(frozen=True, slots=True)
class Clause:
    """One clause of the strategy as run, how many articles it matches on its own, and
    the clauses it is made of."""

    text: str
    count: int
    children: tuple[Clause, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "count": self.count,
            "children": [c.to_dict() for c in self.children],
        }

    def size(self) -> int:
        """How many clauses the tree counts."""
        return 1 + sum(c.size() for c in self.children)


def details(plan: Plan, filters: Filters | None = None) -> str:
    """The query as run, with the command line's restrictions beside it, written by the
    one printer as the history writes it: PubMed's "Search details" spelling where MeSH
    translated the query, else the query as read (which is then the query as run)."""
    counted = plan.counted or plan.parsed
    return format_query(counted, filters, details=_spelt(plan))


def _spelt(plan: Plan) -> bool:
    return plan.translation is not None


def explain_tree(
    plan: Plan, lexical: Any, filters: Filters | None = None, *, total: int | None = None
) -> Clause:
    """The plan's counted query (the set, or every plain word) as a tree of clauses,
    each with its own count; the root's count is the search's count (``total``, when
    the search has counted it already). ``lexical``: the lexical index (or its shards),
    whose ``rank`` counts each clause."""
    counted = plan.counted or plan.parsed
    caller = filters or Filters()
    spelt = _spelt(plan)
    # one index's statistics for every count: a truncated word's variations are listed
    # once (~12 ms a stem at 100K articles), not once per clause that holds it
    shards = getattr(lexical, "shards", None)
    frequencies = (shards[0] if shards else lexical).frequencies()

    def count(node: Node | None, lifted: Filters = NONE, given: Filters = NONE) -> int:
        if node is None and lifted.empty and given.empty:
            return 0
        probe = ParsedQuery(text="", node=node, filters=lifted, set_query=True)
        return int(lexical.rank(probe, k=1, filters=given, frequencies=frequencies).total)

    def walk(node: Node) -> Clause:
        if isinstance(node, Not):
            inner = walk(node.child)
            return Clause(f"NOT {inner.text}", inner.count, inner.children)
        text = format_node(node, details=spelt)
        if isinstance(node, And | Or) and len(node.children) > 1:
            return Clause(text, count(node), tuple(walk(c) for c in node.children))
        if isinstance(node, Tagged) and isinstance(node.node, And | Or):
            return Clause(text, count(node), (walk(node.node),))
        return Clause(text, count(node))

    restrictions = filter_clauses(counted.filters, details=spelt)
    restrictions += filter_clauses(caller, details=spelt)
    whole = format_query(counted, caller, details=spelt)
    if total is None:
        total = count(counted.node, counted.filters, caller)
    if counted.node is None:  # restrictions alone: one clause
        return Clause(whole, total)
    top = walk(counted.node)
    if not restrictions:
        return Clause(whole, total, top.children)
    parts = list(top.children if _is_and(counted.node) else (top,))
    parts.append(Clause(" AND ".join(restrictions), count(None, counted.filters, caller)))
    return Clause(whole, total, tuple(parts))


def _is_and(node: Node) -> bool:
    return isinstance(node, And) and len(node.children) > 1


def tree_lines(tree: dict[str, Any], depth: int = 0) -> list[str]:
    """A tree (:meth:`Clause.to_dict`) as indented text lines: the count, then the
    clause, each level two spaces further in."""
    out = [f"{tree['count']:>12,}  {'  ' * depth}{tree['text']}"]
    for child in tree["children"]:
        out.extend(tree_lines(child, depth + 1))
    return out
