"""Ovid MEDLINE forms left in a strategy pasted into PubMed syntax: each is an error
that names the Ovid form and the PubMed form to write instead.

Strategies are often written in Ovid and translated by hand; what the translation
misses (``exp Child/``, ``*Lymphatic Metastasis/``, ``cancer.ti,ab.``, ``adj3``,
``child$``, ``wom?n``, ``1 or 2``) means nothing in PubMed, and read as words it would
search something else and count 0 without a word of warning. Ovid's syntax is from
its MEDLINE field guide (https://ospguides.ovid.com/OSPguides/medline.htm): ``/`` after a
heading, ``exp`` to explode it, ``*`` for a major topic, ``.xx.`` field suffixes, ``adjN``
proximity, ``$`` truncation, ``?``/``#`` wildcards, line numbers combined with operators.
"""

from __future__ import annotations

import re

from medsearch.errors import QuerySyntaxError
from medsearch.query.lexer import Token

# Ovid field suffixes -> the PubMed tag to use (ti,ab -> [tiab]; mp/tw: PubMed's text words).
_SUFFIX_TAGS = {
    "ti": "ti",
    "ab": "ab",
    "ti,ab": "tiab",
    "ab,ti": "tiab",
    "tw": "tw",
    "mp": "tw",
    "kw": "ot",
    "kf": "ot",
    "sh": "mh",
    "hw": "mh",
    "pt": "pt",
    "au": "au",
    "jn": "ta",
    "jw": "ta",
    "nm": "nm",
    "rn": "rn",
    "fs": "sh",
    "af": "all",
}
_SUFFIX = re.compile(r"\.((?:[a-z]{2},)*[a-z]{2})\.?$", re.IGNORECASE)
_ADJ = re.compile(r"adj[0-9]*", re.IGNORECASE)
_DOLLAR = re.compile(r"[A-Za-z]{2,}\$[0-9]?")
_WILDCARD = re.compile(r"[A-Za-z]+[?#][A-Za-z]+")
_LINE_COMBINE = re.compile(r"(?:or|and)/[0-9]+(?:[-,][0-9]+)*", re.IGNORECASE)
_NUMBER = re.compile(r"[0-9]{1,3}")
_LINE_OPS = ("and", "or", "not")


def check_ovid(tokens: list[Token]) -> None:
    """Raise :class:`QuerySyntaxError` at the first Ovid form among ``tokens``."""
    numbers_only = all(_is_line_part(t) for t in tokens)
    for j, token in enumerate(tokens):
        if token.kind != "word":
            continue
        text = token.text
        if text.isalnum() and not (text.isdigit() or text[:3].lower() in ("exp", "adj")):
            continue  # most words: nothing Ovid about them (a pasted paper has 15,000)
        if (problem := _ovid_word(tokens, j, numbers_only=numbers_only)) is not None:
            raise QuerySyntaxError(f"{problem}", token.pos)


def _is_line_part(token: Token) -> bool:
    """Whether ``token`` can be part of an Ovid line combination (``10 not (10 and 11)``)."""
    if token.kind in ("lparen", "rparen", "and", "or", "not"):
        return True
    return token.kind == "word" and (token.text.isdigit() or token.text.lower() in _LINE_OPS)


