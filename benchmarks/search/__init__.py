"""Search latency: the real Searcher over synthetic homes, small and at scale, and set
queries (the dense side inside a PubMed set).

    python -m benchmarks.search [latency] [--docs 100000] [--queries 200]
    python -m benchmarks.search scale --docs 10000000 --dir DIR
    python -m benchmarks.search sets --home DIR/home [--lexical] | --selector ...
"""
