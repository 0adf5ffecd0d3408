"""A parsed query as PubMed runs it once MeSH is installed: headings exploded, entry terms
resolved, untagged words mapped (automatic term mapping).

PubMed's help ("Searching MeSH terms", "How PubMed works: automatic term mapping",
https://pubmed.ncbi.nlm.nih.gov/help/) is the specification:

- ``heading[mh]`` searches the heading and every heading under any of its tree numbers;
  ``[mh:noexp]`` the heading alone; ``[majr]`` and ``[majr:noexp]`` the same among
  major topics. An entry term names its heading (``mouse[mh]`` is Mice).
  ``heading/subheading[mh]`` takes the subheading's name or its two-letter abbreviation,
  and explodes the heading with the subheading kept. ``[sh]`` takes either too, and
  explodes through NLM's subheading tree where the qualifier file is installed
  (``therapy[sh]`` also finds ``/drug therapy``); ``[sh:noexp]`` the subheading alone.
- ``[pa]`` (Pharmacological Action) finds the articles indexed with any substance MeSH
  lists under the action, as a heading or as a supplementary concept, and with the
  action's own heading ("Pharmacological Action [PA]: substances known to have a
  particular pharmacological action ... both MeSH terms and Supplementary Concept
  Records", PubMed help, "Search Field Descriptions and Tags").
- ``[nm]`` matches the records' supplementary concepts and chemicals; a concept's
  synonym names the concept.
- An untagged run of words is looked up, longest stretch first, in the MeSH
  translation table (entry terms and supplementary concept names); a stretch found
  there searches its concepts ``[nm]``, its headings (exploded, a concept's mapped
  headings too) OR the words as typed. A run MeSH does not
  know is tried as a journal, then as an author's name. Quoted phrases, truncated
  words and tagged words are searched as typed, as in PubMed.

The result is an ordinary :class:`ParsedQuery`: a heading's keys ride on its
:class:`Tagged` node (``keys``) and the lexical side matches them in one term-set query.
Its text is written by the one printer, :func:`medsearch.query.printer.translation_text`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from medsearch import field_keys as fk
from medsearch.mesh import tables
from medsearch.query.field_notes import field_notes
from medsearch.query.nodes import (
    And,
    Node,
    Not,
    Or,
    ParsedQuery,
    Phrase,
    Tagged,
    Term,
)
from medsearch.query.printer import format_node, translation_text

MAX_SPAN = 6
"""Longest run of words looked up as one entry term (MeSH's longest entry terms that a
user types run to about six words)."""
HEADING_TAGS = ("mh", "majr")


@dataclass
class MeshLookup:
    """The installed MeSH, read from the store's tables, with each answer kept for the
    lookups of one searcher."""

    conn: sqlite3.Connection
    year: int
    _explosions: dict[tuple[str, bool], tuple[str, ...]] = field(default_factory=dict)
    _abbreviations: dict[str, str] | None = None
    _installed: dict[str, bool] = field(default_factory=dict)

    @property
    def subheading_tree(self) -> bool:
        """Whether NLM's subheading tree is installed (``[sh]`` explodes)."""
        if "tree" not in self._installed:
            self._installed["tree"] = tables.has_subheading_tree(self.conn)
        return self._installed["tree"]

    @property
    def actions(self) -> bool:
        """Whether MeSH's pharmacological actions are installed (``[pa]`` finds them)."""
        if "actions" not in self._installed:
            self._installed["actions"] = tables.has_actions(self.conn)
        return self._installed["actions"]

    def subheading_keys(self, name: str, noexp: bool) -> tuple[str, ...]:
        """The subheading keys ``name`` searches: itself, and where the subheading tree
        is installed and not ``noexp`` every subheading under it."""
        if noexp or not self.subheading_tree:
            return (fk.name_key(name),)
        cache = ("/" + name, noexp)
        if cache not in self._explosions:
            keys = tables.subheading_keys(self.conn, name)
            self._explosions[cache] = (keys[0], *sorted(set(keys[1:]) - {keys[0]}))
        return self._explosions[cache]

    @classmethod
    def open(cls, conn: sqlite3.Connection) -> MeshLookup | None:
        year = tables.installed_year(conn)
        return None if year is None else cls(conn, year)

    def heading_keys(self, ui: str, noexp: bool) -> tuple[str, ...]:
        """The heading keys ``ui`` searches: itself, and unless ``noexp`` every heading
        under it."""
        key = (ui, noexp)
        if key not in self._explosions:
            keys = tables.exploded_keys(self.conn, ui, noexp=noexp)
            self._explosions[key] = tuple(sorted(set(keys)))
        return self._explosions[key]

    def qualifier(self, value: str, ui: str | None = None) -> str | None:
        """The subheading ``value`` names (its name or abbreviation), among ``ui``'s
        allowed ones when given; None when MeSH has no such subheading."""
        key = fk.name_key(value)
        if ui is not None:
            for q in tables.qualifiers(self.conn, ui):
                if key in (fk.name_key(q.name), q.abbreviation.casefold()):
                    return q.name
            return None
        if self._abbreviations is None:
            rows = self.conn.execute("SELECT DISTINCT name, abbreviation FROM mesh_qualifiers")
            found = rows.fetchall()
            if self.subheading_tree:  # the qualifier file names every subheading
                found += self.conn.execute(
                    "SELECT name, abbreviation FROM mesh_subheadings ORDER BY ui"
                ).fetchall()
            self._abbreviations = {}
            for name, abbreviation in found:
                self._abbreviations[fk.name_key(name)] = name
                self._abbreviations.setdefault(abbreviation.casefold(), name)
        return self._abbreviations.get(key)


