"""What checking a MeSH translation adds to recording a search in the history.

With MeSH installed, a history line keeps the translation that ran, and whether it reads
back as that query (:func:`medsearch.history.recording.reads_back`: a parse and a print).
This times that check against the reference measured in the same run: reading the typed
query into the query as read (``parse_query`` and ``format_query``), which every
recording already does. Both are pure CPU, independent of the corpus size: the same at
40.9M articles as here.

The queries are review-style: ``--terms`` untagged words, each mapped to a heading as
automatic term mapping prints it (``("Heading"[MeSH Terms] OR word)``), in OR-groups of
four ANDed together, with a date range.

    python -m benchmarks.history_translation --terms 4 16 64 --repeat 2000
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from medsearch.history.entries import reads_back
from medsearch.query.parser import parse_query
from medsearch.query.printer import format_query


def queries(terms: int) -> tuple[str, str]:
    """A typed query of ``terms`` words and its translation."""
    words = [f"word{i}" for i in range(terms)]
    groups = [words[i : i + 4] for i in range(0, terms, 4)]
    typed = " AND ".join("(" + " OR ".join(g) + ")" for g in groups) + " AND 2015:2020[dp]"

    def mapped(word: str) -> str:
        return f'("Heading {word}"[MeSH Terms] OR {word})'

    translation = " AND ".join("(" + " OR ".join(map(mapped, g)) + ")" for g in groups)
    return typed, translation + " AND 2015:2020[dp]"


def per_call(fn: Callable[[], object], repeat: int) -> float:
    """Median of five runs of ``repeat`` calls, microseconds a call."""
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        runs.append((time.perf_counter() - t0) / repeat * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terms", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'words':>5} {'chars':>6} {'read typed us':>14} {'reads_back us':>14} {'ratio':>6}")
    for terms in args.terms:
        typed, translation = queries(terms)
        assert reads_back(translation), translation
        reference = per_call(lambda typed=typed: format_query(parse_query(typed)), args.repeat)
        check = per_call(lambda t=translation: reads_back(t), args.repeat)
        print(
            f"{terms:>5} {len(translation):>6} {reference:>14.1f} {check:>14.1f}"
            f" {check / reference:>6.2f}"
        )


if __name__ == "__main__":
    main()
