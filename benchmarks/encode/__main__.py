from benchmarks.modes import run_mode

run_mode(
    "benchmarks.encode",
    {"cpu": "benchmarks.encode.cpu", "gpu": "benchmarks.encode.gpu"},
    default="cpu",
)
