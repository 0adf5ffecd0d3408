from benchmarks.modes import run_mode

run_mode(
    "benchmarks.search",
    {
        "latency": "benchmarks.search.latency",
        "scale": "benchmarks.search.scale",
        "sets": "benchmarks.search.sets",
        "command": "benchmarks.search.command",
    },
    default="latency",
)
