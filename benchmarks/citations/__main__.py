from benchmarks.modes import run_mode

run_mode(
    "benchmarks.citations",
    {
        "reading": "benchmarks.citations.reading",
        "dois": "benchmarks.citations.dois",
        "signals": "benchmarks.citations.signals",
        "texts": "benchmarks.citations.texts",
    },
    default="reading",
)
