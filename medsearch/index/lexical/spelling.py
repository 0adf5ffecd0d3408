"""Did you mean: a common word one edit from a query word the index barely has.

PubMed offers a corrected query under the results when a word looks misspelled
(https://pubmed.ncbi.nlm.nih.gov/help/ "Did you mean"); it never changes the search
itself, and neither does this: :func:`suggest` only proposes.

How, at scale: the candidates are generated from the typed word (Norvig's edits over
a-z: deletions, transpositions, substitutions and insertions, ~54 per letter, ~400 for
a 7-letter word) and each is stemmed and looked up with tantivy's ``Searcher.doc_freq``
in the title and abstract fields: one term-dictionary lookup (an FST walk,
microseconds), so the cost depends on the word's length, not on the number of terms or
articles (a PubMed-scale dictionary of millions of terms costs the same). Measured
(docs/benchmarks-history.md, SciFact claims with a typo; 260 of 298 restored): CPU
p50 3.1 / p95 7.6 / max 20 ms a query, ~0.1 ms when every word is common; at most
:data:`MAX_RARE` rare words a query are checked. Only one edit is tried: every two-edit
string of an 8-letter word is ~90,000 candidates (~600 ms of CPU), over a search's budget.
A sharded index is asked about its first shard, a PMID-modulo sample whose frequencies
are the whole's in proportion.
"""

from __future__ import annotations

import functools
import string
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import regex

from medsearch.index.lexical import schema as ls

if TYPE_CHECKING:
    from medsearch.index.lexical.index import LexicalIndex

MIN_LENGTH = 4
"""Shorter words (gene symbols, abbreviations) are left alone: too many neighbours."""
MIN_COMMON = 3
"""A correction must be in at least this many articles ..."""
FACTOR = 10
"""... and, when the typed word is in some articles, this many times more of them."""
RARE_SHARE = 1e-6
"""A word in more than this share of the articles (and more than 1) is not misspelled."""
MAX_WORDS = 10
"""A longer query (a pasted sentence or abstract) gets no suggestion: its rare words are
terms of art, not typos, and each costs a few milliseconds to check."""
MAX_RARE = 3
"""At most this many rare words of one query are checked (~5-20 ms each)."""
_LETTERS = string.ascii_lowercase
_TEXT_TAGS = frozenset({"ti", "ab", "tiab", "tw", "all", "all fields", "title", "abstract"})
_TOKENS = regex.compile(
    r"(?P<tag>\[[^\]]*\])|(?P<quote>\"[^\"]*\"?)|(?P<op>\b(?:AND|OR|NOT)\b|[()])"
    r"|(?P<word>[\p{L}\p{M}]+(?:[\p{L}\p{M}\p{N}-]*)\*?)|(?P<other>\S)"
)


@dataclass(frozen=True, slots=True)
class Suggestion:
    """The corrected query and each (typed, proposed) word pair."""

    query: str
    words: tuple[tuple[str, str], ...]

    @property
    def note(self) -> str:
        return f"did you mean: {self.query}"


DocFreq = Callable[[str], int]
"""Articles holding an analyzed token in the title or abstract."""
Forms = Callable[[str], "Counter[str]"]
"""The lower-cased words of a few articles holding a word's stem, with their counts: which
form of the stem (``diseases``, not ``diseaseds``) people write."""
FORM_ARTICLES = 5
_ASCII = regex.compile(r"[A-Za-z]+")


