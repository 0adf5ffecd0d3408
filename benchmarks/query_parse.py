"""Parsing long query text: a pasted paper must parse in time linear in its length.

    python benchmarks/query_parse.py [--sizes words:8000,words:16000,chars:100000,chars:1000000]

Text: the words of real abstracts (BEIR SciFact from ../shared/data, else a fixed
synthetic vocabulary), joined until the size asked for is reached; operator words
(upper-case ``AND``/``OR``/``NOT``) are left out so that the text is one run of plain
words, the case a pasted paragraph is. ``nested:N`` is ``x(`` repeated N times, the
lexer's own worst case (a word whose ``(`` never closes).

Prints, per size, the seconds ``parse_query`` takes and the ratio against the reference
measured in the same run on the same text: ``re.findall(r"\\S+", text)``, a C-speed pass
that any parse must at least match in order. A linear parser keeps the ratio flat as the
size grows; a quadratic one multiplies it by the size.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[0] = str(REPO)  # not benchmarks/: its ingest.py would shadow the ingest package

from medsearch.errors import QuerySyntaxError  # noqa: E402 - needs the path set above

SCIFACT = REPO.parent / "shared/data/beir/scifact/corpus.jsonl"
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")
OPERATORS = {"AND", "OR", "NOT"}


def words() -> Iterator[str]:
    """Real abstract words, forever (the corpus again from its start when it runs out)."""
    while True:
        if SCIFACT.exists():
            with SCIFACT.open(encoding="utf-8") as lines:
                for line in lines:
                    doc = json.loads(line)
                    for word in _WORD.findall(f"{doc['title']} {doc['text']}"):
                        if word not in OPERATORS:
                            yield word
        else:
            yield from ("aspirin", "stroke", "prevention", "IL-6", "covid19", "trial")


def text_of(size: str) -> str:
    kind, _, amount = size.partition(":")
    n = int(amount)
    if kind == "nested":
        return "x(" * n
    out: list[str] = []
    length = 0
    for count, word in enumerate(words()):
        if (kind == "words" and count >= n) or (kind == "chars" and length >= n):
            break
        out.append(word)
        length += len(word) + 1
    text = " ".join(out)
    return text[:n] if kind == "chars" else text


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    try:
        fn()
    except (QuerySyntaxError, RecursionError) as exc:  # it still took the time to find
        print(f"  ({type(exc).__name__}: {str(exc)[:60]})")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sizes", default="words:8000,words:16000,chars:100000,chars:1000000,nested:50000"
    )
    args = parser.parse_args()
    from medsearch.query import parse_query

    for size in args.sizes.split(","):
        text = text_of(size)
        reference = min(timed(partial(re.findall, r"\S+", text)) for _ in range(3))
        seconds = timed(partial(parse_query, text))
        print(
            f"{size:>16}  {len(text):>9,} chars  parse {seconds:8.3f} s"
            f"  x{seconds / max(reference, 1e-9):,.0f} of the split",
            flush=True,
        )


if __name__ == "__main__":
    main()
