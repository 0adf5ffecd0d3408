# Over 450 lines: QueryBuilder is one translation, node by node, whose boosts and word
# budget are read together; filters are filters.py.
"""Query AST + Filters -> a tantivy ``Query``, built programmatically.

Nothing user-typed reaches tantivy's own query parser (it throws on ``IL-6`` and
``5-HT(2A)``): every word goes through the index's analyzer and becomes term, phrase or
phrase-prefix queries on the fields its tag names, so the only syntax errors are ours
(truncation and proximity, with PubMed's limits: :mod:`medsearch.index.lexical.terms`).

Ranked words search title, abstract, MeSH and keywords, each field's BM25 score scaled
by a boost; the boosts were chosen on BEIR SciFact (see ``python -m benchmarks.lexical weights``).
Filters become un-scored (constant 0) MUST clauses, so they restrict inside tantivy
without shifting scores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tantivy

from medsearch import field_keys as fk
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.filters import exclude, filter_clauses, match_all, tagged_date_range
from medsearch.index.lexical.terms import MAX_EXPANSIONS, cut, proximity_query, truncation_query
from medsearch.query.nodes import And, Node, Not, Or, Phrase, Prefix, Tagged, Term, YearRange
from medsearch.records import Filters

# Field boosts and how fields combine, measured on BEIR SciFact test (300 claims, title +
# abstract, nDCG@10; `python -m benchmarks.lexical weights`). Summing per-field BM25:
# title 2.0 -> 0.631, 1.0 -> 0.677, 0.5 -> 0.703 (a term in the title is nearly always in
# the abstract too, so a sum already counts the title twice). Lucene's dis_max (best
# field + 0.3 x the rest) -> 0.705. With the abstracts of 28% of the documents dropped,
# as 11.6M of PubMed's 40.9M citations have none (`--no-abstract 0.28`), the plain sum
# falls to 0.564 against dis_max's 0.607: it halves a title-only record's only evidence.
# TITLE_ALONE (the title again, for those records only) at 1.0 gives it back: 0.606, and
# the same top-10 overlap with dis_max (0.88) as on the full corpus.
#
# Chosen: the sum (title 0.5, abstract 1.0, title-alone 1.0), because it is one flat
# union of term queries and dis_max is a union of unions: on a 5M-document shard a
# common-word top-1000 costs 42 vs 77 ms p50 (BENCHMARKS.md, "Ranking as one flat sum").
# MeSH and keywords are absent from SciFact; they get half weight so controlled
# vocabulary lifts but does not dominate.
TITLE_BOOST = 0.5
ABSTRACT_BOOST = 1.0
TITLE_ALONE_BOOST = 1.0
MESH_BOOST = 0.5
KEYWORDS_BOOST = 0.5
TIE_BREAKER: float | None = None
RANKED_FIELDS: tuple[tuple[str, float], ...] = (
    (ls.TITLE, TITLE_BOOST),
    (ls.ABSTRACT, ABSTRACT_BOOST),
    (ls.TITLE_ALONE, TITLE_ALONE_BOOST),
    (ls.MESH, MESH_BOOST),
    (ls.KEYWORDS, KEYWORDS_BOOST),
)
# The rest of PubMed's All Fields, which an untagged word searches too (issue 39: PubMed
# searches an untagged term in all fields, so ``gorostiaga`` finds the author). At a
# quarter weight: they widen what matches and barely move a ranking on the text; SciFact
# (title and abstract only) holds none of them, so its figures cannot change.
EXTRA_WEIGHT = 0.25
TEXT_WORD_FIELDS: tuple[tuple[str, float], ...] = (
    (ls.TITLE, 1.0),
    (ls.ABSTRACT, 1.0),
    (ls.OTHER_ABSTRACT, 1.0),
    (ls.MESH, 1.0),
    (ls.KEYWORDS, 1.0),
    (ls.TEXT_WORD, 1.0),
)
"""PubMed's ``[tw]`` (help page, "Text Words"): title, abstract, other abstract, MeSH
terms and subheadings, other terms (keywords), and in :data:`~ls.TEXT_WORD` the
publication types, substance names, personal names as subject, corporate authors,
secondary source IDs and comment/correction notes."""
ALL_FIELD_EXTRAS: tuple[str, ...] = (
    ls.AUTHORS,
    ls.FULL_AUTHOR,
    ls.AFFILIATION,
    ls.GRANT,
    ls.JOURNAL_WORDS,
)
"""What ``[all]`` adds to ``[tw]``: authors, affiliations, grants and journals."""
UNTAGGED_EXTRAS: tuple[tuple[str, float], ...] = tuple(
    (name, EXTRA_WEIGHT) for name in (ls.OTHER_ABSTRACT, ls.TEXT_WORD, *ALL_FIELD_EXTRAS)
)

# Lucene's English stop set: dropped from ranked OR groups only (never from phrases or
# from the index), and only when typed in lower case (see _drop_stop_words).
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)

_TAG_FIELDS: dict[str, tuple[tuple[str, float], ...]] = {
    "all": (*TEXT_WORD_FIELDS, *((name, 1.0) for name in ALL_FIELD_EXTRAS)),
    "tw": TEXT_WORD_FIELDS,
    "ti": ((ls.TITLE, 1.0),),
    "ab": ((ls.ABSTRACT, 1.0),),
    # PubMed help, "Title/Abstract": title, abstract, other abstract and author keywords
    "tiab": ((ls.TITLE, 1.0), (ls.ABSTRACT, 1.0), (ls.OTHER_ABSTRACT, 1.0), (ls.KEYWORDS, 1.0)),
    "mh": ((ls.MESH, 1.0),),
    "majr": ((ls.MESH_MAJOR, 1.0),),
    "kw": ((ls.KEYWORDS, 1.0),),
    "au": ((ls.AUTHORS, 1.0),),
    "1au": ((ls.FIRST_AUTHOR, 1.0),),
    "fau": ((ls.FULL_AUTHOR, 1.0),),
    "lastau": ((ls.LAST_AUTHOR, 1.0),),
    "ad": ((ls.AFFILIATION, 1.0),),
    "gr": ((ls.GRANT, 1.0),),
}
# The NAME_ANALYZER fields: their words are not stemmed, and not highlighted in the
# title and abstract (a name or an affiliation is not what the text is about).
_UNSTEMMED = ("au", "1au", "fau", "lastau", "ad", "gr")
_NAME_FIELDS = frozenset(ls.NAME_FIELDS)
"""Fields of unstemmed words: a tag that reads them beside stemmed ones (``[all]``, an
untagged word) looks each up by the tokens its field holds."""
# Whole-value tags: the typed value becomes one key of the field (field_keys).
_EXACT_FIELDS = {
    "pt": ls.PUB_TYPE,
    "ta": ls.JOURNAL_KEY,
    "la": ls.LANGUAGE,
    "mh": ls.MESH_HEADING,
    "majr": ls.MESH_MAJOR_HEADING,
    "sh": ls.MESH_SUBHEADING,
    "aid": ls.ARTICLE_ID,
    "sb": ls.SUBSET,
    "nm": ls.SUPPLEMENTARY,
    "rn": ls.REGISTRY,
    # Without MeSH's pharmacological actions, [pa] searches the action's own heading
    # (field_notes.mesh_note says so); with them, its keys (action_keys)
    "pa": ls.MESH_HEADING,
}
_ROLES = {"au": "", "1au": ls.FIRST_ROLE, "lastau": ls.LAST_ROLE}
"""Author tags whose ``Name AB`` form is one :data:`~ls.AUTHOR_KEY` term, by role prefix."""
_KEYS: dict[str, Callable[[str], str]] = {
    "ta": fk.journal_key,
    "mh": fk.heading_key,
    "majr": fk.heading_key,
    "sh": fk.heading_key,
    "sb": fk.subset_key,
    "nm": fk.name_key,
    "rn": fk.name_key,
    "pa": fk.heading_key,
}


def exact_key(tag: str, value: str) -> str:
    """The key a whole-value tag's ``value`` is looked up by."""
    return _KEYS.get(tag, ls.exact_key)(value.strip())


