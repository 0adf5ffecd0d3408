"""A writer's uncommitted id -> slot changes: the arrays of ``PendingSlots`` against the
Python dict they replaced, for one commit interval's worth of sentences.

    python -m benchmarks.pending_slots [--changes 5000000] [--batch 4096]

Both sides see the same stream as a sentence collection's ``add``: per batch, look the
ids up (are they replacing something?), then record their new slots; at the end, the
sorted (id, slot) arrays a commit merges into the lookup. Sentence ids are PMID x 1000
+ position, ascending within a batch as the encoder emits them. Prints seconds and the
memory each structure holds (in a second, untimed pass: tracemalloc, which counts
numpy's buffers too) and the ratios; at PubMed scale a commit interval is minutes of
GPU encoding: ~40K sentences/s x the seconds between commits.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from medsearch.index.pending_slots import ABSENT, PendingSlots


def stream(changes: int, batch: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    per_article = rng.integers(1, 18, size=changes // 4)
    pmids = np.repeat(np.arange(10**7, 10**7 + len(per_article)), per_article)
    positions = np.concatenate([np.arange(n) for n in per_article])
    ids = (pmids * 1000 + positions)[:changes]
    return [ids[i : i + batch] for i in range(0, len(ids), batch)]


def with_dict(batches: list[np.ndarray], trace: bool) -> tuple[float, int]:
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    pending: dict[int, int] = {}
    slot = 0
    for ids in batches:
        get = pending.get
        found = [get(i) for i in ids.tolist()]
        assert not any(s is not None for s in found)
        pending.update(zip(ids.tolist(), range(slot, slot + len(ids)), strict=True))
        slot += len(ids)
    p_ids = np.fromiter(pending.keys(), np.int64, len(pending))
    p_slots = np.fromiter(pending.values(), np.int64, len(pending))
    order = np.argsort(p_ids)
    p_ids, p_slots = p_ids[order], p_slots[order]
    seconds = time.perf_counter() - t0
    held = tracemalloc.get_traced_memory()[0] if trace else 0
    tracemalloc.stop()
    del pending
    return seconds, held


def with_arrays(batches: list[np.ndarray], trace: bool) -> tuple[float, int]:
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    pending = PendingSlots()
    slot = 0
    for ids in batches:
        assert (pending.get(ids) == ABSENT).all()
        pending.set(ids, np.arange(slot, slot + len(ids)))
        slot += len(ids)
    pending.items()
    seconds = time.perf_counter() - t0
    held = tracemalloc.get_traced_memory()[0] if trace else 0
    tracemalloc.stop()
    return seconds, held


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--changes", type=int, default=5_000_000)
    ap.add_argument("--batch", type=int, default=4096)
    args = ap.parse_args()
    batches = stream(args.changes, args.batch)
    # Timed without tracemalloc (it slows every Python allocation), measured with it.
    d_s, a_s = with_dict(batches, False)[0], with_arrays(batches, False)[0]
    d_b, a_b = with_dict(batches, True)[1], with_arrays(batches, True)[1]
    n = sum(len(b) for b in batches)
    print(f"{n:,} uncommitted changes in batches of {args.batch:,}")
    print(f"dict        : {d_s:6.2f} s  {d_b / 1e6:8.1f} MB held  ({d_b / n:5.1f} B per change)")
    print(f"PendingSlots: {a_s:6.2f} s  {a_b / 1e6:8.1f} MB held  ({a_b / n:5.1f} B per change)")
    print(f"ratio arrays / dict: time x{a_s / d_s:.2f}, memory x{a_b / d_b:.2f}")


if __name__ == "__main__":
    main()
