"""Encoding: the models on a CPU, and the vector stage on a GPU.

    python -m benchmarks.encode [cpu] [--base]         # articles/s, query and pair latency
    python -m benchmarks.encode gpu                    # one CUDA GPU (benchmarks/gpu.sh)
    python -m benchmarks.encode gpu --tiny --articles 300   # the same code on any machine

Both build their models on the machine (random weights of the real shapes), so they run
offline and measure what the shape costs.
"""
