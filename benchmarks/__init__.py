"""Benchmarks: one command per subsystem, each figure beside a reference from the same run.

    python -m benchmarks.ingest [speed|download|sql|notices]
    python -m benchmarks.citations parse|ingest|stages|graph|dois|signals
    python -m benchmarks.footprint
    python -m benchmarks.lexical [latency|shards|long|authors|weights]
    python -m benchmarks.search [latency|scale|sets]   (the Searcher small, at 10M, set queries)
    python -m benchmarks.mesh
    python -m benchmarks.vectors
    python -m benchmarks.sentence_index [recall|scale]
    python -m benchmarks.encode [cpu|gpu]
    python -m benchmarks.rerank [speed|quality]
    python -m benchmarks.tui
    python -m benchmarks.history [recording|translation]
    python -m benchmarks.update [daily|references]
    bash benchmarks/gpu.sh [check|encode|cores]  (on a GPU or many-core machine)

``synth``, ``real_records`` and ``sentence_data`` write the data they measure on;
docs/development.md says more, BENCHMARKS.md holds the current figures.
"""
