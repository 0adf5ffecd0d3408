"""Set queries and plain words: what a query's result set is, and how dense search
stays inside it.

A PubMed user who types an operator, a field tag, a quoted phrase or a truncation
(``cataract NOT surgery``, ``brca1[ti] AND review[pt]``, ``"heart failure"``,
``immun*``) asks for a set: PubMed returns exactly the articles that match
(https://pubmed.ncbi.nlm.nih.gov/help/#how-do-i-search-pubmed). Such a query is a
*set query*: its result set is the lexical index's set in every mode, and ``--mode``
only orders that set. Plain words with no syntax stay ranked retrieval over the whole
corpus; their count is the articles that hold every word, as PubMed's implicit AND
would count them, and ranked hits outside it are marked.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from medsearch.index.lexical.query import STOP_WORDS
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

SET_LIST_MAX = 200_000
"""Sets up to this size may be listed from the lexical index (unscored, in PMID order:
:meth:`LexicalIndex.set_pmids`) and handed to the vector collection as the allowed ids,
which scores them exactly up to its ``exact_filter_max`` and otherwise searches its
IVF-PQ index with the set as a Faiss ID selector: only members are scored, so the head
is found however small a part of the corpus the set is. Listing costs ~1 us a PMID on
this project's loaded 2 cores, so 200K is ~0.2 s at worst."""

OVERSAMPLE_SHARE = 0.02
"""A set holding at least this share of the corpus (and over ``OVERSAMPLE_MIN``) is not
listed: the whole-corpus dense search, deepened, meets its members for the head.
Measured on 1M clustered 768-d vectors (``benchmarks/search/sets.py``): oversampling a
random 2% (20K) of them gave recall@10 1.0 as listing did, and from 5% on it was the
faster (50K: 250 against 880 ms; 200K: 125 against 468 ms); at 0.1% (1K) its recall was
0.37. At 10M articles that leaves sets of 200K (2%) and more to it; at 40.9M every set
past ``SET_LIST_MAX`` (0.5% and more, where the deepened search still reaches ~300
members of a set for a top 10)."""

OVERSAMPLE_MIN = 20_000
"""Never oversample a set smaller than this, whatever the corpus: a small corpus's
"2%" is a handful of articles, which listing scores exactly for next to nothing."""


UNREAD_TAGS = ("pt", "ta", "la", "pmid", "dp", "aid", "sb", "sh", "rn")
"""Tags whose values are identifiers or codes (a type, a journal, a DOI, a subset), not
words about the topic: the encoder does not read them."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One query, parsed and translated once: the query as run, which every consumer
    reads (search, ``--count``, export, sort, the history's set and ``rerun``, watches,
    ``--explain``), so none of them can read the text another way.

    ``parsed``: what the lexical side matches and ranks (with MeSH applied where it is
    installed). ``is_set``: whether the query asks for a set (see the module docstring).
    ``text``: the words the dense side and the rerankers read (tags, operators and
    excluded words left out). ``all_words``: for plain words, the query holding every
    word (its count is the result's ``total``); None for a set query. ``read``: the
    query as read, before MeSH (what ``#N`` and ``rerun`` print and translate again);
    ``translation``: PubMed's "Search details" of ``parsed`` where MeSH changed or
    could change it (None without MeSH); ``notes``: how the text was read (plain words
    for unparsable prose, MeSH's notes); ``syntax``: False when read as plain words.
    ``filters``: the command line's restrictions (``--year``, ``--journal``, ``--type``,
    ``--date``), ANDed with the query's own: in the plan, not beside it, so the search,
    the history's set and ``rerun``, watches and ``--explain`` restrict alike.
    """

    parsed: ParsedQuery
    is_set: bool
    text: str
    all_words: ParsedQuery | None
    read: ParsedQuery | None = None
    translation: str | None = None
    notes: tuple[str, ...] = ()
    syntax: bool = True
    filters: Filters = field(default_factory=Filters)

    @property
    def as_read(self) -> ParsedQuery:
        """The query before MeSH (the plan itself where nothing translated it)."""
        return self.read if self.read is not None else self.parsed

    @property
    def counted(self) -> ParsedQuery | None:
        """The query whose matches the count counts: the set, or every plain word."""
        return self.parsed if self.is_set else self.all_words

    def counted_set(self) -> Plan:
        """This plan as the set its count counts (plain words: every word required), so
        an export or a sort other than relevance covers exactly what was counted."""
        if self.is_set or self.all_words is None:
            return self
        return replace(self, parsed=self.all_words, is_set=True, all_words=None)


def plan_query(parsed: ParsedQuery) -> Plan:
    """The :class:`Plan` of an already parsed query."""
    is_set = parsed.set_query  # the parser's reading, which also ANDs its words
    all_words = None if is_set else all_words_query(parsed)
    return Plan(parsed=parsed, is_set=is_set, text=ranking_text(parsed), all_words=all_words)


def ranking_text(parsed: ParsedQuery) -> str:
    """The words an encoder reads: every word the query asks to find, in order, from
    the parsed query (never a regex over its text); excluded words (``NOT``) and the
    values of :data:`UNREAD_TAGS` are not meaning to search by."""
    return " ".join(_words(parsed.node)) if parsed.node is not None else ""


def _words(node: Node) -> list[str]:
    if isinstance(node, Term | Phrase | Prefix):
        return [node.text]
    if isinstance(node, YearRange | Not):
        return []
    if isinstance(node, Tagged):
        return [] if node.tag in UNREAD_TAGS else _words(node.node)
    out: list[str] = []
    for child in node.children:
        out.extend(_words(child))
    return out


def all_words_query(parsed: ParsedQuery) -> ParsedQuery | None:
    """Plain words as PubMed reads them: every word required (implicit AND), stop words
    left out as the ranking leaves them out. One word is its own query (``parsed``
    itself); None when there are no words."""
    node = parsed.node
    if isinstance(node, Term):
        return parsed
    if not isinstance(node, Or) or not node.words:
        return None
    kept = tuple(c for c in node.children if not (isinstance(c, Term) and c.text in STOP_WORDS))
    kept = kept or node.children
    if len(kept) == 1:
        return ParsedQuery(text=parsed.text, node=kept[0], filters=parsed.filters)
    return ParsedQuery(text=parsed.text, node=And(kept), filters=parsed.filters)


def dense_method(size: int, corpus: int) -> str:
    """How the dense side searches inside a set of ``size`` of ``corpus`` articles:
    ``"listed"`` (the set's PMIDs restrict the vector search) up to :data:`SET_LIST_MAX`
    unless the set is a large share of the corpus (:data:`OVERSAMPLE_SHARE`), else
    ``"oversample"`` (search the whole corpus deeper and keep the members)."""
    if size > SET_LIST_MAX:
        return "oversample"
    if size >= max(OVERSAMPLE_MIN, OVERSAMPLE_SHARE * corpus):
        return "oversample"
    return "listed"
