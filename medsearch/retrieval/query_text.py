"""The query-text rules: what each side of a search reads of the text typed, and the
notes a search gives about how it read it.

A query is parsed once; pasted prose (no operator, field tag, quote, truncation or
``#N``) that does not parse is read as plain words rather than refused, while a strategy
runs as written or is refused with its error, whatever its length; MeSH rewrites the
plan where it is installed; the dense side reads the plan's words (or the whole text,
for plain words), through the article encoder when the text is longer than the query
encoder reads. :class:`~medsearch.retrieval.searcher.Searcher` applies these rules in
its pipeline; they hold no state of their own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from medsearch.errors import QuerySyntaxError
from medsearch.query.nodes import ParsedQuery, Phrase, Tagged
from medsearch.query.parser import parse_plain, parse_query
from medsearch.query.readings import looks_like_strategy
from medsearch.records import Filters
from medsearch.retrieval.sets import Plan, plan_query

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex
    from medsearch.mesh.expand import MeshLookup
    from medsearch.models.encoders import Encoder

_TAGS = re.compile(r"\[[A-Za-z0-9 ]+\]|\b(?:AND|OR|NOT)\b|[()\"*]")

PROSE_WORDS = 8
"""From this many words, prose that does not parse as a query is searched as plain words.

A sentence or an abstract pasted into the search box often holds a ``(`` closed in the
next sentence or a citation marker ``[12]``; refusing it with a syntax error helps
nobody. A short query keeps its error, which points at the typo; so does any text
written in the query language (:func:`medsearch.query.readings.looks_like_strategy`): a
strategy read as plain words would run silently as something else.
"""

LONG_TEXT = (
    "long text: the dense side read it with the article encoder (as similar articles do);"
    " the query encoder reads short queries"
)
LONG_QUERY = "long query:"
"""How the note of :func:`dropped_note` starts."""


def dense_text(query: str) -> str:
    """The words of a PubMed-style query, for an encoder that reads natural language."""
    return " ".join(_TAGS.sub(" ", query).split())


@dataclass(frozen=True, slots=True)
class ReadQuery:
    """The text as the search will read it: parsed, or plain words and why."""

    parsed: ParsedQuery | None
    error: QuerySyntaxError | None
    """The syntax error, raised later unless the text was read as plain words."""
    syntax: bool
    """Whether the query language applies (False: plain words)."""
    notes: tuple[str, ...] = ()


def read_query(
    query: str, *, syntax: bool, history: Callable[[int], str] | None = None
) -> ReadQuery:
    """Parse ``query`` once (every side reads this plan); long prose that does not parse
    is read as plain words instead (:data:`PROSE_WORDS`), never a strategy. The parse's
    notes (how the text was read) come with it."""
    parsed, error = None, None
    if syntax:
        try:
            parsed = parse_query(query, history=history)
        except QuerySyntaxError as exc:
            error = exc
    if error is not None and len(query.split()) >= PROSE_WORDS and not looks_like_strategy(query):
        note = f"read as plain words, not query syntax ({error.problem})"
        return ReadQuery(parsed, error, syntax=False, notes=(note,))
    return ReadQuery(parsed, error, syntax=syntax, notes=parsed.notes if parsed else ())


def encoder_text(query_plan: Plan, query: str, *, syntax: bool) -> str:
    """What the dense side encodes: the plan's words, or the text itself as plain words."""
    return query_plan.text if syntax else query


def reranker_text(query_plan: Plan, query: str, *, syntax: bool) -> str:
    """What the Delta reranker reads: the plan's words (the text when it has none)."""
    return (query_plan.text or query) if syntax else query


def reads_as_article(encoder: Encoder, text: str) -> bool:
    """Whether the dense side reads ``text`` with the article encoder.

    A text longer than the query encoder reads (64 tokens for MedCPT: a pasted
    abstract, a paragraph) is encoded by the article encoder instead, as ``similar
    --text`` does: article-to-article similarity is what MedCPT's article encoder
    was measured on (RELISH), and the query encoder, trained on PubMed's short
    queries, would see only the text's first 64 tokens. A symmetric profile
    (minilm) has one encoder, so nothing changes there.
    """
    return not encoder.profile.symmetric and encoder.query_tokens(text) > encoder.query_max_length


def truncated_note(words: Sequence[str]) -> str:
    """What a user reads when a ``word*`` had more variations than PubMed searches."""
    from medsearch.index.lexical.terms import MAX_EXPANSIONS  # tantivy loads on first search

    return (
        f"truncation: only the {MAX_EXPANSIONS} commonest variations of {', '.join(words)} "
        "were searched, as in PubMed; a longer stem searches them all"
    )


def dropped_note(words: Sequence[str], *, dense_reads_all: bool) -> str:
    """What a user reads when a long query's commonest words did not rank (WordBudget)."""
    unique = list(dict.fromkeys(words))
    shown = ", ".join(unique[:6]) + (", ..." if len(unique) > 6 else "")
    after = "; the dense side is not cut" if dense_reads_all else ""
    return (
        f"{LONG_QUERY} {len(unique)} common word(s) left out of the BM25 ranking to keep it "
        f"fast ({shown}){after}"
    )


@dataclass(frozen=True, slots=True)
class PlanTranslation:
    """A plan with MeSH applied and the translation PubMed's "Search details" shows."""

    plan: Plan
    text: str
    notes: tuple[str, ...]


def translate(
    query_plan: Plan, mesh: MeshLookup, lexical: LexicalIndex, *, mesh_ranking: bool
) -> PlanTranslation:
    """``query_plan`` with MeSH applied (:mod:`medsearch.mesh.expand`). A set query runs
    its translation. Plain words keep their ranking (a heading as an extra ranked clause
    is not shown to help: docs/mesh.md, unless ``mesh_ranking``) and count the
    translation of all their words, as PubMed would."""
    from medsearch.mesh.expand import translate as expand

    def holds(tag: str, phrase: str) -> bool:
        probe = ParsedQuery(text=phrase, node=Tagged(tag, Phrase(phrase)), set_query=True)
        return bool(lexical.rank(probe, k=1, count=False).pmids)

    def is_journal(phrase: str) -> bool:
        return holds("ta", phrase)

    def is_author(phrase: str) -> bool:
        return holds("au", phrase)

    if query_plan.is_set:
        done = expand(query_plan.parsed, mesh, is_journal=is_journal, is_author=is_author)
        return PlanTranslation(replace(query_plan, parsed=done.parsed), done.text, done.notes)
    words = query_plan.all_words
    if words is None:
        return PlanTranslation(query_plan, "", ())
    done = expand(words, mesh, is_journal=is_journal, is_author=is_author)
    plan = replace(query_plan, all_words=done.parsed)
    if mesh_ranking:
        ranked = expand(query_plan.parsed, mesh, is_journal=is_journal, is_author=is_author)
        plan = replace(plan, parsed=ranked.parsed)
    return PlanTranslation(plan, done.text, done.notes)


def make_plan(
    query: str,
    *,
    syntax: bool = True,
    history: Callable[[int], str] | None = None,
    mesh: MeshLookup | None = None,
    lexical: LexicalIndex | None = None,
    mesh_ranking: bool = False,
    filters: Filters | None = None,
) -> Plan:
    """The one :class:`Plan` of ``query``: read once (:func:`read_query`; a syntax error
    is raised unless long prose is read as plain words), then translated by ``mesh``
    where it is installed (``lexical`` answers the journal and author probes of
    automatic term mapping). The searcher, the history's ``rerun``, watches and
    ``--explain`` all build their plan here, so they run the same query; ``filters``
    (the command line's restrictions) go into the plan with it."""
    read = read_query(query, syntax=syntax, history=history)
    if read.error is not None and read.syntax:
        raise read.error
    parsed = read.parsed or parse_plain(query)
    plan = replace(
        plan_query(parsed),
        read=parsed,
        notes=read.notes,
        syntax=read.syntax,
        filters=filters or Filters(),
    )
    if mesh is None or lexical is None or not read.syntax:
        return plan
    done = translate(plan, mesh, lexical, mesh_ranking=mesh_ranking)
    return replace(
        done.plan, translation=done.text, notes=(*read.notes, *done.notes), filters=plan.filters
    )
