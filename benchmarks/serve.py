"""``medsearch serve`` against the CLI, measured in the same run.

    python -m benchmarks.serve [--docs 50000] [--queries 100] [--cli-runs 5] [--keep DIR]

The home is real ingest of synthetic PubMed XML plus random 384-d unit vectors under the
minilm profile (as ``benchmarks.search`` builds it: search cost does not depend on what
the vectors mean; the query encoder is the real minilm model). The service runs as its
own process (``medsearch serve --no-load`` would defer the model; this one loads it) on
the home's Unix socket; the client is :mod:`medsearch.serve.client`'s plain
``http.client``, the one the CLI uses. Measured, p50/p95:

- warm hybrid search through the service (top 10, no reranker) beside the same search
  in-process (the searcher's own time) and beside ``medsearch search --json`` run alone
  as a new process (what a script looping over the CLI pays per query);
- esearch (retmax=100) then efetch of those 100 records as PubmedArticleSet XML;
- 8 concurrent clients against one: each request's time under load.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.search.latency import add_random_vectors
from benchmarks.synth import pseudo_vocabulary, write_synthetic_pubmed
from medsearch.paths import Paths


def ms(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values) * 1000, q))


def line(label: str, values: list[float]) -> str:
    return (
        f"{label:44s} p50 {ms(values, 50):8.1f} ms  p95 {ms(values, 95):8.1f} ms  n={len(values)}"
    )


def build(paths: Paths, docs: int) -> None:
    from ingest.pipeline import Ingestor

    xml = paths.home.parent / "pubmed26n0001.xml.gz"
    t0 = time.perf_counter()
    write_synthetic_pubmed(xml, docs, gzip=True, seed=7)
    with Ingestor(paths, jobs=1) as ing:
        ing.run([xml])
    add_random_vectors(paths, docs)
    print(f"built {docs:,} synthetic articles with vectors in {time.perf_counter() - t0:.0f} s")


def medsearch_argv(home: Path, *args: str) -> list[str]:
    return [
        sys.executable,
        "-c",
        "from medsearch.cli import main; main()",
        "--home",
        str(home),
        *args,
    ]


def start_service(paths: Paths) -> subprocess.Popen[bytes]:
    from medsearch.serve.client import ask

    process = subprocess.Popen(
        medsearch_argv(paths.home, "serve", "--device", "cpu"),
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 300:
        if paths.serve_socket.exists() and ask(paths, "/health") is not None:
            print(f"service answering after {time.perf_counter() - t0:.1f} s (models loaded)")
            return process
        time.sleep(0.2)
    process.kill()
    raise SystemExit("the service did not start")


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--docs", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--cli-runs", type=int, default=5)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--keep", type=Path, default=None, help="Reuse/keep the home here.")
    args = ap.parse_args()

    from medsearch.retrieval.searcher import open_searcher
    from medsearch.serve.client import _request, ask

    work = args.keep or Path(tempfile.mkdtemp(prefix="medsearch-bench-serve-"))
    paths = Paths(work / "home")
    work.mkdir(parents=True, exist_ok=True)
    if not paths.store.exists():
        build(paths, args.docs)
    vocab = pseudo_vocabulary(50_000, seed=7)
    rnd = random.Random(1)
    queries = [
        " ".join(rnd.choice(vocab[:5000]) for _ in range(rnd.randint(2, 5)))
        for _ in range(args.queries)
    ]

    def search(q: str) -> object:
        return ask(paths, "/search", [("q", q), ("mode", "hybrid"), ("k", 10), ("rerank", "none")])

    with open_searcher(paths, device="cpu", load=True) as searcher:
        searcher.search(queries[0], mode="hybrid")
        inproc = [
            timed(lambda q=q: searcher.search(q, mode="hybrid", k=10, rerank="none"))
            for q in queries
        ]

    process = start_service(paths)
    try:
        search(queries[0])
        served = [timed(lambda q=q: search(q)) for q in queries]

        def esearch_efetch(q: str) -> None:
            found = _request(
                paths,
                "GET",
                "/entrez/eutils/esearch.fcgi",
                [
                    ("db", "pubmed"),
                    ("term", q),
                    ("retmax", "100"),
                    ("retmode", "json"),
                    ("sort", "relevance"),
                ],
                None,
            )
            assert found is not None and found.status == 200
            ids = json.loads(found.body)["esearchresult"]["idlist"]
            fetched = _request(
                paths,
                "GET",
                "/entrez/eutils/efetch.fcgi",
                [("db", "pubmed"), ("id", ",".join(ids)), ("retmode", "xml")],
                None,
            )
            assert fetched is not None and fetched.status == 200

        common = [" ".join(rnd.choice(vocab[:200]) for _ in range(1)) for _ in range(args.queries)]
        eutils = [timed(lambda q=q: esearch_efetch(q)) for q in common]

        per_request: list[float] = []
        lock = threading.Lock()

        def client(worker: int) -> None:
            mine = queries[worker :: args.clients] * 2
            for q in mine:
                spent = timed(lambda q=q: search(q))
                with lock:
                    per_request.append(spent)

        t0 = time.perf_counter()
        threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0

        served_cli = [
            timed(
                lambda q=q: subprocess.run(
                    medsearch_argv(
                        paths.home, "search", q, "--mode", "hybrid", "--no-rerank", "--json"
                    ),
                    check=True,
                    capture_output=True,
                )
            )
            for q in queries[: args.cli_runs]
        ]
    finally:
        process.terminate()
        process.wait(30)

    alone_cli = [
        timed(
            lambda q=q: subprocess.run(
                medsearch_argv(
                    paths.home, "search", q, "--mode", "hybrid", "--no-rerank", "--json"
                ),
                check=True,
                capture_output=True,
            )
        )
        for q in queries[: args.cli_runs]
    ]
    print(f"home: {args.docs:,} articles, minilm (384-d, flat), 2-core CPU shared")
    print(line("hybrid search in-process (searcher only)", inproc))
    print(line("hybrid search through the service", served))
    print(line("esearch retmax=100 + efetch 100 XML", eutils))
    print(line(f"{args.clients} concurrent clients, per request", per_request))
    one = 1 / statistics.mean(served)
    print(f"{'':44s} throughput {len(per_request) / wall:.1f} req/s, one client {one:.1f} req/s")
    print(line("`medsearch search --json`, service running", served_cli))
    print(line("`medsearch search --json`, alone (cold)", alone_cli))
    print(f"concurrent/one-client p95 ratio {ms(per_request, 95) / ms(served, 95):.2f}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
