"""Truncation (``immun*``) and proximity (``"hip pain"[tiab:~2]``) as tantivy queries.

Both are PubMed rules with limits tantivy does not share (PubMed help, "Wildcards and
truncation" and "Proximity searching", https://pubmed.ncbi.nlm.nih.gov/help/):

- a truncated word searches up to 600 of its variations, and PubMed says when it cut;
  tantivy's phrase-prefix query stops at 50 of them, silently;
- proximity takes the words in any order; tantivy's phrase slop keeps them in order.
"""

from __future__ import annotations

from itertools import permutations, product
from typing import Any

import tantivy

# PubMed help, "Wildcards and truncation": a truncated term searches at most 600 of its
# variations, and PubMed says so when it cut.
MAX_EXPANSIONS = 600
# tantivy's phrase-prefix query expands its last word to at most 50 terms, silently.
PHRASE_PREFIX_EXPANSIONS = 50

# Three or more words near each other are exact (every gap within N) as one phrase per
# order and spacing while there are at most this many; past it, an order's gaps share
# a total of N per gap (tantivy's slop), which may let one gap exceed N.
MAX_PROXIMITY_PHRASES = 256

Words = list[tuple[int, str]]
"""Analyzer tokens with their positions in the phrase."""


def cut(variations: tuple[str, ...] | None) -> bool:
    """Whether a truncated word has more variations than PubMed searches."""
    return variations is not None and len(variations) > MAX_EXPANSIONS


def truncation_query(
    schema: Any,
    name: str,
    tokens: Words,
    variations: tuple[str, ...] | None,
    own: tuple[str, ...] | None = None,
) -> Any:
    """``word*`` or the truncated phrase ``heart attack*`` in field ``name``.

    ``variations``: the indexed words starting with the last token, the commonest first,
    up to one past :data:`MAX_EXPANSIONS` (``Frequencies.expansions``), or None when the
    index cannot list them. One word is a regex over the term dictionary (every
    variation, on every shard's own dictionary) unless it has more than the bound: then
    a set of its commonest :data:`MAX_EXPANSIONS`. A phrase is tantivy's phrase prefix
    when that finds every variation, else one phrase per variation (at most
    :data:`MAX_EXPANSIONS` phrases). The listed variations come from one index's term
    dictionary (the first shard's, for a sharded index: a PMID-modulo sample, whose
    commonest words are the whole's).

    ``own``: the variations in the dictionary of the one index the query will run on
    (``--explain``'s counts, built per index): when they are all there (not cut), the
    word is the set of them, the same documents as the regex, without compiling its
    automaton (~3 ms a field, most of a 200-clause explain's fixed cost; the set
    costs ~0.1 ms).
    """
    if len(tokens) == 1:
        if cut(variations):
            kept = sorted((variations or ())[:MAX_EXPANSIONS])
            return tantivy.Query.term_set_query(schema, name, kept)
        if own is not None and not cut(own):
            return tantivy.Query.term_set_query(schema, name, sorted(own))
        return tantivy.Query.regex_query(schema, name, _regex_prefix(tokens[0][1]))
    words: list[str | tuple[int, str]] = list(tokens)
    if variations is None or len(variations) <= PHRASE_PREFIX_EXPANSIONS:
        return tantivy.Query.phrase_prefix_query(schema, name, words)
    head, last = words[:-1], tokens[-1][0]
    return _union(
        [
            tantivy.Query.phrase_query(schema, name, [*head, (last, v)])
            for v in sorted(variations[:MAX_EXPANSIONS])
        ]
    )


def proximity_query(schema: Any, name: str, typed: list[list[str]], near: int) -> Any:
    """The typed words (each as its analyzer tokens) in any order, at most ``near``
    words between each.

    tantivy's phrase slop keeps the words in order and bounds the words between them
    in total, so each order of the typed words is a phrase of its own (the parser
    allows at most five words: at most 120 orders). Two words: a phrase with slop
    ``near``, exactly PubMed's rule. More: one exact phrase per order and spacing (every
    gap 0..``near``) while that takes at most :data:`MAX_PROXIMITY_PHRASES` phrases,
    else a slop of ``near`` per gap in total. A word the analyzer splits (``IL-6``)
    keeps its tokens together and in order.
    """
    orders = list(dict.fromkeys(permutations(range(len(typed)))))
    gaps = len(typed) - 1
    exact = gaps > 1 and len(orders) * (near + 1) ** gaps <= MAX_PROXIMITY_PHRASES
    spacings = list(product(range(near + 1), repeat=gaps)) if exact else [(0,) * gaps]
    slop = 0 if exact else near * max(1, gaps)
    phrases: list[Any] = []
    for order in orders:
        for spacing in spacings:
            words: list[str | tuple[int, str]] = []
            at = 0
            for n, i in enumerate(order):
                at += spacing[n - 1] if n else 0
                for tok in typed[i]:
                    words.append((at, tok))
                    at += 1
            phrases.append(tantivy.Query.phrase_query(schema, name, words, slop))
    return _union(phrases)


def _regex_prefix(prefix: str) -> str:
    """A regex for every word starting with ``prefix`` (its punctuation escaped)."""
    return "".join(c if c.isalnum() else "\\" + c for c in prefix) + ".*"


def _union(queries: list[Any]) -> Any:
    if len(queries) == 1:
        return queries[0]
    return tantivy.Query.boolean_query([(tantivy.Occur.Should, q) for q in queries])