@dataclass(frozen=True, slots=True)
class WordBudget:
    """How much of the index a run of plain words may walk: a query's cost, bounded.

    tantivy scores every posting of every ranked (word, field) term, so a query costs
    about the postings of its words: 40 words of a pasted paragraph cost ~4x a
    three-word query at 10M documents (BENCHMARKS.md, "Long queries"), and at 40.9M
    that is seconds. Past ``min_words``, a run of side-by-side words keeps its rarest
    words while their postings stay within ``postings`` times the index's documents,
    and at most ``max_words`` of them (a pasted paper's thousands of rare words cost
    per word, not per posting); the commonest words beyond that are left out of the
    lexical ranking (they still highlight, and the dense side of hybrid search is not
    cut). Short queries, phrases, truncations, explicit ``OR`` alternatives and words
    after ``NOT`` are never cut.
    """

    min_words: int = 4
    postings: float = 2.0  # x the documents: what a 2-3 common-word query walks
    max_words: int = 128


@dataclass(frozen=True, slots=True)
class Ranking:
    """How plain words are ranked; the defaults are the measured choice."""

    fields: tuple[tuple[str, float], ...] = RANKED_FIELDS  # (field, BM25 boost)
    drop_stop_words: bool = True
    # None: a word's score is the sum of its fields' scores. A number: the best field's
    # score plus tie_breaker times the others (Lucene's dis_max, BEIR's best_fields).
    tie_breaker: float | None = TIE_BREAKER
    budget: WordBudget | None = WordBudget()  # None: every word ranks, whatever it costs


