"""``medsearch serve``: one data home's searcher kept warm behind a local HTTP service.

:mod:`~medsearch.serve.access` (the token), :mod:`~medsearch.serve.state` (the warm
searcher and its reopening after a writer commits), :mod:`~medsearch.serve.api` (the
JSON API, the same fields as ``--json``), :mod:`~medsearch.serve.eutils` (NCBI's
E-utilities for PubMed), :mod:`~medsearch.serve.app` (the Starlette application),
:mod:`~medsearch.serve.run` (uvicorn on a Unix socket or 127.0.0.1) and
:mod:`~medsearch.serve.client` (what the CLI asks a running service). docs/service.md
describes the whole.
"""
