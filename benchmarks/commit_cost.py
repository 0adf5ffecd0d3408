"""What one vector-stage commit costs as the sentence collection grows, and what that
means for a full PubMed ingest under a fixed or a cost-spaced commit cadence.

    nice -n 5 python -m benchmarks.commit_cost --sizes 200000,1000000 --dim 768

For each size a real :class:`SentenceCollection` (IVF-PQ codes past 100K) is built from
synthetic 768-d vectors, then ~20K articles' worth of sentences (8.5 each) are added and
committed, timed, three times, counting the bytes each commit writes. With the index
in parts (format 3) a commit writes its new codes, the id lookup and any merge; the
lookup still grows with the collection. The script fits seconds per written byte and
projects to ~350M sentences assuming the written bytes grow in proportion. Reference in
the same run: writing and fsyncing the same number of bytes with plain file I/O (what
the disk itself costs).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.sentence_data import synthetic
from medsearch.index.sentence_index import SentenceCollection

PUBMED_ARTICLES = 40_900_000
PUBMED_SENTENCES = 350_000_000
SENTENCES_PER_ARTICLE = PUBMED_SENTENCES / PUBMED_ARTICLES
BATCH_ARTICLES = 20_000  # ingest.encode_stage.COMMIT_ARTICLES
SHARE = 0.1  # ingest.encode_stage.COMMIT_SHARE


def written_by(path: Path, before: dict[str, int]) -> int:
    """Bytes of the files a commit wrote: new or replaced files (the ids and the training
    sample are appended to, never rewritten, and are not counted)."""
    return sum(
        f.stat().st_size
        for f in path.iterdir()
        if f.is_file()
        and before.get(f.name) != f.stat().st_ino
        and f.suffix != ".i64"
        and f.name != "sample.f16"
    )


def inodes(path: Path) -> dict[str, int]:
    return {f.name: f.stat().st_ino for f in path.iterdir()}


def plain_write(path: Path, nbytes: int) -> float:
    block = os.urandom(1 << 20)
    start = time.perf_counter()
    with open(path, "wb") as out:
        for _ in range(max(1, nbytes >> 20)):
            out.write(block)
        out.flush()
        os.fsync(out.fileno())
    seconds = time.perf_counter() - start
    path.unlink()
    return seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--dim", type=int, default=768)
    args = parser.parse_args(argv)
    per_commit = int(BATCH_ARTICLES * SENTENCES_PER_ARTICLE)
    fits: list[float] = []
    for n in (int(s) for s in args.sizes.split(",")):
        x = synthetic(n + 3 * per_commit, args.dim, seed=1)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "s"
            col = SentenceCollection.open(path, dim=args.dim, profile="bench", create=True)
            for lo in range(0, n, 65_536):
                col.add(np.arange(lo, min(n, lo + 65_536)), x[lo : min(n, lo + 65_536)])
            col.commit()
            times, sizes = [], []
            for r in range(3):
                lo = n + r * per_commit
                col.add(np.arange(lo, lo + per_commit), x[lo : lo + per_commit])
                before = inodes(path)
                start = time.perf_counter()
                col.commit()
                times.append(time.perf_counter() - start)
                sizes.append(written_by(path, before))
            size = int(np.median(sizes))
            col.close()
            disk = plain_write(Path(tmp) / "plain.bin", size)
        commit = float(np.median(times))
        fits.append(commit / size)
        print(
            f"{n:>11,} sentences: commit of {per_commit:,}"
            f" new writes {size / 1e6:,.0f} MB: {commit:.2f} s"
            f" (x{commit / disk:.2f} writing the same bytes: {disk:.2f} s)",
            flush=True,
        )
    per_byte = fits[-1]
    full = size / (n + 3 * per_commit) * PUBMED_SENTENCES  # bytes at PubMed scale
    final_cost = per_byte * full
    commits = PUBMED_ARTICLES // BATCH_ARTICLES
    fixed_total = sum(per_byte * full * (i + 1) / commits for i in range(commits))
    print(
        f"projected at {PUBMED_SENTENCES / 1e6:.0f}M sentences: index + lookup"
        f" {full / 1e9:.0f} GB, one commit {final_cost:.0f} s"
    )
    print(
        f"fixed cadence ({BATCH_ARTICLES:,} articles): {commits:,} commits writing"
        f" {full / 2 * commits / 1e12:.0f} TB, {fixed_total / 3600:.1f} h of commits"
    )
    print(
        f"cost-spaced cadence (commits <= {SHARE:.0%} of the stage): {SHARE:.0%} of the"
        f" stage's time; the last commits {final_cost / SHARE / 60:.0f} min apart"
    )


if __name__ == "__main__":
    main()
