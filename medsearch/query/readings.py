"""How a typed strategy is read where it could be read two ways: refused with the place
shown, or read one way and said so (a note), never silently.

The rules, from PubMed's help (https://pubmed.ncbi.nlm.nih.gov/help/) and its
tutorial (https://www.nlm.nih.gov/bsd/disted/pubmedtutorial/020_230.html: "AND, OR and
NOT must be entered in UPPERCASE"):

- a lower-case ``and``/``or``/``not`` where an operator would stand
  (``bile duct[tiab] or biliary[tiab]``, ``Animals[mh] not Humans[mh]``, ``a or b``
  among untagged words) is refused: PubMed's help asks for upper case, so what PubMed
  makes of the lower-case word is not documented, and either reading would change the
  count without a word. Inside a run of words a whole-value tag follows, it is part of
  the name (``Wit and Humor[mh]``, PubMed's own example in NLM Technical Bulletin
  1997, Nov-Dec); inside a run a text tag follows (``heart and lung[tiab]``), it is a
  word of the phrase, as PubMed reads it, with a note;
- a word of punctuation alone (``:``, ``;``) in a strategy is refused as a stray
  character (the parser's check);
- ``#N`` is a search of the history, never a word: without a history, or past its
  numbers, it is an error.

Errors show the text around the position with a caret under it (:func:`shown_at`).
"""

from __future__ import annotations

import re

from medsearch.errors import QuerySyntaxError
from medsearch.query.lexer import Token, canonical_tag, split_proximity
from medsearch.query.nodes import WHOLE_VALUE_TAGS

LOWER_OPERATORS = ("and", "or", "not")
WINDOW = 72
"""Characters of the query shown around an error's position."""

_UPPER_OPERATOR = re.compile(r"(?<![\w-])(?:AND|OR|NOT)(?![\w-])")
_BRACKETED = re.compile(r"\[([^\[\]]{1,60})\]")
_TRUNCATED = re.compile(r"\w\*")
_REFERENCE = re.compile(r"(?<![\w#])#[0-9]+(?![\w])")
_QUOTES = re.compile('["\u201c\u201d\u201e\u201f]')


def looks_like_strategy(text: str) -> bool:
    """Whether ``text`` is written in the query language: an upper-case operator, a
    field tag PubMed knows, a quote, a truncation or a ``#N``. Only text with none of
    these (pasted prose) may be read as plain words when it does not parse."""
    if _QUOTES.search(text) or _UPPER_OPERATOR.search(text) or _TRUNCATED.search(text):
        return True
    if _REFERENCE.search(text):
        return True
    return any(canonical_tag(m.group(1)) is not None for m in _BRACKETED.finditer(text))


def check_words(tokens: list[Token], run_ends: list[int], *, set_query: bool) -> list[str]:
    """Refuse a lower-case operator where an operator would stand in a strategy
    (``set_query``); return the note for those read as words of a tagged phrase
    (``heart and lung[tiab]``). Plain words are left alone."""
    if not set_query:
        return []
    in_phrase: list[Token] = []
    for j, token in enumerate(tokens):
        if token.kind != "word":
            continue
        if not any(map(str.isalnum, token.text)):
            _check_stray(tokens, run_ends, j)
            continue
        if token.text.lower() not in LOWER_OPERATORS:
            continue
        tag = _run_tag(tokens, run_ends, j)
        if tag is not None and split_proximity(tag)[0] in WHOLE_VALUE_TAGS:
            continue  # Wit and Humor[mh]: part of the name
        if tag is not None:
            in_phrase.append(token)
            continue
        upper = token.text.upper()
        raise QuerySyntaxError(
            f"lower-case '{token.text}' at {token.pos}: PubMed's operators are upper case;"
            f' write {upper} to combine, or "{token.text}" in quotes to search the word',
            token.pos,
        )
    if not in_phrase:
        return []
    shown = ", ".join(f"'{t.text}' at {t.pos}" for t in in_phrase[:6])
    more = ", ..." if len(in_phrase) > 6 else ""
    return [
        f"lower-case {shown}{more} searched as words of the tagged phrase they are in, as"
        " PubMed reads them; write AND/OR/NOT to combine"
    ]


def _check_stray(tokens: list[Token], run_ends: list[int], j: int) -> None:
    """A word of punctuation alone searches nothing: in a strategy it is a slip (``AND :
    lung[tiab]``), refused, unless it is part of a name (``Wit & Humor[mh]``) or the
    ``:`` of PubMed's quoted date range (the parser checks the range)."""
    token = tokens[j]
    if token.text == ":" and j > 0 and tokens[j - 1].kind == "tag":
        return
    if token.text.strip("*") == "":  # diagnostic * [MeSH:noexp], in PubMed's own filters
        raise QuerySyntaxError(
            f"a '*' standing alone at {token.pos}: truncation takes the * right after the"
            " word (diagnostic*), with at least 4 characters before it",
            token.pos,
        )
    tag = _run_tag(tokens, run_ends, j)
    if tag is not None and split_proximity(tag)[0] in WHOLE_VALUE_TAGS:
        return
    raise QuerySyntaxError(f"stray '{token.text}' at {token.pos}", token.pos)


def _run_tag(tokens: list[Token], run_ends: list[int], j: int) -> str | None:
    """The tag after the run of words ``tokens[j]`` is inside (not at the start of:
    there it would begin the phrase, ``bile duct[tiab] or biliary[tiab]``), or None."""
    if j == 0 or tokens[j - 1].kind != "word":
        return None
    end = run_ends[j]
    if end >= len(tokens) or tokens[end].kind != "tag":
        return None
    return tokens[end].text


def shown_at(text: str, pos: int, width: int = WINDOW) -> str:
    """Two lines: the stretch of ``text`` around ``pos`` (at most ``width`` characters,
    ``...`` where it was cut) and a caret under ``pos``."""
    pos = max(0, min(pos, len(text)))
    start = max(0, pos - width // 2)
    end = min(len(text), start + width)
    start = max(0, end - width)
    flat = "".join(" " if c.isspace() or not c.isprintable() else c for c in text[start:end])
    before = "..." if start > 0 else ""
    after = "..." if end < len(text) else ""
    return f"  {before}{flat}{after}\n  {' ' * (len(before) + pos - start)}^"


def in_context(exc: QuerySyntaxError, text: str) -> QuerySyntaxError:
    """``exc`` with the text around its position shown under its line."""
    if exc.position is None or exc.shown:
        return exc
    return QuerySyntaxError(exc.problem, exc.position, shown=shown_at(text, exc.position))
