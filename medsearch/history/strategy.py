"""A search strategy from a file: PubMed-style numbered lines, each counted and recorded.

A reviewer's strategy is a list of numbered searches combined by number, as PubMed's
Advanced search builds it (https://pubmed.ncbi.nlm.nih.gov/help/#history: ``#1``,
``#2``, then ``#1 AND #2``) and as protocols print it::

    #1 cataract[tiab] OR "lens opacity"[tiab]
    #2 "Cataract"[mh]
    #3 #1 OR #2
    #4 #3 AND 2015:2020[dp]

A line is labelled ``#N`` (or ``N.``, ``N)``) before its query; a line without a label
takes the number after the previous one (so a file of plain lines is numbered in order,
and ``#3 AND #5`` alone on a line is a search, not line 3). Blank lines are skipped.
Inside the file ``#N`` means the file's line N, as on PubMed's page; each line is
searched with the lines it names expanded, counted, and recorded in the history under
its own new ``#N``, typed with the history's numbers, so ``#N`` works afterwards.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from medsearch.errors import HomeError, QuerySyntaxError, UsageError
from medsearch.history.recording import record_search
from medsearch.paths import Paths
from medsearch.query.printer import format_query
from medsearch.records import Filters

if TYPE_CHECKING:
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher

_LABEL = re.compile(r"^\s*(?:#\s*(\d+)|(\d+)\s*[.)])\s+(.*\S)\s*$")
_OPERATOR = re.compile(r"(?i)(?:AND|OR|NOT)\b")
_REFERENCE = re.compile(r"#(\d+)\b")


@dataclass(frozen=True, slots=True)
class StrategyLine:
    """One search of the file: its number there and its query as written."""

    number: int
    query: str
    row: int
    """The line of the file it was read from (1-based), for error messages."""


def read_strategy(text: str) -> list[StrategyLine]:
    """The numbered searches of a strategy file (see the module docstring)."""
    out: list[StrategyLine] = []
    for row, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        label = _LABEL.match(raw)
        number = out[-1].number + 1 if out else 1
        query = raw.strip()
        if label is not None and not _OPERATOR.match(label.group(3)):
            number = int(label.group(1) or label.group(2))
            query = label.group(3)
        if out and number <= out[-1].number:
            raise UsageError(
                f"strategy line {row}: #{number} does not follow #{out[-1].number};"
                " number the searches in increasing order"
            )
        out.append(StrategyLine(number, query, row))
    if not out:
        raise UsageError("the strategy file holds no search")
    return out


@dataclass(frozen=True, slots=True)
class StrategyRow:
    """One line of the strategy as run: its count and its new history number."""

    line: StrategyLine
    result: SearchResult
    number: int | None
    """Its ``#N`` in the history (None in a read-only home)."""
    typed: str
    """The query as recorded: the file's ``#N`` rewritten to the history's numbers."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line.number,
            "number": self.number,
            "query": self.line.query,
            "recorded_as": self.typed,
            "query_as_run": self.result.translation or _as_read(self.result),
            "count": self.result.total,
            "counted": self.result.counted,
            "notes": list(self.result.notes),
        }


def run_strategy(
    paths: Paths,
    searcher: Searcher,
    lines: list[StrategyLine],
    *,
    filters: Filters,
    mode: str | None,
    notes: list[str],
) -> list[StrategyRow]:
    """Search, count and record each line in order; ``#N`` names the file's lines."""
    as_read: dict[int, str] = {}
    recorded: dict[int, int] = {}
    rows: list[StrategyRow] = []
    for line in lines:
        resolve = _file_resolver(line, as_read)
        try:
            result = searcher.search(
                line.query,
                mode=mode or "lexical",
                k=1,
                filters=filters,
                rerank="none",
                snippets=False,
                history=resolve,
            )
        except QuerySyntaxError as exc:
            raise QuerySyntaxError(
                f"strategy line {line.row} (#{line.number}): {exc.problem}",
                exc.position,
                shown=exc.shown,
            ) from None
        typed = line.query
        if all(int(n) in recorded for n in _REFERENCE.findall(line.query)):
            typed = _REFERENCE.sub(lambda m: f"#{recorded[int(m.group(1))]}", line.query)
        number = None
        try:
            number = record_search(paths, searcher, typed, result)
        except HomeError as exc:  # the count stands; the note says what was not kept
            notes.append(f"#{line.number} not recorded in the history: {exc}")
        if number is not None:
            recorded[line.number] = number
        as_read[line.number] = _as_read(result)
        rows.append(StrategyRow(line, result, number, typed))
    return rows


def _file_resolver(line: StrategyLine, as_read: dict[int, str]) -> Callable[[int], str]:
    def resolve(number: int) -> str:
        if number not in as_read:
            raise QuerySyntaxError(
                f"#{number} is not an earlier line of the strategy file"
                f" (line {line.row} is #{line.number})"
            )
        return as_read[number]

    return resolve


def _as_read(result: SearchResult) -> str:
    assert result.plan is not None, "a search's result carries its plan"
    return format_query(result.plan.as_read)


def strategy_text(rows: list[StrategyRow]) -> str:
    """The lines as PubMed's Advanced page lists its history: search, results, query
    (with the history number each was recorded as)."""
    out = [f"{'Search':<8}{'History':<9}{'Results':>12}  Query"]
    for row in rows:
        history = f"#{row.number}" if row.number is not None else "-"
        out.append(f"#{row.line.number:<7}{history:<9}{row.result.total:>12,}  {row.line.query}")
    return "\n".join(out)
