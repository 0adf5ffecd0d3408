"""The terminal UI: the only package that imports textual.

Widgets draw; :mod:`medsearch.tui.jobs` (plain functions over a ``Searcher``) does the
work; :mod:`medsearch.tui.backend` runs it off the UI thread. No retrieval logic lives
here: everything a screen shows came back from the same ``Searcher`` the CLI calls.
"""
