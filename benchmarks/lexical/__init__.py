"""The lexical index: build, latency, shards, long queries, author keys, field weights.

    python -m benchmarks.lexical [latency] [--docs 100000] [--queries 50]  # build + latency
    python -m benchmarks.lexical shards --docs 10000000 --shards 2 --processes
    python -m benchmarks.lexical long --dir DIR          # WordBudget: quality and speed
    python -m benchmarks.lexical authors --n 50000,200000
    python -m benchmarks.lexical weights                 # field boosts on SciFact

The synthetic corpus and query classes below are shared with the search benchmarks
(``benchmarks.search scale``, ``benchmarks.search sets``, ``benchmarks.update``), which
build homes of the same documents.
"""

from benchmarks.lexical.latency import (
    BATCH,
    CLASSES,
    COMMIT_EVERY,
    VOCAB_SIZE,
    _queries,
    _rss_mb,
    build,
    fast_articles,
)

__all__ = [
    "BATCH",
    "CLASSES",
    "COMMIT_EVERY",
    "VOCAB_SIZE",
    "_queries",
    "_rss_mb",
    "build",
    "fast_articles",
]
