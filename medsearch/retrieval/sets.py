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

from dataclasses import dataclass

from medsearch.index.lexical_query import STOP_WORDS
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

SET_EXACT_MAX = 20_000
"""Sets up to this size are listed from the lexical index and their own vectors scored
exactly; larger sets are searched by oversampling the whole-corpus dense search and
checking each candidate's membership (:func:`dense_method`).

Why 20K: scoring a set exactly gathers its float16 rows from the memmap and takes one
(n x d) product; a benchmark (docs/benchmarks-history.md) measured ~9 us per 768-d vector on this
project's 2 shared cores (p95: 5K 69 ms, 10K 105 ms, 20K 179 ms, 50K 309 ms; recall
1.0), so 20K keeps the dense side near half of the 300 ms budget, listing the PMIDs
(tantivy top-k, ~0.7 ms per thousand) included. Above it the set holds at least 20K /
40.9M = 0.05% of PubMed, usually far more (``review[pt]``: ~7%): the oversampled search
(``DEEPEN`` factors up to 64 x the dense candidates) finds members for the head, and
when it does not the result says so and BM25's order fills the rest.
"""


UNREAD_TAGS = ("pt", "ta", "la", "pmid", "dp", "aid", "sb", "sh")
"""Tags whose values are identifiers or codes (a type, a journal, a DOI, a subset), not
words about the topic: the encoder does not read them."""


@dataclass(frozen=True, slots=True)
class Plan:
    """One query, parsed once, as every side reads it.

    ``parsed``: what the lexical side matches and ranks. ``is_set``: whether the query
    asks for a set (see the module docstring). ``text``: the words the dense side and the
    rerankers read (tags, operators and excluded words left out). ``all_words``: for
    plain words, the query holding every word (its count is the result's ``total``);
    None for a set query.
    """

    parsed: ParsedQuery
    is_set: bool
    text: str
    all_words: ParsedQuery | None


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


def dense_method(size: int) -> str:
    """How the dense side searches inside a set of ``size`` articles: ``"exact"`` (list
    the set, score its own vectors) up to :data:`SET_EXACT_MAX`, else ``"oversample"``
    (search the whole corpus deeper and keep the members)."""
    return "exact" if size <= SET_EXACT_MAX else "oversample"
