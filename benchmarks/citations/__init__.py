"""The citation graph's measurements: reading reference lists, the graph at scale,
DOI-only references, and the citation signals in ``similar`` and ``cite``.

    python -m benchmarks.citations parse|ingest|stages|graph ...
    python -m benchmarks.citations dois --articles 200000 --lookups 100000
    python -m benchmarks.citations signals [--home HOME | --synthetic 5000]
"""
