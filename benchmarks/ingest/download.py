"""`ingest --download`: the download and the ingest overlap, measured against taking turns.

    python -m benchmarks.ingest download [--files 4] [--articles 10000] [--rate 1.0]
        [--connections 2] [--jobs N] [--real ../shared/data/pubmed]

A local HTTP server (the tests' server, on 127.0.0.1) serves ``--files`` baseline files
of ``--articles`` each, as NCBI lays them out (listing, ``.md5`` files), its bodies paced
at ``--rate`` MB/s per connection, standing in for a link to NCBI that one connection
cannot fill (its latency, not its bandwidth, holds each back). Every download uses
``--connections`` at once, as ``ingest --download`` does. In one run, each from a fresh
data home and download folder:

- download alone, then ingest alone (the two references);
- taking turns: every file downloaded, then ingested (what ``ingest --download`` did
  before; should take their sum);
- overlapped: ``download_and_ingest``, the command's own path, each file ingested as soon
  as it is verified while the next downloads (should take about the slower of the two).

Prints each wall time, overlapped / taking turns, and overlapped / max(download, ingest)
(1.0 would be perfect overlap). The rate that makes both references about equal is the
worst case for taking turns (x2); a slower link makes the download dominate either way.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.ingest.speed import _write_file
from benchmarks.real_records import load_records

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from httpserver import serve  # noqa: E402  (the tests' server: see sys.path above)

from ingest.download import RemoteFile, list_remote  # noqa: E402
from ingest.download_ahead import BackgroundDownload  # noqa: E402
from ingest.pipeline import Ingestor  # noqa: E402
from ingest.summary import IngestSummary  # noqa: E402
from medsearch.paths import Paths  # noqa: E402
from medsearch.progress import NullProgress  # noqa: E402


def make_site(root: Path, files: int, articles: int, real: Path | None) -> Path:
    folder = root / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    records = load_records(real) if real else None
    paths = [folder / f"pubmed26n{n + 1:04d}.xml.gz" for n in range(files)]
    bounds = [(n * articles, (n + 1) * articles) for n in range(files)]
    # in parallel, as benchmarks.ingest does: one at a time, a 16-core run spent a
    # minute writing 8 files of 30,000 before anything was timed
    with ProcessPoolExecutor(min(files, os.cpu_count() or 1)) as pool:
        list(pool.map(_write_file, paths, bounds, range(files), [records] * files))
    for path in paths:
        digest = hashlib.md5(path.read_bytes()).hexdigest()
        path.with_name(f"{path.name}.md5").write_text(f"MD5({path.name})= {digest}\n")
    return root


def download_all(wanted: list[RemoteFile], dest: Path, connections: int) -> list[Path]:
    """Every file, ``connections`` at a time, before anything else (no ingest)."""
    got: list[Path] = []
    fetch = BackgroundDownload(
        wanted, dest, lambda p, m: got.append(p), lambda e: None, connections=connections
    )
    with fetch:
        fetch.join()
    if fetch.error is not None:
        raise fetch.error
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=4)
    ap.add_argument("--articles", type=int, default=10_000, help="articles per file")
    ap.add_argument("--rate", type=float, default=1.0, help="the server's MB/s a connection")
    ap.add_argument("--connections", type=int, default=2, help="files fetched at once")
    ap.add_argument("--jobs", type=int, default=None, help="parser processes (default: ingest's)")
    ap.add_argument("--real", type=Path, default=None, help="cycle these real records instead")
    args = ap.parse_args()
    from ingest.clock import StageClock
    from ingest.download_run import download_and_ingest
    from ingest.run import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    work = Path(tempfile.mkdtemp(prefix="dl-ingest-"))
    try:
        site = make_site(work / "site", args.files, args.articles, args.real)
        size = sum(p.stat().st_size for p in site.rglob("*.xml.gz"))
        print(
            f"{args.files} files x {args.articles:,} articles, {size / 1e6:.1f} MB gzipped,"
            f" served at {args.rate} MB/s a connection; connections={args.connections},"
            f" jobs={jobs}"
        )
        with serve(site) as server:
            server.rate = args.rate * 1e6
            mirror = server.url + "pubmed/"
            wanted = list_remote("baseline", mirror=mirror)

            def fresh(tag: str) -> tuple[Path, Path]:
                return work / f"{tag}-home", work / f"{tag}-downloads"

            home, dest = fresh("refs")
            t0 = time.perf_counter()
            fetched = download_all(wanted, dest, args.connections)
            download = time.perf_counter() - t0
            print(f"download alone      {download:7.1f} s")
            with Ingestor(Paths(home), jobs=jobs) as ing:
                t0 = time.perf_counter()
                articles = ing.run(fetched).articles
                ingest = time.perf_counter() - t0
            print(f"ingest alone        {ingest:7.1f} s ({articles / ingest:,.0f} articles/s)")

            home, dest = fresh("turns")
            t0 = time.perf_counter()
            with Ingestor(Paths(home), jobs=jobs) as ing:
                ing.run(download_all(wanted, dest, args.connections))
            turns = time.perf_counter() - t0
            print(
                f"taking turns        {turns:7.1f} s (download + ingest: {download + ingest:.1f})"
            )

            home, dest = fresh("overlap")
            t0 = time.perf_counter()
            clock = StageClock(IngestSummary())
            with Ingestor(Paths(home), jobs=jobs) as ing:
                stopped = download_and_ingest(
                    ing,
                    [],
                    wanted,
                    dest,
                    NullProgress(),
                    clock,
                    delete=False,
                    connections=args.connections,
                )
            summary = clock.summary
            overlap = time.perf_counter() - t0
            assert stopped is None and summary.articles == articles, (stopped, summary)
            print(f"overlapped          {overlap:7.1f} s")
        print(
            f"overlapped / taking turns {overlap / turns:.2f}; overlapped / max(download,"
            f" ingest) {overlap / max(download, ingest):.2f}"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
