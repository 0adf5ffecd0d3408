from benchmarks.modes import run_mode

run_mode(
    "benchmarks.ingest",
    {
        "speed": "benchmarks.ingest.speed",
        "download": "benchmarks.ingest.download",
        "sql": "benchmarks.ingest.sql",
        "notices": "benchmarks.ingest.notices",
    },
    default="speed",
)
