from benchmarks.modes import run_mode

run_mode(
    "benchmarks.lexical",
    {
        "latency": "benchmarks.lexical.latency",
        "shards": "benchmarks.lexical.shards",
        "long": "benchmarks.lexical.long_queries",
        "authors": "benchmarks.lexical.authors",
        "weights": "benchmarks.lexical.weights",
    },
    default="latency",
)