def _ovid_word(tokens: list[Token], j: int, *, numbers_only: bool) -> str | None:
    """What is Ovid about the word ``tokens[j]`` and how PubMed says it, or None."""
    text = tokens[j].text
    at = tokens[j].pos
    if text.lower() == "exp" and _next_word(tokens, j) is not None:
        words, end = _run(tokens, j + 1)
        major = words.startswith("*")
        name = words.lstrip("*").rstrip("/")
        tag = "majr" if major else "mh"
        typed = f"exp {words}" if words.endswith("/") else f"exp {words}{end}"
        return f"Ovid's `{typed}` at {at}: in PubMed write {_tagged(name, tag)} (exploded)"
    if text.startswith("*") and len(text) > 1 and text[1].isalpha():
        words, end = _run(tokens, j)
        name = words.lstrip("*").rstrip("/")
        tag = "majr:noexp" if words.endswith("/") or "noexp" in end else "majr"
        return (
            f"Ovid's major-topic star `{words}{end}` at {at}: in PubMed write {_tagged(name, tag)}"
        )
    if text.endswith("/") and len(text) > 1 and text[-2].isalnum():
        words = _run_back(tokens, j)
        name = words.rstrip("/")
        return (
            f"Ovid's heading form `{words}` at {at}: in PubMed write"
            f" {_tagged(name, 'mh:noexp')} (or {_tagged(name, 'mh')} for Ovid's exp)"
        )
    if (suffix := _SUFFIX.search(text)) is not None and suffix.group(1).lower() in _SUFFIX_TAGS:
        tag = _SUFFIX_TAGS[suffix.group(1).lower()]
        return (
            f"Ovid's field suffix `{suffix.group()}` at {at}: in PubMed put [{tag}] after the"
            " words or the parenthesis"
        )
    if _ADJ.fullmatch(text):
        gap = text[3:] or "1"
        return (
            f"Ovid's proximity `{text}` at {at}: in PubMed write the words in quotes with a"
            f' distance, "word1 word2"[tiab:~{gap}]'
        )
    if _DOLLAR.fullmatch(text):
        return f"Ovid's truncation `{text}` at {at}: in PubMed write {text.split('$')[0]}*"
    if _WILDCARD.fullmatch(text):
        return (
            f"Ovid's wildcard `{text}` at {at}: PubMed has no one-letter wildcard; write each"
            " spelling, joined by OR"
        )
    if _LINE_COMBINE.fullmatch(text):
        return (
            f"Ovid's line combination `{text}` at {at}: in PubMed combine searches as"
            " #1 OR #2 (history numbers) or paste the lines' own text"
        )
    if numbers_only and _NUMBER.fullmatch(text) and _is_line_combination(tokens, j):
        op = tokens[j + 1].text.upper()
        return (
            f"Ovid's line numbers `{text} {tokens[j + 1].text} {tokens[j + 2].text}` at {at}:"
            f" in PubMed write #{text} {op} #{tokens[j + 2].text} (history numbers)"
        )
    return None


def _is_line_combination(tokens: list[Token], j: int) -> bool:
    """``1 or 2``: a bare line number, an operator in any case, a bare line number, in a
    text of nothing else (``type 1 or 2 diabetes`` is words; ``1 OR 2[pmid]`` PubMed's)."""
    if j + 2 >= len(tokens):
        return False
    op, other = tokens[j + 1], tokens[j + 2]
    if op.text.lower() not in _LINE_OPS or op.kind not in ("word", "and", "or", "not"):
        return False
    if other.kind != "word" or not _NUMBER.fullmatch(other.text):
        return False
    after = tokens[j + 3] if j + 3 < len(tokens) else None
    before = tokens[j - 1] if j > 0 else None
    return (after is None or after.kind != "tag") and (before is None or before.kind != "word")


def _next_word(tokens: list[Token], j: int) -> Token | None:
    nxt = tokens[j + 1] if j + 1 < len(tokens) else None
    return nxt if nxt is not None and nxt.kind == "word" else None


def _run(tokens: list[Token], j: int) -> tuple[str, str]:
    """The words from ``tokens[j]`` to the first that ends with ``/`` (or to the run's
    end), and the tag after the run as typed, if any."""
    words: list[str] = []
    for token in tokens[j:]:
        if token.kind != "word":
            end = f"[{token.text}]" if token.kind == "tag" else ""
            return " ".join(words), end
        words.append(token.text)
        if token.text.endswith("/"):
            break
    return " ".join(words), ""


def _run_back(tokens: list[Token], j: int) -> str:
    """The run of words that ends at ``tokens[j]`` (``Lymphatic Metastasis/``)."""
    start = j
    while (
        start > 0 and tokens[start - 1].kind == "word" and not tokens[start - 1].text.endswith("/")
    ):
        start -= 1
    while start < j and tokens[start].text.isdigit():
        start += 1  # Ovid's line number pasted with the line (30 Animals/)
    return " ".join(t.text for t in tokens[start : j + 1])


def _tagged(name: str, tag: str) -> str:
    return f'"{name}"[{tag}]' if " " in name else f"{name}[{tag}]"