class Frequencies:
    """Document frequencies for :class:`WordBudget`, asked once per (field, token), and
    the variations of a truncated word (:meth:`expansions`).

    One object serves every shard of a query, so all shards drop the same words; it
    reads one index's statistics (a shard holds a PMID-modulo sample of the whole, so
    its fractions are the whole's). ``doc_freq`` is tantivy's ``Searcher.doc_freq``,
    ``prefix_terms`` its ``Searcher.terms_with_prefix``.
    """

    def __init__(
        self,
        documents: int,
        doc_freq: Callable[[str, str], int],
        prefix_terms: Callable[..., list[tuple[str, int]]] | None = None,
    ) -> None:
        self.documents = documents
        self._doc_freq = doc_freq
        self._prefix_terms = prefix_terms
        self._seen: dict[tuple[str, str], int] = {}
        self._expanded: dict[tuple[str, str], tuple[str, ...] | None] = {}

    def expansions(self, field_name: str, prefix: str) -> tuple[str, ...] | None:
        """The indexed words starting with ``prefix``: all of them up to one past
        :data:`MAX_EXPANSIONS` (so a caller sees the cut), the commonest first; None when
        this index cannot list them. tantivy walks the prefix's range of the term
        dictionary in Rust (the four-character minimum keeps it a small range) and
        returns only the commonest, so a prefix with 100K variations costs one walk,
        never 100K Python objects."""
        key = (field_name, prefix)
        if key not in self._expanded:
            self._expanded[key] = (
                None
                if self._prefix_terms is None
                else tuple(
                    term
                    for term, _ in self._prefix_terms(field_name, prefix, limit=MAX_EXPANSIONS + 1)
                )
            )
        return self._expanded[key]

    def __call__(self, field_name: str, token: str) -> int:
        key = (field_name, token)
        found = self._seen.get(key)
        if found is None:  # two shards' threads may both ask: the same answer either way
            found = self._seen[key] = int(self._doc_freq(field_name, token))
        return found


Words = dict[tuple[str, ...], list[tuple[int, str]]]
"""A run's plain words: their tokens -> (position, text) wherever they were typed."""


LEGACY_RANKING = Ranking(
    fields=((ls.TITLE, 1.0), (ls.ABSTRACT, 1.0), (ls.MESH, 0.5), (ls.KEYWORDS, 0.5)),
    tie_breaker=0.3,
)
"""How a format-2 index (no TITLE_ALONE field) ranks: dis_max, as it was built for."""


