"""``--explain``'s clause counts before and after sharing clauses, in one process.

    nice -n 5 python -m benchmarks.explain_before_after DIR/lexical-N [REPEAT] [topic|broad]

On an index built by :mod:`benchmarks.explain` (``--dir DIR --docs N``), each round
times the same 205-clause tree three ways, alternating so the machine's load falls on
all three alike: ``main`` (issue 39's first version, replayed: a fresh query builder per
clause and a compiled regex per truncated word), ``shared`` (one builder, each clause
built once: ``QueryBuilder.shared``) and ``shared+sets`` (also a truncated word as the
set of its variations in the index's own dictionary: ``truncation_query(own=...)``, as
``LexicalIndex.counts`` does now). The three trees must be identical. Figures:
BENCHMARKS.md, "Each clause built once".
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tantivy

from benchmarks.explain import strategy
from medsearch.index.lexical import query as builder_module
from medsearch.index.lexical import terms
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.lexical.query import Frequencies, QueryBuilder
from medsearch.query.nodes import ParsedQuery
from medsearch.records import Filters
from medsearch.retrieval.explain import explain_tree
from medsearch.retrieval.query_text import make_plan

MODES = ("main", "shared", "shared+sets")


def main_counts(
    index: LexicalIndex,
    queries: Sequence[ParsedQuery],
    filters: Filters | None = None,
    frequencies: Frequencies | None = None,
) -> list[int]:
    """``LexicalIndex.counts`` as issue 39's first version had it: a builder per clause."""
    caller = filters or Filters()
    searcher = index._index.searcher()
    frequencies = frequencies or index.frequencies(searcher)
    out = []
    for query in queries:
        builder = QueryBuilder(index._schema, index._analyzers, index.ranking, frequencies)
        built = builder.build(query.node, caller, query.filters)
        if built is None:
            out.append(0)
            continue
        plain = tantivy.Query.const_score_query(built, 1.0)
        out.append(int(searcher.search(plain, 1, count=True).count or 0))
    return out


def main(argv: list[str]) -> None:
    path, repeat = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 5
    shape = argv[2] if len(argv) > 2 else "topic"
    index = LexicalIndex.open(path)
    plan = make_plan(strategy(shape))
    total = index.rank(plan.parsed, k=1).total
    truncation, counts = terms.truncation_query, LexicalIndex.counts

    def regex_only(schema: Any, name: str, tokens: Any, variations: Any, own: Any = None) -> Any:
        return truncation(schema, name, tokens, variations)

    times: dict[str, list[float]] = {m: [] for m in MODES}
    trees: dict[str, dict[str, Any]] = {}
    try:
        for _ in range(repeat):
            for mode in MODES:
                chosen = truncation if mode == "shared+sets" else regex_only
                builder_module.truncation_query = chosen  # type: ignore[attr-defined]
                LexicalIndex.counts = main_counts if mode == "main" else counts  # type: ignore[method-assign,assignment]
                started = time.perf_counter()
                tree = explain_tree(plan, index, total=total)
                times[mode].append(time.perf_counter() - started)
                trees[mode] = tree.to_dict()
    finally:
        builder_module.truncation_query = truncation  # type: ignore[attr-defined]
        LexicalIndex.counts = counts  # type: ignore[method-assign]
    print(f"articles {index.count():,}; {shape}; clauses {tree.size()}")
    for mode in MODES:
        shown = [round(t * 1000) for t in times[mode]]
        print(f"{mode:12} p50 {statistics.median(times[mode]) * 1000:.0f} ms {shown}")
    assert trees["main"] == trees["shared"] == trees["shared+sets"], "the trees differ"
    print("trees identical")
    index.close()


if __name__ == "__main__":
    main(sys.argv[1:])
