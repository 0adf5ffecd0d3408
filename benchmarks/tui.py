"""Terminal UI latency: start-up to first frame, and Enter to first rendered results.

Builds (once, then reuses) a corpus of synthetic PubMed-like articles with the real
ingest pipeline (lexical-only unless vectors were added to that home), then:

- **first frame**: a fresh Python process is started and the time from just before
  ``Popen`` until the app's first screen is mounted and drawn (headless) is reported;
  also until the corpus is open and the status bar shows it ("ready"). Target <= 1.5 s.
- **Enter to results**: in one running app, for each query, the time from the Enter key
  until the results list has been redrawn (the ``ResultsRendered`` message, posted
  after the refresh that drew them). Target <= 300 ms.

The references measured in the same run: a bare interpreter's start (``python -c
pass``) for the first frame, and the same queries through the Searcher in this process,
with no UI, for Enter to results; the ratios say what the UI adds.

    python -m benchmarks.tui [--articles 10000] [--queries 30] [--home DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.synth import pseudo_vocabulary, write_synthetic_pubmed
from medsearch.paths import Paths

FIRST_FRAME_TARGET = 1.5
ENTER_TARGET = 0.300

_CHILD = """
import asyncio, json, sys, time
from pathlib import Path
start = float(sys.argv[2])
from medsearch.paths import Paths
from medsearch.tui.app import MedsearchApp
from medsearch.tui.widgets.bars import StatusBar

async def main() -> None:
    app = MedsearchApp(Paths(Path(sys.argv[1])))
    async with app.run_test(size=(120, 40)) as pilot:
        first = time.time() - start
        await app.workers.wait_for_complete()
        await pilot.pause()
        ready = time.time() - start
        print(json.dumps({"first_frame": first, "ready": ready,
                          "status": app.screen.query_one(StatusBar).corpus}))

asyncio.run(main())
"""


def build_corpus(home: Path, articles: int, *, vectors: bool = False) -> None:
    """Ingest ``articles`` synthetic citations into ``home`` unless it already has them.

    With ``vectors``, minilm-shaped random article vectors are added (see
    ``benchmarks.search.latency.add_random_vectors``) so the app searches hybrid with the real
    offline query encoder, the case the latency target is for.
    """
    paths = Paths(home)
    if paths.store.exists():
        return
    from ingest.pipeline import Ingestor

    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "synthetic.xml.gz"
        write_synthetic_pubmed(xml, articles, gzip=True)
        started = time.perf_counter()
        with Ingestor(paths, jobs=1) as ingestor:
            ingestor.run([xml])
        print(
            f"built {articles:,} articles in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
    if vectors:
        from benchmarks.search.latency import add_random_vectors

        add_random_vectors(paths, articles)


def first_frame(home: Path, runs: int) -> dict[str, float | str]:
    samples: list[dict[str, float | str]] = []
    for _ in range(runs):
        start = time.time()
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, str(home), repr(start)],
            capture_output=True,
            text=True,
            check=True,
        )
        samples.append(json.loads(out.stdout.strip().splitlines()[-1]))
    firsts = sorted(float(s["first_frame"]) for s in samples)
    readies = sorted(float(s["ready"]) for s in samples)
    return {
        "first_frame_median_s": statistics.median(firsts),
        "first_frame_max_s": firsts[-1],
        "ready_median_s": statistics.median(readies),
        "status": str(samples[-1]["status"]),
    }


def interpreter_start(runs: int) -> float:
    """Median seconds for a bare Python to start and exit: the first frame's floor."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def searcher_only(home: Path, texts: list[str], mode: str) -> list[float]:
    """Per query: the Searcher's first stage in this process, no UI (first one dropped)."""
    from medsearch.retrieval.searcher import open_searcher

    latencies = []
    with open_searcher(Paths(home)) as searcher:
        for text in [texts[0], *texts]:
            started = time.perf_counter()
            searcher.search(text, mode=mode, rerank="none")
            latencies.append(time.perf_counter() - started)
    return latencies[1:]


def queries(n: int, seed: int = 1) -> list[str]:
    """Two-word queries mixing common, mid-frequency and rare words of the corpus."""
    vocab = pseudo_vocabulary(50_000, 0)
    rng = random.Random(seed)
    bands = (vocab[:200], vocab[200:5_000], vocab[5_000:20_000])
    return [f"{rng.choice(bands[i % 3])} {rng.choice(bands[(i + 1) % 3])}" for i in range(n)]


async def enter_to_results(home: Path, texts: list[str]) -> list[float]:
    """Per query: Enter key dispatched -> results redrawn (both timed on the UI loop)."""
    from textual.events import Key

    from medsearch.tui.app import MedsearchApp
    from medsearch.tui.messages import ResultsRendered
    from medsearch.tui.widgets.search_bar import SearchBar

    rendered = asyncio.Event()
    marks: dict[str, float] = {}

    def hook(message: object) -> None:
        if isinstance(message, Key) and message.key == "enter" and "enter" not in marks:
            marks["enter"] = time.perf_counter()
        elif isinstance(message, ResultsRendered) and not message.reranked:
            marks["rendered"] = time.perf_counter()
            rendered.set()

    app = MedsearchApp(Paths(home))
    latencies: list[float] = []
    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await app.workers.wait_for_complete()  # corpus open, models loaded
        await pilot.pause()
        for text in [texts[0], *texts]:  # the first one warms caches and is dropped
            bar = app.screen.query_one(SearchBar)
            bar.focus()
            bar.value = text
            await pilot.pause()
            rendered.clear()
            marks.clear()
            await pilot.press("enter")
            await asyncio.wait_for(rendered.wait(), timeout=30)
            latencies.append(marks["rendered"] - marks["enter"])
            await app.workers.wait_for_complete()  # let any rerank finish before the next
    return latencies[1:]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--articles", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--starts", type=int, default=3, help="fresh processes for first frame")
    parser.add_argument("--home", type=Path, default=None, help="corpus home (built if empty)")
    parser.add_argument(
        "--lexical-only", action="store_true", help="no vectors (default: minilm-shaped vectors)"
    )
    args = parser.parse_args(argv)
    kind = "lexical" if args.lexical_only else "hybrid"
    home = args.home or Path(tempfile.gettempdir()) / f"medsearch-bench-tui-{args.articles}-{kind}"
    build_corpus(home, args.articles, vectors=not args.lexical_only)

    start = first_frame(home, args.starts)
    bare_start = interpreter_start(args.starts)
    texts = queries(args.queries)
    latencies = sorted(asyncio.run(enter_to_results(home, texts)))
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))]
    searches = sorted(searcher_only(home, texts, kind))
    report = {
        "articles": args.articles,
        "mode": kind,
        **start,
        "interpreter_start_s": round(bare_start, 3),
        "first_frame_vs_interpreter": round(float(start["first_frame_median_s"]) / bare_start, 1),
        "enter_to_results_p50_ms": round(statistics.median(latencies) * 1000, 1),
        "enter_to_results_p95_ms": round(p95 * 1000, 1),
        "enter_to_results_max_ms": round(latencies[-1] * 1000, 1),
        "searcher_only_p50_ms": round(statistics.median(searches) * 1000, 1),
        "enter_vs_searcher_p50": round(
            statistics.median(latencies) / statistics.median(searches), 2
        ),
        "first_frame_ok": float(start["first_frame_max_s"]) <= FIRST_FRAME_TARGET,
        "enter_ok": p95 <= ENTER_TARGET,
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