@dataclass
class QueryBuilder:
    """Translates one parsed query; collects the positive terms for highlighting."""

    schema: Any
    analyzers: ls.Analyzers
    ranking: Ranking = field(default_factory=Ranking)
    frequencies: Frequencies | None = None  # None: no WordBudget (nothing to weigh by)
    terms: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # words the WordBudget left out
    truncated: list[str] = field(default_factory=list)  # words* cut to MAX_EXPANSIONS
    _tokens: dict[tuple[str, bool], list[tuple[int, str]]] = field(default_factory=dict, repr=False)
    shared: dict[tuple[Node, str | None, bool], Any | None] | None = field(default=None, repr=False)
    """Where one builder builds many queries that share clauses (``--explain``'s count of
    every clause: a term, its block, the whole), each clause's query built once and
    reused by every query holding it, so a truncated word's automaton and expansions are
    made once, not once per enclosing clause. None (a search): each build is fresh, as
    :attr:`terms`, :attr:`dropped` and :attr:`truncated` are collected as it goes."""
    own: Frequencies | None = field(default=None, repr=False)
    """The statistics of the one index these queries run on, when that is not where
    :attr:`frequencies` come from (a shard): a truncated word listed complete in it is
    the set of its variations there, no automaton to compile (see ``truncation_query``)."""

    def build(self, node: Node | None, *filter_sets: Filters) -> Any | None:
        """The whole query, or None when nothing can match (no words, no filters).

        Every filter set must hold (they are ANDed), each one's alternatives ORed.
        """
        main = self.node(node, None, negated=False) if node is not None else None
        clauses = [c for f in filter_sets for c in filter_clauses(self.schema, f)]
        if main is None and node is not None:
            return None  # the query had words, none of them indexable: match nothing
        if main is None and not clauses:
            return None
        if main is None:
            main = match_all()
        if not clauses:
            return main
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, main), *((tantivy.Occur.Must, c) for c in clauses)]
        )

    def node(self, node: Node, tag: str | None, *, negated: bool) -> Any | None:
        if self.shared is None:
            return self._node(node, tag, negated=negated)
        key = (node, tag, negated)
        if key not in self.shared:
            self.shared[key] = self._node(node, tag, negated=negated)
        return self.shared[key]

    def _node(self, node: Node, tag: str | None, *, negated: bool) -> Any | None:
        if isinstance(node, Tagged):
            if node.keys and node.tag == "pa":
                return action_keys(self.schema, node.keys)
            if node.keys and node.tag in _EXACT_FIELDS:
                return heading_keys(self.schema, _EXACT_FIELDS[node.tag], node.keys)
            return self.node(node.node, tag or node.tag, negated=negated)
        if isinstance(node, Not):
            inner = self.node(node.child, tag, negated=not negated)
            return None if inner is None else exclude(match_all(), inner)
        if isinstance(node, And):
            return self.conjunction(node, tag, negated=negated)
        if isinstance(node, Or):
            children = node.children
            if tag is None and self.ranking.drop_stop_words:
                children = _drop_stop_words(children)
            # one flat union: a sum's per-field clauses are not nested under their word,
            # since tantivy unions of unions cost ~2x (scores are the same sums); a word
            # typed n times is one clause boosted n times, the same sum for one walk
            words = self.words_of(children, tag)
            times = repeats(words)
            if tag is None and node.words and not negated:  # NOT (...) excludes them all
                for tokens in self.over_budget(words):
                    times.update((i, 0) for i, _ in words[tokens])
            built: list[Any] = []
            for i, c in enumerate(children):
                if isinstance(c, Term | Phrase | Prefix):
                    if n := times.get(i, 1):  # 0: a repeat, or left out by the budget
                        built.extend(
                            _boosted(q, n) for q in self.leaf_clauses(c, tag, negated=negated)
                        )
                elif (q := self.node(c, tag, negated=negated)) is not None:
                    built.append(q)
            return _any(built)
        if isinstance(node, YearRange):
            return tagged_date_range(self.schema, node.tag, *node.bounds)
        return self.leaf(node, tag, negated=negated)

    def tokens(self, text: str, *, stem: bool = True) -> list[tuple[int, str]]:
        """The analyzer's tokens of ``text``, once per text (a pasted paper repeats
        its words hundreds of times)."""
        key = (text, stem)
        found = self._tokens.get(key)
        if found is None:
            found = self._tokens[key] = self.analyzers.tokens(text, stem=stem)
        return found

    def words_of(self, children: tuple[Node, ...], tag: str | None) -> Words:
        """The plain words among ``children`` by their tokens (``Sepsis`` = ``sepsis``),
        each with the positions and text it was typed as; words without tokens, and the
        values of exact-match tags, are left out."""
        if tag in _EXACT_FIELDS or tag == "pmid":
            return {}
        stem = tag not in _UNSTEMMED
        found: Words = {}
        for i, c in enumerate(children):
            if isinstance(c, Term) and (
                tokens := tuple(t for _, t in self.tokens(c.text, stem=stem))
            ):
                found.setdefault(tokens, []).append((i, c.text))
        return found

    def over_budget(self, words: Words) -> list[tuple[str, ...]]:
        """The commonest of ``words`` past the :class:`WordBudget`, in typed order; they
        are recorded as dropped and still highlight."""
        budget, frequencies = self.ranking.budget, self.frequencies
        if budget is None or frequencies is None or len(words) <= budget.min_words:
            return []
        costs = {tokens: self.postings(tokens, frequencies) for tokens in words}
        limit = budget.postings * max(1, frequencies.documents)
        cheapest_first = sorted(words, key=lambda tokens: (costs[tokens], words[tokens][0][0]))
        spent, kept = 0, budget.min_words
        for tokens in cheapest_first[: budget.min_words]:
            spent += costs[tokens]
        for tokens in cheapest_first[budget.min_words :]:
            if spent + costs[tokens] > limit or kept >= budget.max_words:
                break  # every word after this one costs at least as much
            spent += costs[tokens]
            kept += 1
        left_out = sorted(cheapest_first[kept:], key=lambda tokens: words[tokens][0][0])
        for tokens in left_out:
            self.dropped.append(words[tokens][0][1])  # as first typed
            self.terms.extend(tokens)  # still words of the query: highlighted where they appear
        return left_out

    def postings(self, tokens: tuple[str, ...], frequencies: Frequencies) -> int:
        """What ranking a word of ``tokens`` walks (once, however often it was typed): per
        ranked field, the documents holding its rarest token (a phrase's matches are
        drawn from those)."""
        return sum(
            min(frequencies(name, token) for token in tokens) for name, _ in self.ranking.fields
        )

    def conjunction(self, node: And, tag: str | None, *, negated: bool) -> Any | None:
        clauses: list[tuple[Any, Any]] = []
        children = node.children
        if tag is None:  # PubMed ignores its stop words in untagged terms
            children = _drop_stop_words(children)
        for child in children:
            if isinstance(child, Not):
                q = self.node(child.child, tag, negated=not negated)
                if q is not None:
                    clauses.append((tantivy.Occur.MustNot, q))
            elif (q := self.node(child, tag, negated=negated)) is not None:
                clauses.append((tantivy.Occur.Must, q))
        if not any(occur == tantivy.Occur.Must for occur, _ in clauses):
            if not clauses:
                return None
            clauses.append((tantivy.Occur.Must, match_all()))
        if len(clauses) == 1:
            return clauses[0][1]
        return tantivy.Query.boolean_query(clauses)

    def leaf(self, node: Term | Phrase | Prefix, tag: str | None, *, negated: bool) -> Any | None:
        return _any(self.leaf_clauses(node, tag, negated=negated))

    def leaf_clauses(
        self, node: Term | Phrase | Prefix, tag: str | None, *, negated: bool
    ) -> list[Any]:
        """The SHOULD clauses whose summed scores rank ``node`` (one, for dis_max)."""
        if tag == "pmid":
            return [tantivy.Query.term_query(self.schema, ls.PMID, int(node.text.strip()))]
        if tag in _EXACT_FIELDS and not isinstance(node, Prefix):  # mh*: the heading words
            key = exact_key(tag, node.text)
            return [tantivy.Query.term_query(self.schema, _EXACT_FIELDS[tag], key)]
        fields = (*self.ranking.fields, *UNTAGGED_EXTRAS) if tag is None else _TAG_FIELDS[tag]
        stem = tag not in _UNSTEMMED
        tokens = self.tokens(node.text, stem=stem)
        if not tokens:
            return []
        if tag == "au" and len(tokens) > 1 and len(tokens[-1][1]) > 2:
            # "Garcia Algar Oscar"[au]: PubMed's author search takes a full name too
            # (help page, "Author"). A last word of one or two letters is read as
            # initials alone: "Smith JA" is not "Smith Jane".
            fields = (*fields, (ls.FULL_AUTHOR, 1.0))
        if isinstance(node, Prefix):
            tokens = self.prefix_tokens(node.text, tokens, stem=stem)
        if not negated and tag not in _UNSTEMMED:
            self.terms.extend(t for _, t in tokens[:-1])
            self.terms.append(tokens[-1][1] + ("*" if isinstance(node, Prefix) else ""))
        per_field = []
        for name, boost in fields:
            field_tokens = tokens
            if stem and name in _NAME_FIELDS:  # [all], untagged: authors, journals as typed
                field_tokens = self.tokens(node.text, stem=False)
                if isinstance(node, Prefix):
                    field_tokens = self.prefix_tokens(node.text, field_tokens, stem=False)
            per_field.append(_boosted(self.field_query(name, field_tokens, node, tag), boost))
        if len(per_field) > 1 and tag is None and self.ranking.tie_breaker is not None:
            return [tantivy.Query.disjunction_max_query(per_field, self.ranking.tie_breaker)]
        return per_field

    def prefix_tokens(
        self, text: str, tokens: list[tuple[int, str]], *, stem: bool
    ) -> list[tuple[int, str]]:
        """The last token unstemmed but cut to its stem (``diabetes*`` -> ``diabet``)."""
        raw = self.tokens(text, stem=False)
        last = raw[-1][1]
        if stem:
            last = _common_prefix(last, tokens[-1][1]) or last
        return [*tokens[:-1], (tokens[-1][0], last)]

    def field_query(
        self,
        name: str,
        tokens: list[tuple[int, str]],
        node: Term | Phrase | Prefix,
        tag: str | None,
    ) -> Any:
        words: list[str | tuple[int, str]] = [(pos, tok) for pos, tok in tokens]
        if isinstance(node, Phrase) and node.near is not None and len(tokens) > 1:
            stem = tag not in _UNSTEMMED
            typed = [[t for _, t in self.tokens(word, stem=stem)] for word in node.text.split()]
            return proximity_query(self.schema, name, [t for t in typed if t], node.near)
        if isinstance(node, Prefix):
            frequencies = self.frequencies
            found = None if frequencies is None else frequencies.expansions(name, tokens[-1][1])
            if cut(found) and node.text + "*" not in self.truncated:
                self.truncated.append(node.text + "*")
            own = None
            if self.own is not None and len(tokens) == 1:
                own = self.own.expansions(name, tokens[-1][1])
            return truncation_query(self.schema, name, tokens, found, own)
        if tag in _ROLES and len(tokens) > 1 and len(tokens[-1][1]) <= 2:
            key = " ".join(t for _, t in tokens)  # the name, then the initials typed
            return tantivy.Query.term_query(self.schema, ls.AUTHOR_KEY, _ROLES[tag] + key)
        if len(tokens) == 1:
            return tantivy.Query.term_query(self.schema, name, tokens[0][1])
        return tantivy.Query.phrase_query(self.schema, name, words)


