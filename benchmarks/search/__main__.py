from benchmarks.modes import run_mode

run_mode(
    "benchmarks.search",
    {
        "latency": "benchmarks.search.latency",
        "scale": "benchmarks.search.scale",
        "sets": "benchmarks.search.sets",
        "strategy": "benchmarks.search.strategy",
        "command": "benchmarks.search.command",
    },
    default="latency",
)
