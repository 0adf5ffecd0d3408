"""Any text is a query: a pasted paper parses in linear time, and nothing crashes.

A user pastes whole papers into the search box and scripts pass whatever bytes they
hold, so the parser's promise is: for any text, a plan or a :class:`QuerySyntaxError`,
in time linear in the text's length. The grammar itself is specified in test_query.py;
here the linear parser is also checked against a reference, the straightforward
(quadratic) reading of the same grammar, on random token sequences.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.errors import QuerySyntaxError
from medsearch.paths import Paths
from medsearch.query import Or, ParsedQuery, Phrase, Tagged, Term, parse_query
from medsearch.query.filters import lift_filters
from medsearch.query.lexer import OPERATORS, Token, _read_tag, canonical_tag, tokenize
from medsearch.query.nodes import WHOLE_VALUE_TAGS, And, Node, Not
from medsearch.query.ovid import check_ovid
from medsearch.query.parser import (
    MAX_NESTING,
    _flat,
    _Parser,
    _phrase,
    _run_phrase,
    _word,
)
from medsearch.query.readings import check_words
from medsearch.query.tags import apply_tag
from medsearch.retrieval.searcher import open_searcher
from medsearch.tui.app import MedsearchApp
from medsearch.tui.widgets.results import ResultsList
from medsearch.tui.widgets.search_bar import SearchBar

REPO = Path(__file__).resolve().parent.parent

# Far above what the linear parser needs for 100K characters (~0.2 s) and far below
# what the quadratic one took (~50 s), so a loaded machine cannot make it flaky.
GENEROUS_SECONDS = 5.0
PAPER = (
    "Interleukin-6 blockade with tocilizumab reduced mortality in patients with severe"
    " COVID-19 and high IL-6 levels; the effect was consistent across subgroups and"
    " persisted after adjustment for corticosteroid use at 28 days"
)


def pasted_paper(chars: int) -> str:
    """Plain words of an abstract, repeated to ``chars`` characters: one long run."""
    vocabulary = PAPER.split()
    words: list[str] = []
    length = 0
    while length < chars:
        word = vocabulary[len(words) % len(vocabulary)]
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:chars]


def timed_parse(text: str) -> tuple[ParsedQuery | QuerySyntaxError, float]:
    start = time.perf_counter()
    try:
        outcome: ParsedQuery | QuerySyntaxError = parse_query(text)
    except QuerySyntaxError as err:
        outcome = err
    return outcome, time.perf_counter() - start


# -- linear time -----------------------------------------------------------------------------


def test_a_pasted_100k_character_paper_parses_at_once() -> None:
    text = pasted_paper(100_000)
    parsed, seconds = timed_parse(text)
    assert seconds < GENEROUS_SECONDS
    assert isinstance(parsed, ParsedQuery) and isinstance(parsed.node, Or)
    assert len(parsed.node.children) == len(text.split())


def test_a_long_run_of_tags_after_a_long_run_of_words_parses_at_once() -> None:
    text = pasted_paper(50_000) + "[tiab]" * 8_000
    parsed, seconds = timed_parse(text)
    assert seconds < GENEROUS_SECONDS
    assert isinstance(parsed, ParsedQuery) and isinstance(parsed.node, Tagged)
    assert parsed.node.tag == "tiab" and isinstance(parsed.node.node, Phrase)  # PubMed's reading


def test_words_whose_parentheses_never_close_tokenize_at_once() -> None:
    """``x(x(x(...``: each ``(`` opens a group; the word before it is read once."""
    text = "x(" * 50_000
    parsed, seconds = timed_parse(text)
    assert seconds < GENEROUS_SECONDS
    assert isinstance(parsed, QuerySyntaxError)
    assert parsed.problem == f"parentheses nested more than {MAX_NESTING} deep at 201"


def test_long_operator_chains_parse_at_once_and_stay_flat() -> None:
    text = " OR ".join(f"w{i}" for i in range(25_000)) + " AND z NOT y"
    parsed, seconds = timed_parse(text)
    assert seconds < GENEROUS_SECONDS
    assert isinstance(parsed, ParsedQuery) and isinstance(parsed.node, And)
    first, z, not_y = parsed.node.children
    assert isinstance(first, Or) and len(first.children) == 25_000
    assert (z, not_y) == (Term("z", len(text) - 7), Not(Term("y", len(text) - 1)))


# -- nesting ---------------------------------------------------------------------------------


def test_parentheses_nest_up_to_the_limit_and_no_deeper() -> None:
    deepest = "(" * MAX_NESTING + "stroke[ti]" + ")" * MAX_NESTING
    assert parse_query(deepest).node == Tagged("ti", Term("stroke", MAX_NESTING), 106)
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query("(" * 400 + "stroke" + ")" * 400)
    assert caught.value.problem == f"parentheses nested more than {MAX_NESTING} deep at 100"
    assert caught.value.position == MAX_NESTING


# -- bytes that were not UTF-8 -----------------------------------------------------------------


def test_escaped_bytes_read_as_windows_1252_and_broken_pairs_as_replacement() -> None:
    assert parse_query("caf\udce9").node == Term("café", 0)
    assert parse_query("\udce9t\udce9[la]").filters.languages == ("été",)
    cp1252_quotes = parse_query("\udc93quoted\udc94")  # \x93 \x94: curly quotes, then straight
    assert (cp1252_quotes.text, cp1252_quotes.node) == ('"quoted"', Phrase("quoted", 0))
    assert len(cp1252_quotes.notes) == 2  # bytes as Windows-1252, curly quotes as straight
    assert parse_query("\udc81").text == "\x81"  # undefined in cp1252: Latin-1's
    assert parse_query("smile \ud83d").node == Or((Term("smile", 0), Term("\ufffd", 6)), words=True)


# -- the same language as the reference reading ------------------------------------------------


def reference_tokenize(text: str) -> list[Token]:
    """The lexer read straight from its rules: a word is scanned again from each ``(``
    that does not close in it (quadratic in such a word)."""
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
        elif char in "()":
            tokens.append(Token("lparen" if char == "(" else "rparen", char, i))
            i += 1
        elif char == "[":
            i = _read_tag(text, i, tokens)
        else:
            i = reference_read_word(text, i, tokens)
    return tokens


def reference_read_word(text: str, start: int, tokens: list[Token]) -> int:
    i, n = start, len(text)
    depth = 0
    first_open = -1
    while i < n:
        char = text[i]
        if char.isspace() or char == '"':
            break
        if char == "(":
            if depth == 0:
                first_open = i
            depth += 1
        elif char == ")":
            if depth == 0:
                break
            depth -= 1
        elif char == "[":
            close = text.find("]", i + 1)
            glued = close >= 0 and close + 1 < n and text[close + 1].isalnum()
            if close < 0 or canonical_tag(text[i + 1 : close]) is not None or not glued:
                break
            i = close
        i += 1
    if depth > 0:
        i = first_open
    word = text[start:i]
    tokens.append(Token(OPERATORS.get(word, "word"), word, start))
    return i


class ReferenceParser(_Parser):
    """The grammar read straight: each word looks ahead over the rest of its run for a
    tag, each operator copies the operands so far, and every tag is applied."""

    def expr(self, depth: int) -> Node:
        first = self.peek()
        if first is not None and first.kind in ("and", "or"):
            raise QuerySyntaxError(f"nothing before {first.text} at {first.pos}", first.pos)
        left = self.seq(depth)
        while (op := self.peek()) is not None and op.kind in ("and", "or", "not"):
            self.take()
            nxt = self.peek()
            if nxt is None or nxt.kind in ("rparen", "and", "or"):
                raise QuerySyntaxError(f"nothing after {op.text} at {op.pos}", op.pos)
            right = self.seq(depth)
            if op.kind == "or":
                left = Or((*_flat(left, Or), *_flat(right, Or)))
            else:
                right = Not(right) if op.kind == "not" else right
                left = And((*_flat(left, And), *_flat(right, And)))
        return left

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
            node = self.expr(depth + 1)
            close = self.peek()
            if close is None or close.kind != "rparen":
                raise QuerySyntaxError(f"unclosed parenthesis at {token.pos}", token.pos)
            self.take()
        elif token.kind == "phrase":
            node = _phrase(token)  # "heart attack*" truncates its last word
        else:
            node = self.tagged_run(token)
            if self.set_query and isinstance(node, Term) and not any(map(str.isalnum, node.text)):
                raise QuerySyntaxError(f"stray '{token.text}' at {token.pos}", token.pos)
        first = True
        while (tag := self.peek()) is not None and tag.kind == "tag":
            self.take()
            if first:  # the first tag wins; the ones after it are ignored (with a note)
                node = apply_tag(tag.text, node, tag.pos)
            first = False
        return node

    def tagged_run(self, token: Token) -> Node:
        words = [token]
        while (nxt := self.peek()) is not None and nxt.kind == "word":
            ahead = 0
            while (t := self.peek(ahead)) is not None and t.kind == "word":
                ahead += 1
            after = self.peek(ahead)
            if after is None or after.kind != "tag":
                break
            words.extend(self.take() for _ in range(ahead))
        if len(words) == 1:
            return _word(token)
        tag = self.peek()
        if tag is not None and tag.text in WHOLE_VALUE_TAGS:
            return Phrase(" ".join(w.text for w in words), token.pos)
        return _run_phrase(words)  # a text tag searches the run as a phrase, as PubMed does


def reference_parse(text: str) -> ParsedQuery:
    tokens = reference_tokenize(text)
    check_ovid(tokens)  # the readings refused before parsing: shared, not re-derived
    parser = ReferenceParser(tokens)
    check_words(tokens, parser.run_ends, set_query=parser.set_query)
    node, filters = lift_filters(parser.parse())
    return ParsedQuery(text=text, node=node, filters=filters, set_query=parser.set_query)


def outcome(parse: Callable[[str], object], text: str) -> object:
    """What ``parse(text)`` gives: the plan (without its notes), or the error's problem
    and position."""
    try:
        result = parse(text)
    except QuerySyntaxError as err:
        return ("error", err.problem, err.position)
    return replace(result, notes=()) if isinstance(result, ParsedQuery) else result


# Words, phrases, operators, tags (good and bad values) and groups, separated by spaces.
QUERY_TOKENS = st.sampled_from(
    ["a", "b", "smith", "ja", "review", "french", "2015", "2015:2020", "abc*", "ab*", "NOT",
     "AND", "OR", "(", ")", "[ti]", "[au]", "[dp]", "[pt]", "[la]", "[pmid]", "[mh]", '"x y"',
     '"', "and", "[tiab:~2]", '"x yyyy*"']
)  # fmt: skip
# Pieces glued without spaces: names with brackets and parentheses, and broken ones.
WORD_PIECES = st.sampled_from(["x", "2A", "(", "(", ")", ")", "[", "]", "[a]", "[ti]", " ", "AND"])


@settings(max_examples=400, deadline=None)
@given(st.lists(QUERY_TOKENS, max_size=24).map(" ".join))
def test_token_sequences_parse_as_the_reference_reads_them(text: str) -> None:
    assert outcome(parse_query, text) == outcome(reference_parse, text)


@settings(max_examples=400, deadline=None)
@given(st.lists(WORD_PIECES, max_size=30).map("".join))
@example("a((b)c")  # a pair that closes inside a "(" left open
@example("x(y(z)w(v")
@example("a((b)[x]y")  # a name's bracket right after "(": an unknown tag
@example('a(b "c)d" e(f')
def test_glued_brackets_and_parentheses_tokenize_as_the_reference_reads_them(text: str) -> None:
    assert outcome(tokenize, text) == outcome(reference_tokenize, text)
    assert outcome(parse_query, text) == outcome(reference_parse, text)


# -- any text: a plan or a syntax error ----------------------------------------------------------

ANY_TEXT = st.lists(
    st.one_of(
        st.sampled_from(
            ["(", ")", "[", "]", '"', "*", ":", " ", "AND", "OR", "NOT", "[ti]", "[dp]",
             "[la]", "[pmid]", "[au]", "2015", "x", "α", "\x00", "\x1b", "\n", "\udce9",
             "\ud83d", "é", "١٢"]
        ),
        st.characters(codec=None, exclude_categories=()),  # surrogates and controls too
    ),
    max_size=60,
).map("".join)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT)
def test_any_text_gives_an_encodable_plan_or_a_syntax_error(text: str) -> None:
    try:
        parsed = parse_query(text)
    except QuerySyntaxError as err:
        assert str(err) and err.position is not None
        return
    assert isinstance(parsed, ParsedQuery)
    parsed.text.encode("utf-8")  # what tantivy, tokenizers and JSON will need
    assert len(parsed.text) == len(text)


# -- through the command line and the TUI ------------------------------------------------------

CAFE_PMID = 31


@pytest.fixture(scope="module")
def corpus_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("query-corpus")
    xml = root / "xml"
    xml.mkdir()
    articles = [
        article_xml(CAFE_PMID, "Café au lait macules in neurofibromatosis type 1", "Skin."),
        article_xml(32, "Interleukin-6 blockade with tocilizumab in severe COVID-19", PAPER),
        article_xml(33, "Corticosteroid use and mortality at 28 days", "Adjustment."),
    ]
    pubmed_file(xml / "pubmed26n0001.xml", articles)
    home = root / "home"
    with Ingestor(Paths(home), jobs=0) as ingestor:
        ingestor.run([xml])
    return home


def medsearch(home: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The real command line in its own process: argv bytes reach Python as the OS
    hands them over (CliRunner cannot produce a surrogate-escaped argument)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-c", "from medsearch.cli import main; main()", "--home", home, *args],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
        check=False,
    )


def test_a_byte_that_is_not_utf8_is_read_as_windows_1252_and_searched(
    corpus_home: Path,
) -> None:
    run = medsearch(corpus_home, "search", b"caf\xe9", "--json")
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["query"] == "café"
    assert [h["pmid"] for h in answer["hits"]] == [CAFE_PMID]

    run = medsearch(corpus_home, "search", b"\xe9t\xe9[la]", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["query"] == "été[la]"


def test_too_deep_parentheses_are_named_shown_and_exit_2(corpus_home: Path) -> None:
    run = medsearch(corpus_home, "search", "(" * 400 + "stroke" + ")" * 400)
    assert run.returncode == 2
    line, window, caret = run.stderr.decode().splitlines()
    assert line == f"medsearch: error: parentheses nested more than {MAX_NESTING} deep at 100"
    assert window == "  ..." + "(" * 72 + "..."  # a window of the 806 characters
    assert caret == "  " + " " * (3 + 36) + "^"


def test_a_pasted_paper_is_searched_end_to_end_at_once(corpus_home: Path) -> None:
    text = pasted_paper(100_000)
    start = time.perf_counter()
    with open_searcher(Paths(corpus_home)) as searcher:
        result = searcher.search(text, k=3)
    assert time.perf_counter() - start < GENEROUS_SECONDS
    assert result.hits[0].pmid == 32


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_the_tui_says_what_is_wrong_with_too_deep_parentheses(
    corpus_home: Path, tmp_path: Path
) -> None:
    home = tmp_path / "corpus"
    shutil.copytree(corpus_home, home)
    app = MedsearchApp(Paths(home))
    async with app.run_test(size=(120, 40)) as pilot:
        for query in ("(" * 400 + "stroke" + ")" * 400, "café"):
            await app.workers.wait_for_complete()
            bar = app.screen.query_one(SearchBar)
            bar.focus()
            bar.value = query
            await pilot.press("enter")
            await app.workers.wait_for_complete()
            await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert [e.splitlines()[0] for e in errors] == [
            f"parentheses nested more than {MAX_NESTING} deep at 100"
        ]
        assert [h.pmid for h in app.screen.query_one(ResultsList).hits] == [CAFE_PMID]