def action_keys(schema: Any, keys: tuple[str, ...]) -> Any:
    """``X[pa]`` with MeSH's pharmacological actions: the action and its substances'
    names (:mod:`medsearch.mesh.expand`) as headings or as substances (the records'
    supplementary concepts and chemicals: a concept's name is a substance name, and
    ChemicalList names descriptor substances too)."""
    return tantivy.Query.boolean_query(
        [
            (tantivy.Occur.Should, heading_keys(schema, ls.MESH_HEADING, keys)),
            (tantivy.Occur.Should, heading_keys(schema, ls.SUPPLEMENTARY, keys)),
        ]
    )


def heading_keys(schema: Any, field_name: str, keys: tuple[str, ...]) -> Any:
    """A MeSH heading as MeSH resolved it: one key scores as the typed heading does; an
    exploded heading (up to thousands of keys) is one term-set query, a single walk of
    the term dictionary rather than a union of thousands of scorers."""
    if len(keys) == 1:
        return tantivy.Query.term_query(schema, field_name, keys[0])
    return tantivy.Query.term_set_query(schema, field_name, sorted(keys))


def repeats(words: Words) -> dict[int, int]:
    """How many times each repeated word was typed, at its first position (0 at the
    others); a word typed once is absent."""
    times: dict[int, int] = {}
    for places in words.values():
        if len(places) > 1:
            times[places[0][0]] = len(places)
            times.update((i, 0) for i, _ in places[1:])
    return times


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _any(clauses: list[Any]) -> Any | None:
    """The sum of ``clauses`` (None for none)."""
    if not clauses:
        return None
    if len(clauses) == 1:
        return clauses[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in clauses])


def _boosted(query: Any, boost: float) -> Any:
    return query if boost == 1.0 else tantivy.Query.boost_query(query, boost)


def _drop_stop_words(children: tuple[Node, ...]) -> tuple[Node, ...]:
    """``effect of the drug`` ranks on ``effect drug``; an all-stop-word group is kept.

    Only words typed in lower case are dropped: ``vitamin A``, ``hepatitis A`` and
    ``IT`` keep their capitals and their meaning.
    """
    kept = tuple(c for c in children if not (isinstance(c, Term) and c.text in STOP_WORDS))
    return kept or children
