"""Split PubMed-style query text into tokens: words, phrases, parentheses, operators, tags.

Biomedical names carry query punctuation inside them, so the rules are about context:
a ``(`` inside a word belongs to the word when it closes within it (``5-HT(2A)``), a
``[...]`` glued between letters that is not a field tag belongs to the word
(``benzo[a]pyrene``), and only upper-case ``AND``/``OR``/``NOT`` are operators, as in
PubMed (a lower-case one where an operator would stand is an error: see
:mod:`medsearch.query.readings`). A ``"`` left unclosed is an error at its position: read
to the end of the text or dropped, it would change the strategy silently. Curly quotes
were made straight before this (:func:`medsearch.query.normalize.straighten_quotes`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from medsearch.errors import QuerySyntaxError

TokenKind = Literal["word", "phrase", "lparen", "rparen", "and", "or", "not", "tag"]

OPERATORS: dict[str, TokenKind] = {"AND": "and", "OR": "or", "NOT": "not"}

# Every spelling PubMed users type, mapped to the canonical short tag.
TAG_ALIASES: dict[str, str] = {
    "ti": "ti",
    "title": "ti",
    "ab": "ab",
    "abstract": "ab",
    "tiab": "tiab",
    "title/abstract": "tiab",
    "au": "au",
    "author": "au",
    "auth": "au",
    "fau": "fau",
    "full author name": "fau",
    "1au": "1au",
    "first author": "1au",
    "first author name": "1au",
    "lastau": "lastau",
    "last author": "lastau",
    "last author name": "lastau",
    "ad": "ad",
    "affiliation": "ad",
    "aid": "aid",
    "article identifier": "aid",
    "gr": "gr",
    "grant number": "gr",
    "grants and funding": "gr",
    "sb": "sb",
    "subset": "sb",
    "filter": "sb",
    "sh": "sh",
    "mesh subheading": "sh",
    "subheading": "sh",
    "is": "ta",
    "issn": "ta",
    "mh": "mh",
    "mesh": "mh",
    "mesh terms": "mh",
    "mesh term": "mh",
    "majr": "majr",
    "mesh major topic": "majr",
    "nm": "nm",
    "supplementary concept": "nm",
    "substance name": "nm",
    "pt": "pt",
    "ptyp": "pt",
    "publication type": "pt",
    "rn": "rn",
    "ec/rn number": "rn",
    "ec/rn": "rn",
    "registry number": "rn",
    "pa": "pa",
    "pharmacological action": "pa",
    "ta": "ta",
    "journal": "ta",
    "jour": "ta",
    "la": "la",
    "lang": "la",
    "language": "la",
    "dp": "dp",
    "pdat": "dp",
    "date - publication": "dp",
    "publication date": "dp",
    "ppdat": "ppdat",
    "date - print publication": "ppdat",
    "print publication date": "ppdat",
    "epdat": "epdat",
    "date - electronic publication": "epdat",
    "electronic publication date": "epdat",
    "crdt": "crdt",
    "date - create": "crdt",
    "create date": "crdt",
    "edat": "edat",
    "date - entrez": "edat",
    "date - entry": "edat",
    "entrez date": "edat",
    "entry date": "edat",
    "mhda": "mhda",
    "date - mesh": "mhda",
    "mesh date": "mhda",
    "dcom": "dcom",
    "date - completion": "dcom",
    "completion date": "dcom",
    "lr": "lr",
    "date - last revision": "lr",
    "last revision date": "lr",
    "date - modification": "lr",
    "pmid": "pmid",
    "uid": "pmid",
    "kw": "kw",
    "ot": "kw",
    "keyword": "kw",
    "other term": "kw",
    "all": "all",
    "all fields": "all",
    "tw": "tw",
    "text word": "tw",
    "text words": "tw",
}


@dataclass(frozen=True, slots=True)
class Token:
    kind: TokenKind
    text: str
    pos: int


# Fields PubMed offers proximity search in ("hip pain"[tiab:~2]): help page, "Proximity
# searching" (https://pubmed.ncbi.nlm.nih.gov/help/#proximity-searching).
PROXIMITY_TAGS = ("ti", "tiab", "ad")
_PROXIMITY = re.compile(r"(.*?)\s*:\s*~\s*([0-9]{1,4})\s*")
# Headings PubMed searches without their narrower ones: [mh:noexp], [majr:noexp],
# [sh:noexp] (help page, "Searching MeSH terms"). Subheadings are not exploded here (NLM's
# qualifier tree is not imported), so [sh:noexp] searches what [sh] does.
NOEXP = ":noexp"
NOEXP_TAGS = ("mh", "majr", "sh")
# ``[mesh:no exp]``, a spacing PubMed accepts as ``[mesh:noexp]``.
_NOEXP = re.compile(r"(.*?)\s*:\s*no\s*exp\s*", re.IGNORECASE)


def canonical_tag(raw: str) -> str | None:
    """The short tag ``raw`` spells, or None; a proximity tag keeps its distance
    (``Title/Abstract:~2`` -> ``tiab:~2``), a MeSH tag its ``:noexp``
    (``MeSH Terms:NoExp`` -> ``mh:noexp``)."""
    if (near := _PROXIMITY.fullmatch(raw)) is not None:
        tag = canonical_tag(near.group(1))
        return None if tag is None else f"{tag}:~{int(near.group(2))}"
    if (noexp := _NOEXP.fullmatch(raw)) is not None:
        tag = TAG_ALIASES.get(" ".join(noexp.group(1).lower().split()))
        return f"{tag}{NOEXP}" if tag in NOEXP_TAGS else None
    return TAG_ALIASES.get(" ".join(raw.lower().split()))


def split_proximity(tag: str) -> tuple[str, int | None]:
    """``tiab:~2`` -> (``tiab``, 2); a tag without a distance -> (tag, None); ``mh:noexp``
    -> (``mh``, None) (:func:`is_noexp` tells it apart)."""
    base, sep, near = tag.partition(":~")
    return base.removesuffix(NOEXP), int(near) if sep else None


def is_noexp(tag: str) -> bool:
    """Whether a canonical tag asks for a heading without its narrower ones."""
    return tag.endswith(NOEXP)


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``; raises :class:`QuerySyntaxError` on a bad field tag."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == '"':
            end = text.find('"', i + 1)
            if end < 0:
                raise QuerySyntaxError(f"unclosed quote at {i}", i)
            tokens.append(Token("phrase", text[i + 1 : end], i))
            i = end + 1
        elif char == "(":
            tokens.append(Token("lparen", "(", i))
            i += 1
        elif char == ")":
            tokens.append(Token("rparen", ")", i))
            i += 1
        elif char == "[":
            i = _read_tag(text, i, tokens)
        else:
            i = _read_word(text, i, tokens)
    return tokens


def _read_tag(text: str, start: int, tokens: list[Token]) -> int:
    end = text.find("]", start + 1)
    if end < 0:
        raise QuerySyntaxError(f"unclosed field tag at {start}", start)
    raw = text[start + 1 : end]
    tag = canonical_tag(raw)
    if tag is None and raw.lower().startswith("mp="):  # Ovid's echo of the fields searched
        raise QuerySyntaxError(
            f"Ovid's field list [{raw[:12]}...] at {start}: not a PubMed tag; leave it out"
            " and put [tw] or [tiab] after the words",
            start,
        )
    if tag is None:
        shown = raw if len(raw) <= 30 else raw[:27] + "..."
        raise QuerySyntaxError(f"unknown field tag [{shown}] at {start}", start)
    tokens.append(Token("tag", tag, start))
    return end + 1


def _read_word(text: str, start: int, tokens: list[Token]) -> int:
    """Read one word from ``start``; return where the next token begins.

    A ``(`` in the word that never closes within it opens a group instead (``foo(bar
    baz)``): the word ends there, and the rest of the scanned stretch becomes tokens at
    once (:func:`_split_at_unclosed`) rather than being scanned again from each ``(``,
    which would take time quadratic in the stretch (``x(x(x(...``).
    """
    i, n = start, len(text)
    unclosed: list[int] = []  # positions of the "(" not closed so far, a stack
    closer: dict[int, int] = {}  # "(" position -> the ")" that closes it in the word
    while i < n:
        char = text[i]
        if char.isspace() or char == '"':
            break
        if char == "(":
            unclosed.append(i)
        elif char == ")":
            if not unclosed:
                break
            closer[unclosed.pop()] = i
        elif char == "[":
            close = text.find("]", i + 1)
            glued = close >= 0 and close + 1 < n and text[close + 1].isalnum()
            if close < 0 or canonical_tag(text[i + 1 : close]) is not None or not glued:
                break  # a field tag (or a bad one) follows the word
            i = close  # benzo[a]pyrene: the brackets are part of the name
        i += 1
    if unclosed:
        _split_at_unclosed(text, start, i, unclosed, closer, tokens)
    else:
        _append_word(text, start, i, tokens)
    return i


def _split_at_unclosed(
    text: str,
    start: int,
    end: int,
    unclosed: list[int],
    closer: dict[int, int],
    tokens: list[Token],
) -> None:
    """The tokens of ``text[start:end]``, a stretch with ``(`` that never close in it.

    What reading a word from each position would give, from the pairs the one scan
    found: a word runs to the first ``(`` left open (``foo(bar`` -> ``foo``, ``(``,
    ``bar``), or, inside a pair that closes, to that pair's ``)``. A ``[`` reached here
    is one the scan read as part of a name, so as a tag it is an unknown one.
    """
    following = iter(unclosed)  # each "(" left open, in order: where a top-level word ends
    next_open = next(following)
    enclosing: list[int] = []  # the ")" of each pair around the position, innermost last
    _append_word(text, start, next_open, tokens)
    i = next_open
    while i < end:
        char = text[i]
        if char == "(":
            tokens.append(Token("lparen", "(", i))
            if i in closer:
                enclosing.append(closer[i])
            else:
                next_open = next(following, end)
            i += 1
        elif char == ")":
            tokens.append(Token("rparen", ")", i))
            enclosing.pop()
            i += 1
        elif char == "[":
            i = _read_tag(text, i, tokens)
        else:
            stop = enclosing[-1] if enclosing else next_open
            _append_word(text, i, stop, tokens)
            i = stop


def _append_word(text: str, start: int, end: int, tokens: list[Token]) -> None:
    word = text[start:end]
    tokens.append(Token(OPERATORS.get(word, "word"), word, start))
