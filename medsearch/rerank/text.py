"""Text as the Delta paper tokenizes it: lower-cased words, punctuation dropped.

Abbreviations and numeric forms survive as single tokens (``il-6``, ``e.g``, ``0.05``);
inside-word hyphens, dots, commas and apostrophes are kept, every other punctuation
mark splits. Pure numbers are collapsed into the paper's seven classes so that ``1998``
and ``1987`` share one word vector while ``covid-19`` stays itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# A word: letters/digits joined by inner -.,'  ; optional leading $ and trailing %.
_TOKEN = re.compile(r"\$?[^\W_]+(?:[-.,'][^\W_]+)*%?")
_NUMBER = re.compile(r"\$?\d[\d,]*(?:\.\d+)?%?")

INTEGER = "<int>"
FRACTION = "<fraction>"  # a real number in (0, 1)
REAL = "<real>"
YEAR_19 = "<year19xx>"
YEAR_20 = "<year20xx>"
PERCENT = "<percent>"
DOLLARS = "<dollars>"
NUMBER_CLASSES = (INTEGER, FRACTION, REAL, YEAR_19, YEAR_20, PERCENT, DOLLARS)

DOC_WORDS = 50  # the paper's N: title + abstract truncated to the first 50 words
QUERY_WORDS = 7  # the paper's M: PubMed keyword queries are short
CHARS_PER_WORD = 24  # generous: the first N words lie within N * this many characters
HEAD_CHARS = 9  # characters per word that usually hold the first N words (~6.5 on average)


# Lexical-match words: ASCII punctuation (but - % $) becomes space, then a plain split,
# on UTF-8 bytes: bytes.translate and bytes.count run at memory speed whatever the
# script, and the Lex3 features read the whole abstracts of 500 candidates per query.
_PUNCTUATION = b"()[]{},.;:!?\"'/\\<>=+*&^#@|~`\t\n\r"
_LEX_SPACES = bytes(32 if i in _PUNCTUATION else i for i in range(256))


def lexical_words(text: str) -> list[str]:
    """Lower-cased words for exact lexical matching (BM25, title overlap, IDF)."""
    return text.lower().encode("utf-8").translate(_LEX_SPACES).decode("utf-8").split()


def lexical_body(text: str) -> bytes:
    """``text``'s lexical words, space-separated and padded: ``body.count(b" w ")`` is a
    word's frequency (adjacent repeats aside) without a Python loop over tokens."""
    return b" " + text.lower().encode("utf-8").translate(_LEX_SPACES) + b" "


def number_class(token: str) -> str | None:
    """The class of a purely numeric token, or None for a word."""
    if not _NUMBER.fullmatch(token):
        return None
    if token.startswith("$"):
        return DOLLARS
    if token.endswith("%"):
        return PERCENT
    digits = token.replace(",", "")
    if "." in digits:
        return FRACTION if 0.0 < float(digits) < 1.0 else REAL
    if len(digits) == 4 and digits[:2] == "19":
        return YEAR_19
    if len(digits) == 4 and digits[:2] == "20":
        return YEAR_20
    return INTEGER


def raw_tokens(text: str) -> list[str]:
    """Lower-cased tokens with numbers as written (for exact lexical matching)."""
    return _TOKEN.findall(text.lower())


def normalise(token: str) -> str:
    """A raw token as the word vectors see it: numbers become their class."""
    if token[0].isdigit() or token[0] == "$":
        return number_class(token) or token
    return token


def tokens(text: str) -> list[str]:
    """Normalised tokens (numbers collapsed)."""
    return [normalise(t) for t in raw_tokens(text)]


def head_tokens(title: str, abstract: str, limit: int = DOC_WORDS) -> list[str]:
    """Raw tokens of the document the network reads: title then abstract, the first
    ``limit`` words, tokenising no more of a long abstract than those words need."""
    head = raw_tokens(title)[:limit]
    if len(head) < limit and abstract:
        need = limit - len(head)
        more = raw_tokens(abstract[: need * HEAD_CHARS])  # usually enough words...
        if len(more) < need and len(abstract) > need * HEAD_CHARS:
            more = raw_tokens(abstract[: need * CHARS_PER_WORD])  # ...else read further
        head += more[:need]
    return head


def sentences_of(title: str, abstract: str) -> Iterator[list[str]]:
    """Word2vec's training sentences: the title, then the abstract in rough sentences.

    A split on ". " is enough for skip-gram's +-5 word window; the real sentence
    splitter would cost more than the training it feeds.
    """
    if title:
        yield tokens(title)
    for chunk in abstract.split(". "):
        words = tokens(chunk)
        if words:
            yield words