def candidate_words(query: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, word) of the query's plain words a correction may replace.

    Left alone: Boolean operators, quoted phrases (typed exactly), truncated words,
    words with digits or hyphens (gene and drug names), acronyms and other words with
    a capital past their first letter (``ITAM``, ``tTregs``), a capitalised word
    after the first (a name: ``Merlin``), and the words of a term whose field tag is
    not a text field (an author, a journal, a publication type). On SciFact's claims
    these rules took the suggestions on correct text from 17 of 300 to 5, three of them
    real typos in the claims (docs/benchmarks-history.md).
    """
    first = next((m.start() for m in _TOKENS.finditer(query) if m.lastgroup == "word"), 0)
    run: list[tuple[int, int, str]] = []
    for match in _TOKENS.finditer(query):
        kind = match.lastgroup
        if kind == "word":
            word = match.group()
            if word[1:] == word[1:].lower() and (match.start() == first or word.islower()):
                run.append((match.start(), match.end(), word))
            continue
        if kind == "tag" and match.group()[1:-1].strip().lower() not in _TEXT_TAGS:
            run = []
        yield from _plain(run)
        run = []
    yield from _plain(run)


def _plain(run: Sequence[tuple[int, int, str]]) -> Iterator[tuple[int, int, str]]:
    for start, end, word in run:
        if len(word) >= MIN_LENGTH and word.isalpha() and word.isascii():
            yield start, end, word


def edits1(word: str) -> set[str]:
    """Every string one deletion, transposition, substitution or insertion from ``word``."""
    splits = [(word[:i], word[i:]) for i in range(len(word) + 1)]
    out = {a + b[1:] for a, b in splits if b}
    out |= {a + b[1] + b[0] + b[2:] for a, b in splits if len(b) > 1}
    out |= {a + c + b[1:] for a, b in splits if b for c in _LETTERS}
    out |= {a + c + b for a, b in splits for c in _LETTERS}
    out.discard(word)
    return out


@functools.cache
def _analyzers() -> ls.Analyzers:
    return ls.analyzers()


def token(word: str) -> str | None:
    """``word`` as the index holds it (lower-cased, folded, stemmed)."""
    tokens = _analyzers().tokens(word)
    return tokens[0][1] if len(tokens) == 1 else None


def tokens(words: Sequence[str]) -> list[str | None]:
    """:func:`token` of each of ``words`` (a-z only), in one pass of the analyzer: one
    call across the binding instead of one per word, ~4x faster for ~600 candidates."""
    found = dict(_analyzers().tokens(" ".join(words)))
    return [found.get(i) for i in range(len(words))]


def doc_freq_of(doc_freq: Callable[[str, str], int]) -> DocFreq:
    """Title-or-abstract frequency from ``doc_freq(field, token)`` (tantivy's, through the
    index's :class:`~medsearch.index.lexical.query.Frequencies`): the larger of the two,
    a lower bound of the union, good enough to compare words."""

    def df(tok: str) -> int:
        return max(int(doc_freq(ls.TITLE, tok)), int(doc_freq(ls.ABSTRACT, tok)))

    return df


def rare(word: str, df: DocFreq, documents: int) -> tuple[str, int] | None:
    """``word``'s token and its frequency when it is rare enough to be a typo."""
    typed = token(word)
    if typed is None:
        return None
    seen = df(typed)
    return None if seen > max(1, documents * RARE_SHARE) else (typed, seen)


def _correct(
    word: str, typed: str, seen: int, df: DocFreq, forms: Forms | None = None
) -> str | None:
    need = max(MIN_COMMON, FACTOR * seen)
    group = _best(edits1(word.lower()), df, need, typed)
    if not group:
        return None
    best = group[0]
    if len(group) > 1 and forms is not None:  # the form the articles write
        seen_forms = forms(best)
        best = max(group, key=lambda cand: seen_forms[cand])  # ties: the first
    if word[:1].isupper():
        best = best.upper() if word.isupper() else best.capitalize()
    return best


def _best(candidates: set[str], df: DocFreq, need: int, typed: str) -> list[str]:
    """The candidates (A-Z) of the token in the most articles, at least ``need``
    (ties: the token of the alphabetically first candidate).

    Every form of a stem has the stem's frequency (``diseases``, ``diseaseds``), so the
    index alone cannot say which form to offer; :data:`Forms` decides among them."""
    counts: dict[str, int] = {}
    by_token: dict[str, list[str]] = {}
    ordered = sorted(candidates)
    for cand, tok in zip(ordered, tokens(ordered), strict=True):
        if tok is None or tok == typed or len(cand) < MIN_LENGTH - 1:
            continue
        if tok not in counts:
            counts[tok] = df(tok)
        by_token.setdefault(tok, []).append(cand)
    common = [tok for tok, n in counts.items() if n >= need]
    if not common:
        return []
    best = max(common, key=lambda tok: counts[tok])
    return by_token[best]


def suggest(
    query: str, df: DocFreq, documents: int, forms: Forms | None = None
) -> Suggestion | None:
    """The query with each rare word replaced by its correction, or None when no word
    needs one. The search itself is never changed."""
    if len(query.split()) > MAX_WORDS:
        return None
    pieces: list[str] = []
    pairs: list[tuple[str, str]] = []
    last = 0
    checked = 0
    for start, end, word in candidate_words(query):
        found = rare(word, df, documents)
        if found is None or checked == MAX_RARE:
            continue
        checked += 1
        fixed = _correct(word, *found, df, forms)
        if fixed is None:
            continue
        pieces.append(query[last:start] + fixed)
        pairs.append((word, fixed))
        last = end
    if not pairs:
        return None
    return Suggestion(query="".join(pieces) + query[last:], words=tuple(pairs))


def did_you_mean(lexical: LexicalIndex, query: str) -> Suggestion | None:
    """:func:`suggest` over a lexical index's document frequencies, choosing among the
    forms of a stem by the text of a few articles that hold it (when the index can read
    texts, as a searcher's can)."""
    frequencies = lexical.frequencies()
    forms = _article_forms(lexical) if lexical.texts is not None else None
    return suggest(query, doc_freq_of(frequencies), frequencies.documents, forms)


def _article_forms(lexical: LexicalIndex) -> Forms:
    def forms(word: str) -> Counter[str]:
        ranked = lexical.rank(word, k=FORM_ARTICLES, count=False, syntax=False)
        texts = lexical.texts(ranked.pmids) if lexical.texts is not None else {}
        words = (_ASCII.findall(f"{title} {abstract}") for title, abstract in texts.values())
        return Counter(w.lower() for found in words for w in found)

    return forms
