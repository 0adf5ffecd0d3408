"""What the form of the ranked query costs at scale: one flat sum against dis_max.

    python -m benchmarks.lexical_form --index /work/h10m/home/lexical --queries 60

Times top-1000 searches (the hybrid candidate depth) of the common/mid/rare query
classes of ``benchmarks.lexical`` through the product's ``LexicalIndex.search`` (sharded
or whole, whichever is on disk), the two forms interleaved in random order query by
query, with ``LEGACY_RANKING`` (dis_max per word: a union of unions) as the reference
measured in the same run. On an index written before format 3 the sum runs without the
TITLE_ALONE field, which that index lacks; on synthetic text every document has an
abstract, so that field would match nothing anyway.

Quality is measured separately: ``python -m benchmarks.lexical_weights --no-abstract 0.28``.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from benchmarks.lexical import _queries, _stats
from medsearch.index import lexical_schema as ls
from medsearch.index.lexical_query import LEGACY_RANKING, Ranking
from medsearch.index.lexical_shards import open_lexical

K = 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="a lexical index folder")
    parser.add_argument("--queries", type=int, default=60, help="per class")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    index = open_lexical(args.index, create=False)
    fields = Ranking().fields
    if index.version < 3:
        fields = tuple((name, boost) for name, boost in fields if name != ls.TITLE_ALONE)
    forms = {"dis_max (format 2)": LEGACY_RANKING, "flat sum (now)": Ranking(fields=fields)}
    rng = random.Random(args.seed)
    print(f"{args.index}: {index.count():,} documents, format {index.version}, top-{K}")
    for cls, queries in _queries(args.seed, args.queries).items():
        ms: dict[str, list[float]] = {name: [] for name in forms}
        for words in queries:
            order = list(forms.items())
            rng.shuffle(order)
            for name, ranking in order:
                started = time.perf_counter()
                index.search(" ".join(words), k=K, snippets=0, syntax=False, ranking=ranking)
                ms[name].append((time.perf_counter() - started) * 1000)
        got = {name: _stats(v) for name, v in ms.items()}
        ref, now = got["dis_max (format 2)"], got["flat sum (now)"]
        for name, s in got.items():
            print(f"  {cls:6} {name:20} p50 {s['p50']:7.1f} ms  p95 {s['p95']:7.1f} ms")
        print(
            f"  {cls:6} {'ratio (sum / dis_max)':20} p50 x{now['p50'] / ref['p50']:.2f}"
            f"      p95 x{now['p95'] / ref['p95']:.2f}"
        )
    index.close()


if __name__ == "__main__":
    main()
