"""``--explain``'s clause counts for a 200-clause strategy (target at 10M articles: <= 2 s
on 2 cores).

    nice -n 10 python -m benchmarks.explain --docs 300000 --dir DIR [--repeat 3]

Builds (or reuses) a lexical index of ``--docs`` synthetic articles (the bulk corpus of
``benchmarks.lexical``: Zipf vocabulary of 50K pseudo-words, ~220 words an abstract),
then times, for a systematic-review-shaped strategy of four concept blocks of 50
``[tiab]`` terms each (45 words and 5 truncated stems; :data:`SHAPES`) ANDed, the last
block NOT'd:

- parse + plan of the strategy text (``make_plan``, no MeSH);
- the search's own count (one lexical count of the whole strategy);
- ``explain_tree``: every clause counted alone (the four blocks and the 200 terms: 204
  counts; the root's is the search's count, passed in as ``search --explain`` does).

Each count reads its clause's postings, so the time grows with the corpus; the report
gives ms per million articles to argue the 10M figure from.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from benchmarks.lexical.latency import VOCAB_SIZE, build
from benchmarks.synth import pseudo_vocabulary
from medsearch.index.lexical.index import LexicalIndex
from medsearch.retrieval.explain import explain_tree
from medsearch.retrieval.query_text import make_plan

SEED = 0
BLOCKS = 4
SHAPES = {
    "topic": {
        "frequent": (1_000, 3_000, 10),
        "mid": (3_000, 20_000, 25),
        "rare": (20_000, VOCAB_SIZE, 10),
    },
    "broad": {
        "frequent": (100, 1_000, 10),
        "mid": (1_000, 5_000, 20),
        "rare": (20_000, VOCAB_SIZE, 15),
    },
}
"""Four blocks of 45 terms (rank from, rank to, how many, in the synthetic Zipf
vocabulary) and 5 truncated stems each. ``topic``: each block matches a minority of
the articles (a rank-1,000 word is in 1.6% of these abstracts), as a review's concept
blocks match a small share of PubMed; ``broad``: each block matches nearly every
article (a rank-100 word is in 18%), the worst case: every clause reads the postings
of the whole corpus."""
STEMS = 5


def strategy(shape: str = "topic", seed: int = SEED) -> str:
    """Four blocks of 50 ``[tiab]`` terms: ``(b1) AND (b2) AND (b3) NOT (b4)``."""
    vocab = pseudo_vocabulary(VOCAB_SIZE, seed)
    rng = random.Random(seed)
    blocks = []
    for _ in range(BLOCKS):
        terms = [
            f"{vocab[rng.randrange(lo, hi)]}[tiab]"
            for lo, hi, n in SHAPES[shape].values()
            for _ in range(n)
        ]
        stems = [vocab[rng.randrange(1_000, 5_000)] for _ in range(STEMS)]
        terms += [f"{w[: max(4, len(w) - 2)]}*[tiab]" for w in stems]
        blocks.append("(" + " OR ".join(terms) + ")")
    return " AND ".join(blocks[:-1]) + " NOT " + blocks[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shape", choices=tuple(SHAPES), default="topic")
    args = parser.parse_args(argv)
    path = args.dir / f"lexical-{args.docs}"
    if not path.exists():
        started = time.perf_counter()
        build(path, args.docs, SEED, "fast")
        print(f"built {args.docs:,} articles in {time.perf_counter() - started:.0f} s")
    text = strategy(args.shape)
    index = LexicalIndex.open(path)
    plan_ms, count_ms, tree_ms = [], [], []
    tree = None
    for _ in range(args.repeat):
        started = time.perf_counter()
        plan = make_plan(text)
        plan_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        total = index.rank(plan.parsed, k=1).total
        count_ms.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        tree = explain_tree(plan, index, total=total)  # as the search command asks
        tree_ms.append((time.perf_counter() - started) * 1000)
    assert tree is not None
    assert explain_tree(plan, index).count == total
    long = " OR ".join(f"({text})" for _ in range(3))  # ~10,000 characters
    long_ms = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        make_plan(long)
        long_ms.append((time.perf_counter() - started) * 1000)
    clauses = tree.size()
    tree_p50 = statistics.median(tree_ms)
    print(
        f"articles: {index.count():,}; {args.shape} strategy: {len(text):,} characters,"
        f" {clauses} clauses; blocks match {[c.count for c in tree.children]}"
    )
    print(f"parse + plan: {statistics.median(plan_ms):.1f} ms (p50 of {args.repeat})")
    print(f"parse + plan of {len(long):,} characters: {statistics.median(long_ms):.1f} ms")
    print(f"the search's count: {statistics.median(count_ms):.1f} ms; {total:,} articles")
    print(f"explain tree ({clauses} counts): {tree_p50:.0f} ms p50, {max(tree_ms):.0f} ms max")
    index.close()


if __name__ == "__main__":
    main()
