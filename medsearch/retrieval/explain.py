"""``--explain``: the query as run (PubMed's "Search details"), and the strategy as a
tree with the count of every clause.

PubMed shows only the whole translation and one count; a reviewer whose 40-line
strategy finds nothing cannot see which block emptied the set. Ovid's numbered lines
each carry a count; this tree gives the same for one query: every group of the plan
(an ``AND``, an ``OR``, a ``NOT``, a mapped word's alternatives) counted alone, down to
each term. A ``NOT`` clause counts the articles it excludes. The restrictions (the
query's own ``[dp]``/``[pt]``/``[ta]``/``[la]`` and the command line's) are one clause.

Each count is one unscored lexical count of that clause over the whole corpus, all of
them in one call (:meth:`~medsearch.index.lexical.index.LexicalIndex.counts`): the cost
grows with the clauses and the postings they read, measured in BENCHMARKS.md
("--explain clause counts").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from medsearch.query.nodes import And, Node, Not, Or, ParsedQuery, Tagged
from medsearch.query.printer import filter_clauses, format_node, format_query
from medsearch.retrieval.sets import Plan


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


def details(plan: Plan) -> str:
    """The query as run, with the command line's restrictions (the plan's) beside it,
    written by the one printer as the history writes it: PubMed's "Search details"
    spelling where MeSH translated the query, else the query as read (which is then the
    query as run)."""
    counted = plan.counted or plan.parsed
    return format_query(counted, plan.filters, details=_spelt(plan))


def _spelt(plan: Plan) -> bool:
    return plan.translation is not None


def explain_tree(plan: Plan, lexical: Any, *, total: int | None = None) -> Clause:
    """The plan's counted query (the set, or every plain word) as a tree of clauses,
    each with its own count; the root's count is the search's count (``total``, when
    the search has counted it already). ``lexical``: the lexical index (or its shards),
    whose ``counts`` counts every clause in one call, unscored. The command line's
    restrictions are the plan's, one clause with the query's own."""
    counted = plan.counted or plan.parsed
    caller = plan.filters
    spelt = _spelt(plan)
    probes: list[ParsedQuery] = []

    def probe(node: Node) -> int:
        """Queue a clause to count alone; its place in the answer."""
        probes.append(ParsedQuery(text="", node=node, set_query=True))
        return len(probes) - 1

    def walk(node: Node) -> _Pending:
        if isinstance(node, Not):
            inner = walk(node.child)
            return _Pending(f"NOT {inner.text}", inner.slot, inner.children)
        text = format_node(node, details=spelt)
        if isinstance(node, And | Or) and len(node.children) > 1:
            return _Pending(text, probe(node), tuple(walk(c) for c in node.children))
        if isinstance(node, Tagged) and isinstance(node.node, And | Or):
            return _Pending(text, probe(node), (walk(node.node),))
        return _Pending(text, probe(node))

    restrictions = filter_clauses(counted.filters, details=spelt)
    restrictions += filter_clauses(caller, details=spelt)
    whole = format_query(counted, caller, details=spelt)
    if total is None:
        total = lexical.counts([counted], caller)[0]
    node = counted.node
    if node is None:  # restrictions alone: one clause
        return Clause(whole, int(total))
    split = isinstance(node, And) or not restrictions  # an OR beside restrictions stays whole
    if isinstance(node, And | Or) and len(node.children) > 1 and split:
        parts = [walk(child) for child in node.children]
    else:
        parts = [walk(node)]
    found = lexical.counts(probes)  # each clause alone, in one call
    children = [p.done(found) for p in parts]
    if restrictions:
        alone = ParsedQuery(text="", node=None, filters=counted.filters)
        children.append(Clause(" AND ".join(restrictions), lexical.counts([alone], caller)[0]))
    if len(children) == 1 and children[0].text == whole:
        return Clause(whole, int(total), children[0].children)
    return Clause(whole, int(total), tuple(children))


@dataclass(frozen=True, slots=True)
class _Pending:
    """A clause whose count is still to come: its place among the probes."""

    text: str
    slot: int
    children: tuple[_Pending, ...] = ()

    def done(self, found: list[int]) -> Clause:
        return Clause(self.text, found[self.slot], tuple(c.done(found) for c in self.children))


def tree_lines(tree: dict[str, Any], depth: int = 0) -> list[str]:
    """A tree (:meth:`Clause.to_dict`) as indented text lines: the count, then the
    clause, each level two spaces further in."""
    out = [f"{tree['count']:>12,}  {'  ' * depth}{tree['text']}"]
    for child in tree["children"]:
        out.extend(tree_lines(child, depth + 1))
    return out
