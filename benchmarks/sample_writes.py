"""The sentence writer's reservoir sample once it is full: replacements held back and
written in slot order (what ``SentenceCollection`` does) vs each add's replacements
written at once in arrival order (what it did before), in one run.

    python -m benchmarks.sample_writes                 # 524,288-row sample, 8 x 70K adds
    python -m benchmarks.sample_writes --adds 4 --repeat 1

Each collection's sample is filled first (as after 0.52M sentences); then ``--adds``
chunks of 70,000 sentences (8,192 articles' worth) go through ``_sample``: ~364K
replacements for 8 chunks, the young collection of a 120K-article run. The two ways
alternate ``--repeat`` times, each on a fresh collection, and must leave the same bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from medsearch.index import sentence_index as si
from medsearch.index.sentence_index import SentenceCollection
from medsearch.index.vector_layout import SAMPLE_MAX


class AsTheyCome(SentenceCollection):
    """The writer before: every add's replacements written at once, in arrival order."""

    def _sample(self, vectors: np.ndarray) -> None:
        super()._sample(vectors)
        self._write_replacements()

    def _write_replacements(self) -> None:
        if not self._replacing:
            return
        fh = self._fh.pop(self.manifest.sample_file, None)
        if fh is not None:
            fh.close()
        width = 2 * self.dim
        fd = os.open(self.path / self.manifest.sample_file, os.O_WRONLY)
        try:
            for slots, rows in self._replacing:
                for row, slot in zip(rows, slots.tolist(), strict=True):
                    os.pwrite(fd, row.tobytes(), slot * width)
        finally:
            os.close(fd)
        self._replacing, self._replacing_rows = [], 0


def timed(kind: type[SentenceCollection], root: Path, chunk: np.ndarray, adds: int) -> float:
    col = kind.open(root, dim=chunk.shape[1], profile="bench", create=True)
    try:
        for _ in range(-(-SAMPLE_MAX // len(chunk))):
            col._sample(chunk)  # fill the sample
        col._write_replacements()
        start = time.perf_counter()
        for _ in range(adds):
            col._sample(chunk)
        col._write_replacements()
        return time.perf_counter() - start
    finally:
        col.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adds", type=int, default=8, help="chunks of --chunk sentences")
    parser.add_argument("--chunk", type=int, default=70_000)
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    chunk = rng.standard_normal((args.chunk, args.dim), dtype=np.float32) * np.float32(0.05)
    seen = SAMPLE_MAX + args.adds * args.chunk
    print(
        f"{args.adds} x {args.chunk:,} adds past a full {SAMPLE_MAX:,}-row sample"
        f" (~{SAMPLE_MAX * np.log(seen / SAMPLE_MAX):,.0f} replacements,"
        f" {si.REPLACE_BUFFER_ROWS:,}-row buffer)"
    )
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent.parent) as tmp:
        for run in range(args.repeat):
            ref = timed(AsTheyCome, Path(tmp) / f"ref{run}", chunk, args.adds)
            new = timed(SentenceCollection, Path(tmp) / f"new{run}", chunk, args.adds)
            same = (Path(tmp) / f"ref{run}" / "sample.f16").read_bytes() == (
                Path(tmp) / f"new{run}" / "sample.f16"
            ).read_bytes()
            print(
                f"  run {run + 1}: as they come {ref:.2f} s, held back in slot order"
                f" {new:.2f} s: x{ref / new:.2f}; same sample bytes: {same}"
            )


if __name__ == "__main__":
    main()
