"""Screening simulations side by side with ASReview, on labelled public data sets.

ASReview's protocol: for each data set and seed, one relevant and one irrelevant record
drawn at random (the same two for both tools: :func:`random_priors` picks them and
ASReview gets them as ``--prior-idx``), then the whole screening simulated. Both orders
are scored by :mod:`medsearch.screening.metrics` (asreview-insights' definitions; the
records ASReview never reached after the last relevant one count as screened last,
which no metric here depends on). ASReview runs from its own virtual environment
(``--asreview /path/to/venv/bin/asreview``; ``pip install asreview`` there, never into
medsearch's), with its default model (``elas_u4`` in ASReview 2: TF-IDF, a linear SVM,
the maximum query, balanced). Without ``--asreview`` only medsearch runs.

The data sets: ASReview's data set CSVs (``title``, ``abstract``, ``label_included``),
for example the Cohen et al. (2006) drug reviews in the ``asreview/synergy-dataset``
history (``datasets/Cohen_2006/output/online/*.csv``).

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.screening DATA/*.csv --seeds 10 \
        --asreview /tmp/asr-venv/bin/asreview --json out.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.screening import metrics
from medsearch.screening.features import tfidf
from medsearch.screening.readers import read_file
from medsearch.screening.simulate import random_priors, simulate


def scores(labels_in_order: np.ndarray) -> dict[str, float]:
    return {
        "loss": metrics.loss(labels_in_order),
        "wss95": metrics.wss(labels_in_order, 0.95),
        "recall10": metrics.recall_at(labels_in_order, 0.10),
    }


def ours(matrix: Any, labels: np.ndarray, priors: list[int], model: str) -> dict[str, Any]:
    start = time.process_time()
    run = simulate(matrix, labels, priors, model=model)
    y = np.asarray(run.labels)
    total = int(y.sum())
    out: dict[str, Any] = scores(y)
    out["cpu_s"] = time.process_time() - start
    out["stop_at"] = run.stop_at
    out["stop_recall"] = None if run.stop_at is None else float(y[: run.stop_at].sum() / total)
    out["knee_at"] = run.knee_at
    out["knee_recall"] = None if run.knee_at is None else float(y[: run.knee_at].sum() / total)
    out["last_relevant"] = metrics.last_relevant(y)
    return out


def asreview(
    binary: str, texts: list[tuple[str, str]], labels: np.ndarray, priors: list[int], seed: int
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data.csv"
        with data.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("title", "abstract", "label_included"))
            for (title, abstract), label in zip(texts, labels, strict=True):
                writer.writerow((title, abstract, int(label)))
        project = Path(tmp) / "sim.asreview"
        start = time.perf_counter()
        subprocess.run(
            [binary, "simulate", str(data), "-o", str(project), "--seed", str(seed),
             "--prior-idx", *(str(p) for p in priors)],
            check=True, capture_output=True,
        )  # fmt: skip
        wall = time.perf_counter() - start
        order = _asreview_order(project, Path(tmp))
    seen = set(order)
    order += [i for i in range(len(labels)) if i not in seen]
    out: dict[str, Any] = scores(labels[np.asarray(order)])
    out["wall_s"] = wall
    return out


def _asreview_order(project: Path, tmp: Path) -> list[int]:
    with zipfile.ZipFile(project) as archive:
        name = next(n for n in archive.namelist() if n.endswith("results.db"))
        archive.extract(name, tmp)
    conn = sqlite3.connect(tmp / name)
    try:
        rows = conn.execute("SELECT record_id FROM results ORDER BY rowid").fetchall()
    finally:
        conn.close()
    return [int(r[0]) for r in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", type=Path)
    parser.add_argument(
        "--table", nargs="+", type=Path, default=None, help="Print reports as Markdown."
    )
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--asreview-seeds", type=int, default=None)
    parser.add_argument("--model", default="logistic")
    parser.add_argument(
        "--features",
        choices=("default", "previous"),
        default="default",
        help="default: elas_u4's TF-IDF (min_df 1, max_df 0.95, stop words kept); "
        "previous: min_df 2, stop words out (the first release's)",
    )
    parser.add_argument("--asreview", default=None, help="ASReview's executable.")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.table:
        rows = [r for path in args.table for r in json.loads(path.read_text(encoding="utf-8"))]
        print(table(rows))
        return 0
    report: list[dict[str, Any]] = []
    for path in args.datasets:
        items = read_file(path)
        labels = np.asarray([i.label or 0 for i in items], dtype=np.int64)
        texts = [i.text for i in items]
        if args.features == "previous":
            matrix = tfidf(texts, min_df=2, max_df=1.0, stop_words=True).matrix
        else:
            matrix = tfidf(texts).matrix
        row: dict[str, Any] = {"dataset": path.stem, "records": len(items)}
        row.update(relevant=int(labels.sum()), ours=[], asreview=[])
        for seed in range(args.seeds):
            priors = random_priors(labels, included=1, excluded=1, seed=seed)
            row["ours"].append(ours(matrix, labels, priors, args.model))
            if args.asreview and seed < (args.asreview_seeds or args.seeds):
                texts = [(i.title, i.abstract) for i in items]
                row["asreview"].append(asreview(args.asreview, texts, labels, priors, seed))
        report.append(row)
        print(_line(row), file=sys.stderr, flush=True)
        if args.json:
            args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


def _mean(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def _line(row: dict[str, Any]) -> str:
    def fmt(runs: list[dict[str, Any]]) -> str:
        if not runs:
            return "-"
        return (
            f"loss {_mean(runs, 'loss'):.4f} wss95 {_mean(runs, 'wss95'):.4f}"
            f" r10 {_mean(runs, 'recall10'):.4f} (n={len(runs)})"
        )

    stops = [r for r in row["ours"] if r["stop_at"] is not None]
    reached = sum(1 for r in stops if r["stop_recall"] >= 0.95)
    return (
        f"{row['dataset']} ({row['records']}, {row['relevant']} relevant): ours {fmt(row['ours'])};"
        f" asreview {fmt(row['asreview'])}; stopping: {len(stops)}/{len(row['ours'])} stopped,"
        f" {reached} at >=95% recall"
    )


def table(rows: list[dict[str, Any]]) -> str:
    """Every data set: means over the seeds of each tool, and the stopping rule's record."""
    lines = [
        "| data set | records | relevant | loss ours | loss ASReview | WSS@95 ours"
        " | WSS@95 ASReview | recall@10% ours | recall@10% ASReview | stopped at >=95%"
        " recall | saved by the rule | knee at >=95% recall | saved by the knee |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:.3f}"

    for row in rows:
        ours_runs, theirs = row["ours"], row["asreview"]
        same = ours_runs[: len(theirs)] if theirs else ours_runs  # compared on the same seeds
        stopped = [r for r in ours_runs if r["stop_at"] is not None]
        good = sum(1 for r in stopped if r["stop_recall"] >= 0.95)
        saved = statistics.fmean(
            row["records"] - (r["stop_at"] or row["records"]) for r in ours_runs
        )
        knee_good = sum(1 for r in ours_runs if (r["knee_recall"] or 1.0) >= 0.95)
        knee = statistics.fmean(
            row["records"] - (r["knee_at"] or row["records"]) for r in ours_runs
        )
        lines.append(
            f"| {row['dataset']} | {row['records']} | {row['relevant']}"
            f" | {num(_mean(same, 'loss'))} | {num(_mean(theirs, 'loss'))}"
            f" | {num(_mean(same, 'wss95'))} | {num(_mean(theirs, 'wss95'))}"
            f" | {num(_mean(same, 'recall10'))} | {num(_mean(theirs, 'recall10'))}"
            f" | {good}/{len(ours_runs)} | {saved:.0f} | {knee_good}/{len(ours_runs)}"
            f" | {knee:.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
