"""The query AST: what ``parse_query`` returns and what each retriever translates.

Small frozen dataclasses, so a parsed query hashes (caches can key on it) and prints
readably in test failures. ``pos`` is the character offset in the query text, kept so
later stages can point at the problem too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from medsearch.records import Filters

# Canonical field tags, PubMed's short forms.
# [tiab]: title, abstract, other abstracts, author keywords; [tw]: PubMed's text words;
# [all]: every field, authors and journals too (PubMed help, "Search Field Descriptions
# and Tags"; index.lexical.query._TAG_FIELDS says which fields each reads).
TEXT_TAGS = ("ti", "ab", "tiab", "mh", "majr", "kw", "tw", "all")
NAME_TAGS = ("au", "1au", "fau", "lastau")
WORD_TAGS = ("ad", "gr")  # searched as words (phrases), not stemmed
EXACT_TAGS = ("pt", "ta", "la")  # compared as whole casefolded strings
# Compared as whole keys (medsearch.field_keys) and never lifted into Filters; a
# truncated [mh]/[majr] value searches the words of the headings instead.
# [rn]: EC/RN and registry numbers; [pa]: a pharmacological action (a MeSH heading).
KEY_TAGS = ("mh", "majr", "sh", "aid", "sb", "nm", "rn", "pa")
# Date tags (PubMed help, "Search by date"): [dp] publication (print or electronic),
# [ppdat] print, [epdat] electronic, and the record's own dates (field_keys.RECORD_DATES).
RECORD_DATE_TAGS = ("crdt", "edat", "mhda", "dcom", "lr")
DATE_TAGS = ("dp", "ppdat", "epdat", *RECORD_DATE_TAGS)
FILTER_TAGS = ("dp", *EXACT_TAGS)  # may be lifted out of the query into Filters
# Tags whose value is a whole name: a run of words before them is one value, not a list.
WHOLE_VALUE_TAGS = (*DATE_TAGS, "pmid", *NAME_TAGS, *WORD_TAGS, *EXACT_TAGS, *KEY_TAGS)
ALL_TAGS = (
    *TEXT_TAGS,
    *NAME_TAGS,
    *WORD_TAGS,
    *EXACT_TAGS,
    "sh",
    "aid",
    "sb",
    "nm",
    "rn",
    "pa",
    *DATE_TAGS,
    "pmid",
)


@dataclass(frozen=True, slots=True)
class Term:
    """One word as typed (``IL-6``, ``covid19``); the analyzer may split it into tokens."""

    text: str
    pos: int = 0


@dataclass(frozen=True, slots=True)
class Phrase:
    """A ``"quoted phrase"``: its tokens must appear adjacent and in order.

    ``near``: a proximity search (``"hip pain"[tiab:~2]``) instead: the words in any
    order, at most ``near`` words between each (PubMed help, "Proximity searching").
    """

    text: str
    pos: int = 0
    near: int | None = None


@dataclass(frozen=True, slots=True)
class Prefix:
    """A truncated word (``immun*``); ``text`` excludes the ``*``."""

    text: str
    pos: int = 0


@dataclass(frozen=True, slots=True)
class YearRange:
    """``2015[dp]``, ``2019/08[dp]`` or ``2015:2020/06/30[crdt]``: dates, both ends
    inclusive. ``start``/``end`` are the years; ``first``/``last`` the ``YYYYMMDD``
    span the typed dates cover (``field_keys.date_bounds``), 0 when built from years.
    ``tag``: which date (:data:`DATE_TAGS`); only ``dp`` may become a filter."""

    start: int
    end: int
    pos: int = 0
    first: int = 0
    last: int = 0
    tag: str = "dp"

    @property
    def bounds(self) -> tuple[int, int]:
        """The ``YYYYMMDD`` span: the typed one, or the whole years."""
        if self.first and self.last:
            return self.first, self.last
        return self.start * 10000, self.end * 10000 + 1231


@dataclass(frozen=True, slots=True)
class Tagged:
    """``node[tag]``: search ``node`` only in the field(s) the tag names.

    ``noexp``: ``[mh:noexp]``/``[majr:noexp]``, the heading without the narrower ones.
    ``keys``: for a MeSH heading once MeSH is installed, the heading keys it searches
    (every heading under it in the tree, unless ``noexp``; an entry term's heading);
    empty: the typed value's own key (:mod:`medsearch.mesh.expand` fills it).
    """

    tag: str
    node: Node
    pos: int = 0
    noexp: bool = False
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class And:
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Explicit ``OR`` and also adjacent words: ranked, more matched words score higher.

    ``words``: the children were typed side by side (``aspirin stroke prevention``), not
    joined by ``OR``. A long run of such words may be ranked on its rarer ones
    (``index.lexical.query.WordBudget``); every alternative of an explicit ``OR`` always counts.
    """

    children: tuple[Node, ...]
    words: bool = False


@dataclass(frozen=True, slots=True)
class Not:
    """Documents that do not match ``child`` (``a NOT b`` is ``And(a, Not(b))``)."""

    child: Node


Node: TypeAlias = Term | Phrase | Prefix | YearRange | Tagged | And | Or | Not


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    """A parsed query: the part to match and rank, plus restrictions lifted out of it.

    ``node`` is ``None`` when the query has no ranked part (empty text, or only field
    tags that became ``filters`` such as ``2015:2020[dp] AND review[pt]``).
    ``set_query``: written as a Boolean set (an operator, a field tag, a quoted phrase
    or a truncation; :func:`medsearch.query.parser.is_set_query`), so its words side
    by side are ANDed; plain words alone are ranked retrieval.
    ``notes``: each place the text was read differently from how it was typed (curly
    quotes made straight, a second tag ignored...), one line each, for the user.
    """

    text: str
    node: Node | None
    filters: Filters = field(default_factory=Filters)
    set_query: bool = False
    notes: tuple[str, ...] = ()


def leaves(node: Node | None) -> list[Term | Phrase | Prefix | YearRange]:
    """Every leaf under ``node``, left to right (``Not`` children included)."""
    if node is None:
        return []
    if isinstance(node, Term | Phrase | Prefix | YearRange):
        return [node]
    if isinstance(node, Tagged | Not):
        return leaves(node.node if isinstance(node, Tagged) else node.child)
    out: list[Term | Phrase | Prefix | YearRange] = []
    for child in node.children:
        out.extend(leaves(child))
    return out