@dataclass(frozen=True, slots=True)
class Translation:
    """A query as it runs: ``parsed`` with MeSH applied, what PubMed's "Search details"
    would print (``text``), and notes on what could not be applied."""

    parsed: ParsedQuery
    text: str
    notes: tuple[str, ...] = ()
    mapped: bool = False
    """Whether automatic term mapping changed an untagged word."""


Probe = Callable[[str], bool]
"""Whether a run of words is a journal (or an author) of this corpus."""


def translate(
    parsed: ParsedQuery,
    mesh: MeshLookup,
    *,
    is_journal: Probe | None = None,
    is_author: Probe | None = None,
) -> Translation:
    """``parsed`` with its headings resolved and its untagged words mapped."""
    walk = _Walk(parsed.text, mesh, is_journal, is_author)
    node = walk.node(parsed.node) if parsed.node is not None else None
    out = replace(parsed, node=node)
    notes = (
        *walk.notes,
        *field_notes(parsed, mesh=True, subheading_tree=mesh.subheading_tree, actions=mesh.actions),
    )
    return Translation(out, translation_text(out), tuple(dict.fromkeys(notes)), walk.mapped)


@dataclass
class _Walk:
    text: str
    mesh: MeshLookup
    is_journal: Probe | None
    is_author: Probe | None
    notes: list[str] = field(default_factory=list)
    mapped: bool = False

    def node(self, node: Node) -> Node:
        if isinstance(node, Tagged):
            return self.tagged(node)
        if isinstance(node, Not):
            return Not(self.node(node.child))
        if isinstance(node, And | Or):
            if _explicit_or(node):
                return replace(node, children=self.alternatives(node.children))
            children = self.runs(node.children)  # its words are mapped here, once
            if len(children) == 1:
                return (
                    children[0]
                    if isinstance(children[0], Term | _Mapped)
                    else self.node(children[0])
                )
            return replace(
                node,
                children=tuple(
                    c if isinstance(c, Term | _Mapped) else self.node(c) for c in children
                ),
            )
        if isinstance(node, Term):
            mapped = self.map_run([node])
            return mapped if mapped is not None else node
        return node

    def alternatives(self, children: tuple[Node, ...]) -> tuple[Node, ...]:
        """An explicit OR's children walked; a word whose mapping only adds what the OR
        already holds stays a word. A translation run again (``#N``, whose expansion
        is one) then reads as it did, not ``("Rats"[MeSH Terms] OR ("Rats"[MeSH Terms]
        OR rats))``: the same set, a longer text."""
        walked = [c if isinstance(c, Term) else self.node(c) for c in children]
        held = {_alternative(c) for c in walked if isinstance(c, Tagged)}
        out: list[Node] = []
        for child in walked:
            if isinstance(child, Term):
                before = self.mapped
                mapped = self.map_run([child])
                if isinstance(mapped, _Mapped) and not _adds(mapped) <= held:
                    child = mapped
                else:
                    self.mapped = before
            out.append(child)
        return tuple(out)

    # -- tagged headings ------------------------------------------------------------------

    def tagged(self, node: Tagged) -> Node:
        if node.tag == "sh" and isinstance(node.node, Term | Phrase):
            name = self.mesh.qualifier(node.node.text)
            if name is None:
                self.notes.append(f"{node.node.text!r} is not a MeSH subheading")
                return node
            keys = self.mesh.subheading_keys(name, node.noexp)
            return replace(node, node=_as_typed(node.node, name), keys=keys)
        if node.tag == "pa" and isinstance(node.node, Term | Phrase):
            return self.action(node, node.node)
        if node.tag == "nm" and isinstance(node.node, Term | Phrase):
            concepts = tables.translate(self.mesh.conn, node.node.text)
            names = concepts.supplementals if concepts is not None else ()
            concept_keys = {fk.name_key(node.node.text), *(fk.name_key(n) for n in names)}
            return replace(node, keys=tuple(sorted(concept_keys)))
        if node.tag not in HEADING_TAGS or not isinstance(node.node, Term | Phrase):
            return node
        value = node.node.text
        heading, _, sub = value.partition("/")
        ui = tables.descriptor_ui(self.mesh.conn, heading)
        if ui is None:
            self.notes.append(f"{heading.strip()!r} is not a MeSH heading: matched as typed")
            return node
        keys = self.mesh.heading_keys(ui, node.noexp)
        shown = tables.names(self.mesh.conn, [ui])[ui]
        if sub.strip():
            name = self.mesh.qualifier(sub, ui)
            if name is None:
                self.notes.append(f"{sub.strip()!r} is not a subheading allowed for {heading!r}")
                name = sub.strip()
            keys = tuple(f"{k}/{fk.name_key(name)}" for k in keys)
            shown = f"{shown}/{name}"
        return replace(node, node=_as_typed(node.node, shown), keys=keys)

    def action(self, node: Tagged, typed: Term | Phrase) -> Node:
        """``X[pa]``: the action's own heading and every substance MeSH gives it (their
        heading and concept names, looked up in the heading and substance fields)."""
        if not self.mesh.actions:
            return node  # field_notes says the actions are not installed
        ui = tables.descriptor_ui(self.mesh.conn, typed.text)
        if ui is None:
            self.notes.append(f"{typed.text.strip()!r} is not a MeSH heading: matched as typed")
            return node
        found = tables.action_substances(self.mesh.conn, ui)
        own = fk.name_key(tables.names(self.mesh.conn, [ui])[ui])
        keys = (own, *sorted({*found.headings, *found.concepts} - {own}))
        shown = tables.names(self.mesh.conn, [ui])[ui]
        return replace(node, node=_as_typed(typed, shown), keys=keys)

    # -- automatic term mapping ------------------------------------------------------------

    def runs(self, children: tuple[Node, ...]) -> tuple[Node, ...]:
        """``children`` with each stretch of adjacent untagged words that the translation
        table knows replaced by its mapping, longest stretch first from the left."""
        out: list[Node] = []
        i = 0
        while i < len(children):
            run_end = i
            while (
                run_end < len(children)
                and isinstance(children[run_end], Term)
                and (run_end == i or self.adjacent(children[run_end - 1], children[run_end]))
            ):
                run_end += 1
            if run_end == i:
                out.append(children[i])
                i += 1
                continue
            words = [c for c in children[i:run_end] if isinstance(c, Term)]
            out.extend(self.map_words(words))
            i = run_end
        return tuple(out)

    def adjacent(self, left: Node, right: Node) -> bool:
        """Typed side by side (only spaces between): ``heart attack``, not ``heart AND attack``."""
        if not isinstance(left, Term) or not isinstance(right, Term):
            return False
        gap = self.text[left.pos + len(left.text) : right.pos]
        return right.pos > left.pos and not gap.strip()

    def map_words(self, words: list[Term]) -> list[Node]:
        out: list[Node] = []
        i = 0
        while i < len(words):
            for end in range(min(len(words), i + MAX_SPAN), i, -1):
                mapped = self.mesh_map(words[i:end])
                if mapped is not None:
                    out.append(mapped)
                    i = end
                    break
            else:
                out.append(words[i])
                i += 1
        if not any(isinstance(n, _Mapped) for n in out) and len(words) > 1:
            other = self.journal_or_author(words)
            if other is not None:
                return [other]
        return out

    def map_run(self, words: list[Term]) -> Node | None:
        found = self.map_words(words)
        return found[0] if len(found) == 1 and isinstance(found[0], _Mapped) else None

    def mesh_map(self, words: list[Term]) -> _Mapped | None:
        phrase = " ".join(w.text for w in words)
        if len(phrase) < 3:
            return None
        found = tables.translate(self.mesh.conn, phrase)
        if found is None:
            return None
        typed: Node = words[0] if len(words) == 1 else And(tuple(words))
        pos = words[0].pos
        alternatives: list[Node] = [
            Tagged("nm", Phrase(name, pos), pos, keys=(fk.name_key(name),))
            for name in found.supplementals
        ]
        for ui, name in found.headings:
            keys = self.mesh.heading_keys(ui, False)
            alternatives.append(Tagged("mh", Phrase(name, pos), pos, keys=keys))
        if not alternatives:
            return None
        self.mapped = True
        return _Mapped((*alternatives, typed))

    def journal_or_author(self, words: list[Term]) -> Node | None:
        phrase = " ".join(w.text for w in words)
        typed = And(tuple(words))
        pos = words[0].pos
        if self.is_journal is not None and self.is_journal(phrase):
            self.mapped = True
            return _Mapped((Tagged("ta", Phrase(phrase, pos), pos), typed))
        if self.is_author is not None and _looks_like_a_name(words) and self.is_author(phrase):
            self.mapped = True
            return _Mapped((Tagged("au", Phrase(phrase, pos), pos), typed))
        return None


def _adds(mapped: _Mapped) -> set[tuple[str, bool, str]]:
    """What a mapping adds to the word typed (its last child)."""
    return {_alternative(a) for a in mapped.children[:-1] if isinstance(a, Tagged)}


def _alternative(node: Tagged) -> tuple[str, bool, str]:
    text = node.node.text if isinstance(node.node, Term | Phrase) else format_node(node.node)
    return node.tag, node.noexp, text.casefold()


class _Mapped(Or):
    """An ``Or`` that automatic term mapping built (not walked again)."""

    __slots__ = ()


def _as_typed(typed: Term | Phrase, name: str) -> Phrase:
    """The heading MeSH resolved, where the user typed its value (for the dense side's
    words and the translation shown)."""
    return Phrase(name, typed.pos)


def _explicit_or(node: Node) -> bool:
    return isinstance(node, Or) and not node.words


def _looks_like_a_name(words: list[Term]) -> bool:
    """``smith ja``, ``Smith JA``: a surname and initials (PubMed's author step)."""
    return len(words) == 2 and words[1].text.isalpha() and len(words[1].text) <= 3
