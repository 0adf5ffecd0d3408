"""``medsearch ingest --no-encode`` beside ``benchmarks.ingest``'s loop on the same files.

    python -m benchmarks.ingest_gap --articles 20000 --files 2 --repeat 3 [--jobs N]

Issue 42 saw the command reach about half the harness's rate on real records. Both
run here on the same cycled real records (:func:`benchmarks.real_records.
write_cycled_pubmed`), in fresh data homes, alternating (command, harness, command, ...)
so a noisy shared machine slows both alike; the best of ``--repeat`` is kept. The
command is a subprocess timed end to end and by its own ``stages``; the harness is
``Ingestor.run`` in a subprocess with the same ``--jobs``, timed around ``run`` alone
(as ``benchmarks.ingest`` does), so the difference is what the command adds: start-up,
the write lock, hashing and sniffing inputs, the ledger, the citations stage.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.real_records import load_records, write_cycled_pubmed
from benchmarks.search.command import ENTRY

REPO = Path(__file__).resolve().parents[1]
HARNESS = """
import sys, time
from pathlib import Path
from ingest.pipeline import Ingestor
from medsearch.paths import Paths
home, jobs, files = Path(sys.argv[1]), int(sys.argv[2]), [Path(p) for p in sys.argv[3:]]
with Ingestor(Paths(home), jobs=jobs) as ing:
    t0 = time.perf_counter()
    s = ing.run(files)
    print(s.articles, time.perf_counter() - t0)
"""


def run_command(home: Path, data: Path, jobs: int | None) -> tuple[float, dict[str, float]]:
    args = [sys.executable, "-c", ENTRY, "--home", str(home), "ingest", str(data)]
    args += ["--no-encode", "--json"] + ([] if jobs is None else ["--jobs", str(jobs)])
    t0 = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=True, cwd=REPO)
    wall = time.perf_counter() - t0
    return wall, dict(json.loads(done.stdout).get("stages", {}))


def run_harness(home: Path, files: list[Path], jobs: int) -> float:
    args = [sys.executable, "-c", HARNESS, str(home), str(jobs), *map(str, files)]
    done = subprocess.run(args, capture_output=True, text=True, check=True, cwd=REPO)
    return float(done.stdout.split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=20_000)
    ap.add_argument("--files", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="both sides (default: the command's)")
    ap.add_argument("--pubmed", type=Path, default=REPO.parent / "shared" / "data" / "pubmed")
    args = ap.parse_args()
    from ingest.run import default_jobs

    jobs = default_jobs() if args.jobs is None else args.jobs
    work = Path(tempfile.mkdtemp(prefix="medsearch-ingest-gap-"))
    try:
        data = work / "pubmed"
        data.mkdir()
        records = load_records(args.pubmed)
        per = -(-args.articles // args.files)
        files = []
        for i in range(args.files):
            n = min(per, args.articles - i * per)
            path = data / f"pubmed26n{i + 1:04d}.xml.gz"
            write_cycled_pubmed(path, n, records, start_pmid=1 + i * per, offset=i * per)
            files.append(path)
        walls, ingests, harness = [], [], []
        for r in range(args.repeat):
            wall, stages = run_command(work / f"cmd{r}", data, args.jobs)
            walls.append(wall)
            ingests.append(stages.get("ingest", float("nan")))
            shutil.rmtree(work / f"cmd{r}")
            harness.append(run_harness(work / f"h{r}", files, jobs))
            shutil.rmtree(work / f"h{r}")
            print(
                f"run {r + 1}: command {wall:.2f} s (stages {stages}), harness {harness[-1]:.2f} s"
            )
        n = args.articles
        print(f"{n:,} real records cycled, {args.files} files, jobs={jobs}, best of {args.repeat}")
        print(f"command wall        : {min(walls):6.2f} s {n / min(walls):8,.0f} articles/s")
        print(f"command ingest stage: {min(ingests):6.2f} s {n / min(ingests):8,.0f} articles/s")
        print(f"harness Ingestor.run: {min(harness):6.2f} s {n / min(harness):8,.0f} articles/s")
        print(f"ratio command wall / harness = {min(walls) / min(harness):.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
