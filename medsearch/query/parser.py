# One recursive-descent parser; tokens are lexer.py, the field tags it applies tags.py,
# lifted filters filters.py, the readings refused or noted readings.py and ovid.py, and
# the notes for what runs without MeSH's data field_notes.py.
"""PubMed-style query text -> :class:`ParsedQuery` (AST + filters lifted out of it).

Grammar, evaluated as PubMed does: explicit operators left to right with no precedence,
parentheses to group, and adjacent words binding tightest::

    query := expr
    expr  := seq ((AND | OR | NOT) seq)*
    seq   := (NOT seq | unit)+          adjacent units: AND in a set query, else ranked OR
    unit  := atom tag*                  a tag applies to the atom before it
    atom  := word | "phrase" | ( expr )

Adjacent units are ANDed, as PubMed does, once the query is a *set query*: one with an
operator, a field tag, a quoted phrase or a truncated word (:func:`is_set_query`).
Plain words with none of these stay a ranked OR: a natural-language question is not a
list of words that must all appear. Adjacent words bind tighter than operators, as
PubMed's own translation of ``heart OR kidney failure`` groups ``kidney failure``.

A tag applies to the whole run of plain words before it and searches it as a phrase
(``cataract surgery[tiab]`` is ``"cataract surgery"[tiab]``; PubMed help, "Searching
for a phrase"; names: ``smith ja[au]``). Any input
either parses or raises :class:`QuerySyntaxError` with the offending position, in time
linear in its length (a pasted paper is a query too), and parentheses nest at most
:data:`MAX_NESTING` deep.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from medsearch.errors import QuerySyntaxError
from medsearch.query.filters import lift_filters
from medsearch.query.lexer import Token, split_proximity, tokenize
from medsearch.query.nodes import (
    DATE_TAGS,
    WHOLE_VALUE_TAGS,
    And,
    Node,
    Not,
    Or,
    ParsedQuery,
    Phrase,
    Prefix,
    Term,
)
from medsearch.query.normalize import repair_undecodable, straighten_quotes
from medsearch.query.ovid import check_ovid
from medsearch.query.readings import check_words, in_context
from medsearch.query.tags import apply_tag

# PubMed help, "Wildcards and truncation" and NLM Tech Bull 2024 May-Jun;(458):e5
# ("Terms must have at least 4 characters before the first wildcard"). PubMed does not
# document what it makes of a shorter one, so a shorter stem (CT*, AAA*[tiab]) is an error
# at its position, whatever the strategy's length: never dropped or run another way.
MIN_PREFIX_CHARS = 4
# Parsing, filter lifting and query building recurse once per level of parentheses; a
# bound far past any real query keeps them inside Python's recursion limit (~330 levels
# here), wherever they run (a TUI worker thread too).
MAX_NESTING = 100


def parse_query(text: str, *, history: Resolver | None = None) -> ParsedQuery:
    """Parse ``text``; raise :class:`QuerySyntaxError` naming the problem and its position.

    With ``history``, ``#N`` refers to search N of the search history: it is replaced by
    that search's query as run, in parentheses (:func:`expand_refs`), before parsing, so
    ``#3 AND #5`` is the intersection of the two sets, as on PubMed's Advanced page.

    Every place the text is read differently from how it was typed gets a line in the
    result's ``notes``; what PubMed would not run as typed is an error whose message
    shows the text around the position with a caret under it.
    """
    notes: list[str] = []
    repaired = repair_undecodable(text)
    if repaired != text:
        notes.append("bytes that were not UTF-8 read as Windows-1252 (e.g. \\xe9 as é)")
    text, straightened = straighten_quotes(repaired)
    if straightened:
        notes.append(quotes_note(straightened))
    try:
        text = expand_refs(text, history)
        tokens = tokenize(text)
        check_ovid(tokens)
        parser = _Parser(tokens)
        notes += check_words(tokens, parser.run_ends, set_query=parser.set_query)
        node = parser.parse()
    except QuerySyntaxError as exc:
        raise in_context(exc, text) from None
    node, filters = lift_filters(node)
    notes.extend(parser.notes)
    return ParsedQuery(
        text=text, node=node, filters=filters, set_query=parser.set_query, notes=tuple(notes)
    )


def quotes_note(positions: tuple[int, ...]) -> str:
    """The note for curly quotes read as straight ones."""
    shown = ", ".join(str(p) for p in positions[:6]) + (", ..." if len(positions) > 6 else "")
    return f'curly quotes read as straight quotes " (at {shown})'


Resolver = Callable[[int], str]
"""Search N of the history -> its query as run; raises QuerySyntaxError when there is none."""
_REF = re.compile(r"#([0-9]+)")
MAX_REF_DIGITS = 9


def expand_refs(text: str, history: Resolver | None) -> str:
    """``text`` with each ``#N`` word replaced by ``(query as run of search N)``.

    Only a whole word ``#N`` is a reference (``#1`` in ``#1 AND #2``, ``(#3)``); the
    expansions are texts that were parsed once already and hold no references. A
    ``#N`` is never a word: without a history, or past any search number (``#`` and 24
    digits), it is the error an unknown ``#99`` is.
    """
    if "#" not in text:
        return text
    pieces: list[str] = []
    done = 0
    for token in tokenize(text):
        if token.kind != "word" or (ref := _REF.fullmatch(token.text)) is None:
            continue
        digits = ref.group(1)
        if history is None:
            raise QuerySyntaxError(
                f"#{digits} at {token.pos} refers to search {digits} of the history,"
                " which this search cannot read",
                token.pos,
            )
        try:
            if len(digits) > MAX_REF_DIGITS:
                raise QuerySyntaxError(
                    f"no search #{digits} in the history (see: medsearch history)"
                )
            expansion = history(int(digits))
        except QuerySyntaxError as exc:  # the line names the #N; the caret shows its place
            raise QuerySyntaxError(str(exc), token.pos) from None
        pieces += [text[done : token.pos], f"({expansion})"]
        done = token.pos + len(token.text)
    return "".join(pieces) + text[done:] if pieces else text


def is_set_query(tokens: list[Token]) -> bool:
    """Whether the query is written as a Boolean set (PubMed's reading) rather than as
    plain words to rank: it has an operator, a field tag, a quoted phrase or a
    truncated word. Parentheses alone do not count: pasted prose holds them."""
    return any(
        t.kind in ("and", "or", "not", "tag", "phrase")
        or (t.kind == "word" and t.text.endswith("*"))
        for t in tokens
    )


def parse_plain(text: str) -> ParsedQuery:
    """``text`` as plain ranked words, no operators or tags: never raises.

    For natural-language input that was not written as a query (evaluation claims,
    citation sentences with ``[12]``, abstracts for "similar articles").
    """
    text = repair_undecodable(text)
    words = tuple(Term(m.group(), m.start()) for m in re.finditer(r"\S+", text))
    node: Node | None = (
        None if not words else words[0] if len(words) == 1 else Or(words, words=True)
    )
    return ParsedQuery(text=text, node=node)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.i = 0
        self.run_ends = _run_ends(tokens)
        self.set_query = is_set_query(tokens)
        self.notes: list[str] = []

    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def parse(self) -> Node | None:
        if not self.tokens:
            return None
        node = self.expr(depth=0)
        extra = self.peek()
        if extra is not None:  # only a stray ")" stops expr early
            raise QuerySyntaxError(f"unbalanced parenthesis at {extra.pos}", extra.pos)
        return node

    def expr(self, depth: int) -> Node:
        first = self.peek()
        if first is not None and first.kind in ("and", "or"):
            raise QuerySyntaxError(f"nothing before {first.text} at {first.pos}", first.pos)
        left = self.seq(depth)
        # The operands of a run of one operator, gathered and combined once at its end:
        # combining at each operator would copy the run so far (quadratic in its length).
        combined: type[And] | type[Or] | None = None
        parts: list[Node] = []
        while (op := self.peek()) is not None and op.kind in ("and", "or", "not"):
            self.take()
            nxt = self.peek()
            if nxt is None or nxt.kind in ("rparen", "and", "or"):
                raise QuerySyntaxError(f"nothing after {op.text} at {op.pos}", op.pos)
            right = self.seq(depth)
            kind = Or if op.kind == "or" else And
            if kind is not combined:
                if combined is not None:
                    left = combined(tuple(parts))
                parts, combined = list(_flat(left, kind)), kind
            parts.extend(_flat(Not(right) if op.kind == "not" else right, kind))
        return left if combined is None else combined(tuple(parts))

    def seq(self, depth: int) -> Node:
        units: list[Node] = []
        while (token := self.peek()) is not None:
            if token.kind in ("and", "or") or (token.kind == "not" and units):
                break
            if token.kind == "rparen":
                if depth == 0:
                    raise QuerySyntaxError(f"unbalanced parenthesis at {token.pos}", token.pos)
                break
            if token.kind == "not":
                self.take()
                nxt = self.peek()
                if nxt is None or nxt.kind in ("rparen", "and", "or", "not"):
                    raise QuerySyntaxError(f"nothing after NOT at {token.pos}", token.pos)
                units.append(Not(self.seq(depth)))
                continue
            units.append(self.unit(depth))
        if not units:  # unreachable: callers check the token first; kept as a clean error
            pos = token.pos if token is not None else 0
            raise QuerySyntaxError(f"expected a word at {pos}", pos)
        if len(units) == 1:
            return units[0]
        # PubMed help, "Combining search terms with Boolean operators": terms side by
        # side are ANDed.
        return And(tuple(units)) if self.set_query else Or(tuple(units), words=True)

    def unit(self, depth: int) -> Node:
        token = self.take()
        node: Node
        if token.kind == "tag":
            raise QuerySyntaxError(
                f"field tag [{token.text}] has nothing before it at {token.pos}", token.pos
            )
        if token.kind == "lparen":
            close = self.peek()
            if close is None:
                raise QuerySyntaxError(f"unclosed parenthesis at {token.pos}", token.pos)
            if close.kind == "rparen":
                raise QuerySyntaxError(f"empty parentheses at {token.pos}", token.pos)
            if depth >= MAX_NESTING:
                raise QuerySyntaxError(
                    f"parentheses nested more than {MAX_NESTING} deep at {token.pos}", token.pos
                )
            node = self.expr(depth + 1)
            close = self.peek()
            if close is None or close.kind != "rparen":
                raise QuerySyntaxError(f"unclosed parenthesis at {token.pos}", token.pos)
            self.take()
        elif (dates := self.date_range(token)) is not None:
            return dates
        elif token.kind == "phrase":
            node = _phrase(token)
        else:
            node = self.tagged_run(token)
            if self.set_query and isinstance(node, Term) and not any(map(str.isalnum, node.text)):
                # punctuation alone searches nothing: in a strategy it is a slip
                raise QuerySyntaxError(f"stray '{token.text}' at {token.pos}", token.pos)
        if (tag := self.peek()) is not None and tag.kind == "tag":
            node = apply_tag(tag.text, node, tag.pos)
            self.take()
        while (extra := self.peek()) is not None and extra.kind == "tag":
            self.take()  # the first tag wins: a tagged node ignores the tags after it
            self.notes.append(
                f"field tag [{extra.text}] at {extra.pos} ignored: the words before it"
                f" already have [{tag.text if tag is not None else ''}]"
            )
        return node

    def date_range(self, token: Token) -> Node | None:
        """PubMed's quoted range form ``"2015/01/01"[dp] : "2016/12/31"[dp]`` (what its
        Advanced page writes), read as ``2015/01/01:2016/12/31[dp]``, for whichever date
        tag both ends carry; None when the tokens from ``token`` are not that form."""
        ahead = [self.peek(n) for n in range(4)]
        tag, colon, end, tag2 = ahead
        if token.kind not in ("phrase", "word") or None in ahead:
            return None
        assert tag is not None and colon is not None and end is not None and tag2 is not None
        if tag.kind != "tag" or split_proximity(tag.text)[0] not in DATE_TAGS:
            return None
        if colon.kind != "word" or colon.text != ":" or end.kind not in ("phrase", "word"):
            return None
        if tag2.kind != "tag" or tag2.text != tag.text:
            return None
        self.i += 4
        span = Term(f"{token.text.strip()}:{end.text.strip()}", token.pos)
        return apply_tag(tag.text, span, tag.pos)

    def tagged_run(self, token: Token) -> Node:
        """A word, or with the words after it the run a following field tag applies to.

        As in PubMed, ``smith ja[au]`` and ``N Engl J Med[ta]`` tag the whole run of
        plain words before the tag (back to an operator, parenthesis or phrase).
        """
        end = self.run_ends[self.i - 1]  # where the run of words holding ``token`` ends
        tag = self.peek(end - self.i)
        if end == self.i or tag is None or tag.kind != "tag":
            return _word(token)
        words = [token, *self.tokens[self.i : end]]
        self.i = end
        text = " ".join(w.text for w in words)
        if split_proximity(tag.text)[0] in WHOLE_VALUE_TAGS:
            return Phrase(text, token.pos)
        return _run_phrase(words)


def _run_ends(tokens: list[Token]) -> list[int]:
    """For each token, the index of the first token from it on that is not a plain word.

    One pass from the end, so that :meth:`_Parser.tagged_run` can tell whether a tag
    follows a run without walking the run again for every word of it.
    """
    ends = [0] * len(tokens)
    end = len(tokens)
    for j in range(len(tokens) - 1, -1, -1):
        if tokens[j].kind != "word":
            end = j
        ends[j] = end
    return ends


def _word(token: Token) -> Node:
    text = token.text
    if text.endswith("*"):
        stem = text.rstrip("*")
        if sum(c.isalnum() for c in stem) < MIN_PREFIX_CHARS:
            raise QuerySyntaxError(
                f"truncated word '{text}' at {token.pos}: PubMed needs at least"
                f" {MIN_PREFIX_CHARS} characters before the *; write the word's forms"
                " in full, joined by OR",
                token.pos,
            )
        return Prefix(stem, token.pos)
    return Term(text, token.pos)


def _phrase(token: Token) -> Node:
    """A quoted phrase; ``"heart attack*"`` truncates its last word (PubMed help,
    "Wildcards and truncation": truncation works inside a phrase)."""
    if token.text.rstrip().endswith("*") and (words := token.text.split()):
        *head, last = words
        stem = _word(Token("word", last, token.pos))
        if isinstance(stem, Prefix):
            return Prefix(" ".join([*head, stem.text]), token.pos)
    return Phrase(token.text, token.pos)


def _run_phrase(words: list[Token]) -> Node:
    """A run of words a text tag follows, searched as the phrase PubMed searches.

    ``heart attack*[tiab]`` is a phrase whose last word is truncated (a :class:`Prefix`
    of several words). A ``*`` inside the run cannot be a phrase: those words are
    ANDed instead, each truncated as typed.
    """
    inner = [w for w in words[:-1] if w.text.endswith("*")]
    if inner:
        return And(tuple(_word(w) for w in words))
    last = _word(words[-1])  # checks a truncated last word's length
    if isinstance(last, Prefix):
        return Prefix(" ".join([*(w.text for w in words[:-1]), last.text]), words[0].pos)
    return Phrase(" ".join(w.text for w in words), words[0].pos)


def _flat(node: Node, kind: type[And] | type[Or]) -> tuple[Node, ...]:
    return node.children if isinstance(node, kind) else (node,)
