"""What a reference-list watch (``check FILE --watch``) costs a run after a daily update.

    nice -n 5 python -m benchmarks.reference_watch [--small 200000] [--large 2000000]

A run reads the PMIDs the update files added or replaced (the ``file_changes`` rows,
~30K a day) and looks each up in ``articles`` for a ``notice_for`` naming another
article (:func:`medsearch.watches.references.noticed_by`): a notice record arriving
alone is how most retractions reach a reference. The reference measured in the same
run, on the same table, is what a run that ignored the ledger would do: read every
row's ``notice_for`` (a full scan). Both at two table sizes (synthetic ``articles``
rows, 0.2% of them notices about a random earlier article); times are CPU seconds of
this process (``time.process_time``, best of three: the machine is shared).
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from medsearch.watches.references import noticed_by

DAILY = 30_000
NEW = 24_000
NOTICE_SHARE = 0.002


def best(runs: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        work()
        times.append(time.process_time() - start)
    return min(times)


def build(path: Path, rows: int, rng: random.Random) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute(
        "CREATE TABLE articles (pmid INTEGER PRIMARY KEY, title TEXT,"
        " notice_for TEXT NOT NULL DEFAULT '[]')"
    )

    def row(pmid: int) -> tuple[int, str, str]:
        about = "[]"
        if pmid > 1 and rng.random() < NOTICE_SHARE:
            target = rng.randrange(1, pmid)
            about = orjson.dumps(
                [{"status": "retracted", "type": "RetractionOf", "pmid": target}]
            ).decode()
        return pmid, f"title of article {pmid}", about

    conn.executemany("INSERT INTO articles VALUES (?,?,?)", (row(p) for p in range(1, rows + 1)))
    conn.commit()
    return conn


def one(rows: int, folder: Path) -> tuple[float, float, int]:
    rng = random.Random(rows)
    conn = build(folder / f"articles-{rows}.sqlite", rows, rng)
    changed = sorted(
        set(range(rows - NEW + 1, rows + 1)) | set(rng.sample(range(1, rows - NEW), DAILY - NEW))
    )
    found: list[frozenset[int]] = []
    ledger = best(3, lambda: found.append(noticed_by(conn, changed)))

    def scan() -> int:
        return sum(
            1 for _ in conn.execute("SELECT notice_for FROM articles WHERE notice_for != '[]'")
        )

    full = best(3, scan)
    conn.close()
    return ledger, full, len(found[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200_000)
    parser.add_argument("--large", type=int, default=2_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: one(n, Path(tmp)) for n in (args.small, args.large)}
    for n, (ledger, full, targets) in results.items():
        print(
            f"{n:>10,} rows: the day's {DAILY:,} changed PMIDs {ledger * 1000:8.1f} ms CPU"
            f" ({targets} articles named by their notices); full scan {full * 1000:8.1f} ms;"
            f" ledger / scan {ledger / full:.3f}"
        )
    (l_s, f_s, _), (l_l, f_l, _) = results[args.small], results[args.large]
    scale = 40_900_000 / args.large
    print(
        f"large / small: ledger x{l_l / l_s:.2f}, full scan x{f_l / f_s:.2f};"
        f" at 40.9M the scan extrapolates (linearly) to {f_l * scale:.1f} s,"
        f" the ledger stays near {l_l * 1000:.0f} ms"
    )


if __name__ == "__main__":
    main()
