"""The user's commands end to end, as issue 42 measured them: ``medsearch ingest`` over
cycled real records with a MedCPT-shaped profile, beside ``benchmarks.ingest`` on the
same records, then ``medsearch search`` timed in every mode and device.

    python -m benchmarks.commands --articles 300000 --per-file 20000 --device cuda \\
        --vocab .gpu/vocab --out results          # the GPU step (benchmarks/gpu.sh commands)
    python -m benchmarks.commands --articles 2000 --per-file 500 --layers 2 --hidden 64 \\
        --device cpu                              # a trial on any machine

Steps, each written to ``--out``:
- ``cycled``: ``--articles`` real records of ``--pubmed`` (default ../shared/data/pubmed)
  cycled into files of ``--per-file`` (:func:`benchmarks.real_records.write_cycled_pubmed`);
- ``models``: a random BERT of ``--layers`` x ``--hidden`` (default MedCPT's 12 x 768) for
  the query, article and cross-encoder roles, saved locally with a fast tokenizer
  (``--vocab``: a saved bert-base tokenizer folder; else a vocabulary of the corpus's own
  words), named by a ``[profiles.rand]`` table;
- ``ingest.json``: ``medsearch ingest DIR --models rand --device D --json`` (its
  ``stages`` and notes), its wall time and peak RSS, with ``nvidia-smi`` sampled every 2
  s where there is one (``gpu-samples.csv``; the summary gives the seconds before the
  first busy sample and the share of samples >= 85% after it);
- ``harness.txt``: ``python -m benchmarks.ingest --real PUBMED`` on the same count and
  files, for the rate the command should reach (``--no-harness`` skips it);
- ``search.json``: ``medsearch search QUERY --json`` in each mode on each device (cpu,
  and cuda where present), the median of ``--repeat`` after one untimed run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.real_records import load_records, write_cycled_pubmed
from benchmarks.search.command import ENTRY, QUERY, build_models, profile_table

REPO = Path(__file__).resolve().parents[1]
SEARCHES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lexical", ("--mode", "lexical")),
    ("hybrid", ()),
    ("hybrid --no-rerank", ("--no-rerank",)),
    ("dense", ("--mode", "dense")),
    ("hybrid --count", ("--count",)),
)


def command(home: Path, args: list[str]) -> list[str]:
    del home
    return [sys.executable, "-c", ENTRY, *args]


def environment(home: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "MEDSEARCH_HOME": str(home), "PYTHONPATH": f"{REPO}:{path}"}


class GpuSampler:
    """``nvidia-smi`` every ``period`` seconds in a thread: (seconds, util %, MiB)."""

    def __init__(self, out: Path, period: float = 2.0) -> None:
        self.out, self.period = out, period
        self.rows: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.present = shutil.which("nvidia-smi") is not None

    def __enter__(self) -> GpuSampler:
        self.start = time.perf_counter()
        if self.present:
            self._thread.start()
        return self

    def _run(self) -> None:
        query = [
            "nvidia-smi",
            "--query-gpu=utilization.gpu,memory.used",
            "--format=csv,noheader,nounits",
        ]
        while not self._stop.is_set():
            done = subprocess.run(query, capture_output=True, text=True, check=False)
            first = (done.stdout.strip().splitlines() or ["0, 0"])[0]
            util, mem = (int(x.strip() or 0) for x in first.split(",")[:2])
            self.rows.append((time.perf_counter() - self.start, util, mem))
            self._stop.wait(self.period)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.present:
            self._thread.join()
        self.out.write_text(
            "seconds,util,mib\n" + "".join(f"{t:.1f},{u},{m}\n" for t, u, m in self.rows)
        )

    def summary(self) -> dict[str, Any]:
        busy = [t for t, u, _ in self.rows if u > 0]
        if not busy:
            return {"gpu": self.present, "samples": len(self.rows)}
        after = [u for t, u, _ in self.rows if t >= busy[0]]
        return {
            "gpu": True,
            "samples": len(self.rows),
            "idle_before_first_busy_s": round(busy[0], 1),
            "share_at_least_85": round(sum(u >= 85 for u in after) / len(after), 3),
            "mean_util_after_first_busy": round(statistics.mean(after), 1),
            "peak_mib": max(m for _, _, m in self.rows),
        }


def run_ingest(home: Path, data: Path, device: str, out: Path) -> dict[str, Any]:
    with GpuSampler(out / "gpu-samples.csv") as sampler:
        start = time.perf_counter()
        done = subprocess.run(
            command(home, ["ingest", str(data), "--models", "rand", "--device", device, "--json"]),
            env=environment(home),
            capture_output=True,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    (out / "ingest-stderr.txt").write_text(done.stderr)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {"stdout": done.stdout[-4000:]}
    summary = {
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "peak_rss_gb": round(peak_kib / 1e6, 2),
        "gpu": sampler.summary(),
        "report": report,
    }
    (out / "ingest.json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


def run_harness(pubmed: Path, articles: int, files: int, jobs: int | None, out: Path) -> float:
    """The harness's ingest seconds (nan when its line is missing). Its ``--jobs``
    defaults to the command's own default (the harness's is 1): the same parsers on
    both sides, or the comparison measures the parser count."""
    from ingest.run import default_jobs

    jobs = default_jobs() if jobs is None else jobs
    args = [sys.executable, "-m", "benchmarks.ingest", "--real", str(pubmed)]
    args += ["--articles", str(articles), "--files", str(files), "--repeat", "1"]
    # The single-process reference loops over one file, scaled (the harness's option):
    # over all 300K real records the parser-only loop alone is ~140 s of the time box.
    args += ["--jobs", str(jobs), "--reference-files", "1"]
    done = subprocess.run(
        args, env=environment(out), capture_output=True, text=True, check=False, cwd=REPO
    )
    (out / "harness.txt").write_text(done.stdout + done.stderr)
    print(done.stdout[-1500:])
    found = re.search(r"^ingest \(jobs=\d+\)\s*:\s*([\d.]+) s", done.stdout, re.MULTILINE)
    return float(found.group(1)) if found else float("nan")


def time_search(home: Path, flags: tuple[str, ...], repeat: int) -> tuple[float, list[str]]:
    args = command(home, ["search", QUERY, "--json", *flags])
    env = environment(home)
    subprocess.run(args, env=env, capture_output=True, check=False)
    times, notes = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if done.returncode != 0:
            return float("nan"), [done.stderr.strip()[-300:]]
        try:
            notes = list(json.loads(done.stdout).get("notes", []))
        except (ValueError, AttributeError):
            notes = []
    return statistics.median(times), notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--articles", type=int, default=300_000)
    ap.add_argument("--per-file", type=int, default=20_000)
    ap.add_argument("--pubmed", type=Path, default=REPO.parent / "shared" / "data" / "pubmed")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--hidden", type=int, default=768)
    ap.add_argument("--vocab", type=Path, default=None, help="a saved bert-base tokenizer")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=None, help="the harness's --jobs")
    ap.add_argument("--no-harness", action="store_true")
    ap.add_argument("--work", type=Path, default=Path("/tmp/medsearch-commands"))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/out")))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.work
    shutil.rmtree(work, ignore_errors=True)
    data, home = work / "pubmed", work / "home"
    data.mkdir(parents=True)
    records = load_records(args.pubmed)
    files = (args.articles + args.per_file - 1) // args.per_file
    for i in range(files):
        n = min(args.per_file, args.articles - i * args.per_file)
        write_cycled_pubmed(
            data / f"pubmed26n{i + 1:04d}.xml.gz",
            n,
            records,
            start_pmid=1 + i * args.per_file,
            offset=i * args.per_file,
        )
    print(f"cycled {args.articles:,} articles of {len(records)} real records into {files} files")
    dirs = build_models(
        work / "models", args.pubmed, layers=args.layers, hidden=args.hidden, vocab=args.vocab
    )
    home.mkdir()
    (home / "config.toml").write_text(profile_table("rand", dirs))
    ingest = run_ingest(home, data, args.device, args.out)
    stages = ingest["report"].get("stages") if isinstance(ingest["report"], dict) else None
    print(
        f"ingest: exit {ingest['exit']}, {ingest['wall_s']} s, peak RSS {ingest['peak_rss_gb']} GB"
    )
    print(f"  stages: {json.dumps(stages)}")
    print(f"  GPU: {json.dumps(ingest['gpu'])}")
    if not args.no_harness:
        harness = run_harness(args.pubmed, args.articles, files, args.jobs, args.out)
        command_s = float((stages or {}).get("ingest", float("nan")))
        print(
            f"lexical ingest, {args.articles:,} articles: command (stage 'ingest')"
            f" {command_s:.1f} s = {args.articles / command_s:,.0f}/s;"
            f" harness {harness:.1f} s = {args.articles / harness:,.0f}/s;"
            f" ratio command / harness {command_s / harness:.2f}"
        )
    devices = ["cpu"] + (["cuda"] if ingest["gpu"].get("gpu") else [])
    rows = []
    for device in devices:
        for name, flags in SEARCHES:
            seconds, notes = time_search(home, (*flags, "--device", device), args.repeat)
            rows.append(
                {"device": device, "command": name, "seconds": round(seconds, 3), "notes": notes}
            )
            print(f"search {name:<20} --device {device:<5} {seconds:6.2f} s")
    (args.out / "search.json").write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
