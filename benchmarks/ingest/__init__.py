"""Ingest: its speed against plain lxml loops, downloads, the SQL tables, notices.

    python -m benchmarks.ingest [speed] [--articles 30000] [--jobs 2] [--real DIR]
    python -m benchmarks.ingest download [--files 4] [--articles 10000] [--rate 1.0]
    python -m benchmarks.ingest sql [--articles 30000] [--repeat 3]
    python -m benchmarks.ingest notices [--articles 5000] [--rows 200000]

The citation lists' share of ingest is ``python -m benchmarks.citations``.
"""
