"""A corpus of 120 real published search strategies (tests/data/strategies) read as typed.

Every line either runs, with a note for each reading that differs from the text, or is
refused with a position: none crashes, none falls back to plain words, none is changed
without a word. Pasted Ovid strategies are refused with the Ovid form named. The parse
runs on every line; the search path (lexical, count only) on a home of real PubMed
records, built once.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from medsearch.errors import QuerySyntaxError, UsageError
from medsearch.history.strategy import read_strategy, run_strategy
from medsearch.paths import Paths
from medsearch.query import ParsedQuery, parse_query
from medsearch.query.normalize import CURLY_DOUBLE
from medsearch.records import Filters
from medsearch.retrieval.searcher import Searcher, open_searcher
from tests.conftest import shared_data

CORPUS = Path(__file__).resolve().parent / "data" / "strategies" / "strategies.jsonl"
STRATEGIES = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
PUBMED = [s for s in STRATEGIES if s["syntax"] == "pubmed"]
OVID = [s for s in STRATEGIES if s["syntax"] == "ovid"]
_SECOND_TAG = re.compile(r"\]\s*\[")


def history_of(seen: dict[int, str]) -> Callable[[int], str]:
    """``#N`` -> line N's query as run, as PubMed's history holds it."""

    def resolve(number: int) -> str:
        if number not in seen:
            raise QuerySyntaxError(f"no search #{number} in the history (see: medsearch history)")
        return seen[number]

    return resolve


def read_lines(strategy: dict) -> Iterator[tuple[str, ParsedQuery | QuerySyntaxError]]:
    """Each line of ``strategy`` and how it reads: parsed, or the error."""
    seen: dict[int, str] = {}
    for number, text in strategy["lines"]:
        try:
            parsed: ParsedQuery | QuerySyntaxError = parse_query(text, history=history_of(seen))
        except QuerySyntaxError as error:
            parsed = error
        if number is not None and isinstance(parsed, ParsedQuery):
            seen[number] = parsed.text
        yield text, parsed


def assert_read_as_typed_or_refused(text: str, read: ParsedQuery | QuerySyntaxError) -> None:
    if isinstance(read, QuerySyntaxError):
        # the position is the error's (the caret shows it); "#N" lines name the search
        assert read.position is not None
        assert f"at {read.position}" in read.problem or read.problem.startswith("no search #")
        assert read.shown.splitlines()[1].strip() == "^"
        return
    notes = " ".join(read.notes)
    if any(c in text for c in CURLY_DOUBLE):
        assert "curly quotes" in notes, text
    if _SECOND_TAG.search(text):
        assert "ignored" in notes, text


def test_the_corpus_holds_100_pubmed_strategies_each_with_its_source() -> None:
    assert len(PUBMED) >= 100 and len(OVID) >= 20
    assert all(s["source"] and s["lines"] for s in STRATEGIES)
    assert len({s["id"] for s in STRATEGIES}) == len(STRATEGIES)


def test_every_line_reads_as_typed_with_notes_or_is_refused_at_a_position() -> None:
    ran = refused = 0
    for strategy in STRATEGIES:
        for text, read in read_lines(strategy):
            assert_read_as_typed_or_refused(text, read)
            ran += isinstance(read, ParsedQuery)
            refused += isinstance(read, QuerySyntaxError)
    assert ran > 250 and refused > 0  # most run; the Ovid ones and PubMed's slips do not


def test_a_pasted_ovid_strategy_is_refused_naming_ovid() -> None:
    """Each is refused; all but one by name (sigir2017-ovid-8 wraps its Ovid lines in
    square brackets, refused as an unknown field tag)."""
    named = 0
    for strategy in OVID:
        problems = [r.problem for _, r in read_lines(strategy) if isinstance(r, QuerySyntaxError)]
        assert problems, strategy["id"]
        named += any(p.startswith("Ovid's") for p in problems)
    assert named >= len(OVID) - 1


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searcher]:
    from ingest.pipeline import Ingestor

    source = shared_data("pubmed", "net-synergy-pubmedparser", "pubmed21n0001.xml.gz")
    paths = Paths(tmp_path_factory.mktemp("strategies") / "home")
    with Ingestor(paths, jobs=0) as ingestor:
        assert ingestor.run([source]).ok
    with open_searcher(paths) as opened:
        yield opened


def as_file(strategy: dict) -> str:
    """The strategy as a user saves it for ``medsearch search --file``: one line each,
    labelled ``#N`` where the source numbered it."""
    return "\n".join(f"#{n} {text}" if n is not None else text for n, text in strategy["lines"])


@pytest.mark.thorough
def test_every_pubmed_strategy_runs_as_a_file_on_real_records_or_is_refused(
    searcher: Searcher, tmp_path: Path
) -> None:
    """Each PubMed strategy as ``search --file`` runs it (history/strategy.py: ``#N`` is
    the file's own line N; every line counted and recorded): it runs whole, every line
    with its notes and none read as plain words, or it stops at the first line refused,
    with the position shown. The tally is the one tests/data/strategies/README.md and
    docs/query-language.md give."""
    paths = Paths(tmp_path / "home")
    paths.home.mkdir(parents=True)
    whole = lines_run = 0
    refused: Counter[str] = Counter()
    for strategy in PUBMED:
        try:
            lines = read_strategy(as_file(strategy))
            rows = run_strategy(
                paths, searcher, lines, filters=Filters(), mode=None, notes=[]
            )  # fmt: skip
        except QuerySyntaxError as error:
            assert error.position is not None and error.shown, strategy["id"]
            assert error.problem.startswith("strategy line "), error.problem
            refused[_cause(error.problem)] += 1
            continue
        except UsageError as error:  # PubMed's history order (newest first), pasted
            assert "number the searches in increasing order" in str(error)
            refused["numbered newest first"] += 1
            continue
        whole += 1
        lines_run += len(rows)
        assert [row.line.number for row in rows] == [line.number for line in lines]
        for row in rows:
            assert row.result.total >= 0
            assert not any(n.startswith("read as plain words") for n in row.result.notes)
        for row, (text, read) in zip(rows, read_lines(strategy), strict=True):
            if isinstance(read, ParsedQuery):  # the file's #N read as the line it names
                assert set(read.notes) <= set(row.result.notes), text
    assert (whole, lines_run) == (66, 142)
    assert refused == {
        "lower-case operator": 21,
        "short truncation": 4,
        "unbalanced parentheses": 3,
        "lone '*'": 2,
        "numbered newest first": 2,
        "unknown [sb] subset": 1,
        "Ovid form": 1,
    }, refused


def _cause(problem: str) -> str:
    """The kind of refusal, as the README tallies them."""
    kinds = {
        "lower-case '": "lower-case operator",
        "truncated word": "short truncation",
        "parenthesis": "unbalanced parentheses",
        "standing alone": "lone '*'",
        "unknown subset": "unknown [sb] subset",
        "Ovid's": "Ovid form",
    }
    return next((kind for key, kind in kinds.items() if key in problem), problem)
