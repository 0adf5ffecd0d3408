"""Saved searches ("watches"): a query kept in the data home, and the articles each
update brings that it matches.

:mod:`~medsearch.watches.book` keeps watches and their hits in ``watches.sqlite`` (user
state, apart from the corpus store); :mod:`~medsearch.watches.finder` decides what is new
from the store's per-file change rows; :mod:`~medsearch.watches.runner` runs every
watch and writes the digest and the Atom feeds (:mod:`~medsearch.watches.feed`).
"""
