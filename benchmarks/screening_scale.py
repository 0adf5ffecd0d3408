"""Screening at scale: opening a 100,000-record project, and the time from a decision to
the next record on a 10,000-record one while the model refits in the background.

Records are synthetic (Zipf-distributed words from a 20,000-word vocabulary, 150-word
abstracts, 3% relevant); what is timed is the real path: ``Project.open`` +
``Session`` (reads the decisions, starts the ranker) + the first ``next()``, then for
each decision ``Session.decide`` (a committed, fsynced row) + ``Session.next``.

    python -m benchmarks.screening_scale --records 100000 --latency-records 10000
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from medsearch.screening.items import Item
from medsearch.screening.project import Project, Strategy
from medsearch.screening.session import Session


def synthetic(n: int, seed: int = 0) -> tuple[list[Item], np.ndarray]:
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{i}" for i in range(20_000)])
    relevant = rng.random(n) < 0.03
    items = []
    for i in range(n):
        words = vocabulary[np.minimum(rng.zipf(1.3, 160), 19_999)]
        if relevant[i]:
            words[:8] = ["statin", "ldl", "trial", "cholesterol", "w5", "w7", "w11", "w13"]
        items.append(Item(title=" ".join(words[:10]), abstract=" ".join(words[10:]), row=i + 1))
    return items, relevant.astype(int)


def build(folder: Path, name: str, n: int) -> np.ndarray:
    items, labels = synthetic(n)
    with Project.create(folder, name) as project:
        project.add(items, Strategy("synthetic"))
    return labels


def open_time(folder: Path, name: str) -> float:
    start = time.perf_counter()
    project = Project.open(folder, name)
    session = Session(project)
    session.next()
    elapsed = time.perf_counter() - start
    session.close()
    project.close()
    return elapsed


def latency(folder: Path, name: str, labels: np.ndarray, decisions: int) -> dict[str, float]:
    project = Project.open(folder, name)
    session = Session(project)
    times = []
    record = session.next()
    for _ in range(decisions):
        assert record is not None
        start = time.perf_counter()
        kind = "include" if labels[record - 1] else "exclude"
        session.decide(record, kind)
        record = session.next()
        times.append(time.perf_counter() - start)
        time.sleep(0.3)  # a reviewer reads for longer; the model refits meanwhile
    fits = session.ranker.fits
    session.close()
    project.close()
    ms = sorted(t * 1000 for t in times)
    return {
        "p50_ms": statistics.median(ms),
        "p95_ms": ms[int(0.95 * (len(ms) - 1))],
        "max_ms": ms[-1],
        "fits": fits,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--latency-records", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder, "big", args.records)
        opened = open_time(folder, "big")
        labels = build(folder, "mid", args.latency_records)
        lat = latency(folder, "mid", labels, args.decisions)
    print(json.dumps({"records": args.records, "open_s": round(opened, 3),
                      "latency_records": args.latency_records, **lat}, indent=1))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
