"""The SQLite article store (see :mod:`medsearch.store.db`)."""

from medsearch.store.db import ApplyCounts, LedgerEntry, Store

__all__ = ["ApplyCounts", "LedgerEntry", "Store"]
