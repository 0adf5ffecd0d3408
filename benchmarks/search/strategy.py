"""Parse + plan of a long real strategy: the text a librarian pastes, read once.

The strategy is built from the corpus of real published PubMed strategies
(``tests/data/strategies``): whole strategies that run, each in parentheses, joined by OR
until ``--chars`` characters (10,000 by default; the issue's budget is 50 ms for that).
Timed: ``parse_query`` (lexer, Ovid and lower-case checks, grammar, filters, notes) and
``plan_query``, best of ``--repeat`` runs; the lexer alone on the same text is timed in
the same run as the reference for the ratio.

    python -m benchmarks.search strategy [--chars 10000] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from medsearch.errors import QuerySyntaxError
from medsearch.query.lexer import tokenize
from medsearch.query.normalize import straighten_quotes
from medsearch.query.parser import parse_query
from medsearch.retrieval.sets import plan_query

CORPUS = Path(__file__).resolve().parents[2] / "tests" / "data" / "strategies" / "strategies.jsonl"
BUDGET_MS = 50.0


def long_strategy(chars: int) -> tuple[str, int]:
    """Whole real strategies that parse, ``(s1) OR (s2) ...``, to at least ``chars``
    characters (cycled if the corpus runs out), and how many were joined."""
    runnable: list[str] = []
    for line in CORPUS.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["syntax"] != "pubmed" or len(row["lines"]) != 1:
            continue
        text = row["lines"][0][1]
        try:
            parse_query(text)
        except QuerySyntaxError:
            continue
        runnable.append(f"({text})")
    joined: list[str] = []
    length = 0
    while length < chars:
        piece = runnable[len(joined) % len(runnable)]
        joined.append(piece)
        length += len(piece) + 4
    return " OR ".join(joined), len(joined)


def best(call: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    text, pieces = long_strategy(args.chars)
    parsed = parse_query(text)
    clauses = text.count("[")
    whole = best(lambda: plan_query(parse_query(text)), args.repeat)
    straight = straighten_quotes(text)[0]  # the lexer reads the text with quotes made straight
    lexer = best(lambda: tokenize(straight), args.repeat)
    print(
        f"strategy: {len(text):,} characters, {pieces} real strategies, {clauses} tagged"
        f" terms, {len(parsed.notes)} note(s)"
    )
    print(f"parse + plan: {whole * 1000:.1f} ms (budget {BUDGET_MS:.0f} ms)")
    print(f"lexer alone (reference, same run): {lexer * 1000:.1f} ms; ratio {whole / lexer:.1f}x")


if __name__ == "__main__":
    main()
