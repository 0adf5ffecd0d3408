"""The SQLite article store (see :mod:`medsearch.store.db`)."""

from medsearch.store.db import ApplyCounts, Store
from medsearch.store.ledger import LedgerEntry

__all__ = ["ApplyCounts", "LedgerEntry", "Store"]
