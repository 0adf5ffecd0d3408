"""The user's own relevance signals: articles opened, marked, exported or cited for a query.

One JSON object per line in ``signals.jsonl`` in the data home, appended as the user
works (the TUI, or ``medsearch mark`` from scripts), read by ``medsearch rerank train``
and deleted by ``medsearch mark --clear``. Nothing leaves the machine. A line that
cannot be read (a crash mid-write) is skipped, never fatal.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from medsearch.errors import UsageError

SIGNALS = {"opened": 30.0, "marked": 60.0, "exported": 80.0, "cited": 100.0}
"""Each signal's scaled relevance (the paper's srel, 0-100): a citation says most."""


@dataclass(frozen=True, slots=True)
class Mark:
    query: str
    pmid: int
    signal: str
    time: float = 0.0

    @property
    def relevance(self) -> float:
        return SIGNALS[self.signal]


def record(path: Path, query: str, pmids: Iterable[int], signal: str) -> int:
    """Append one mark per PMID; returns how many were written."""
    if signal not in SIGNALS:
        raise UsageError(f"unknown signal {signal!r}; choose one of {', '.join(SIGNALS)}")
    query = " ".join(query.split())
    if not query:
        raise UsageError("a mark needs the query it answers (--query)")
    now = time.time()
    lines = [
        json.dumps({"query": query, "pmid": int(p), "signal": signal, "time": round(now, 3)})
        for p in pmids
    ]
    if not lines:
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as out:
        out.seek(0, 2)
        torn = out.tell() > 0 and (out.seek(-1, 2), out.read(1))[1] != b"\n"
        # a line torn by a crash stays a line of its own, and is skipped when read
        out.write(("\n" if torn else "").encode() + ("\n".join(lines) + "\n").encode())
    return len(lines)


def read(path: Path) -> Iterator[Mark]:
    if not path.exists():
        return
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                raw = json.loads(line)
                mark = Mark(
                    query=str(raw["query"]),
                    pmid=int(raw["pmid"]),
                    signal=str(raw["signal"]),
                    time=float(raw.get("time", 0.0)),
                )
            except (ValueError, KeyError, TypeError):
                continue
            if mark.signal in SIGNALS and mark.query:
                yield mark


def by_query(marks: Iterable[Mark]) -> dict[str, dict[int, float]]:
    """Each query's marked PMIDs with the strongest signal each received."""
    out: dict[str, dict[int, float]] = {}
    for m in marks:
        best = out.setdefault(m.query, {})
        best[m.pmid] = max(best.get(m.pmid, 0.0), m.relevance)
    return out


def clear(path: Path) -> int:
    """Delete the log; returns how many marks it held."""
    if not path.exists():
        return 0
    count = sum(1 for _ in read(path))
    path.unlink()
    return count
