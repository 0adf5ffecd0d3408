"""The store's zstd dictionary, trained once on the corpus's own records.

Records compressed one at a time are ~45-55 GB at 40M citations, ~35% less with a
dictionary trained on the corpus. It is trained from the first :data:`TRAIN_RECORDS`
records a store receives, stored in the ``dictionaries`` table in the same transaction
as the first records that use it, and never changed after: every later record is
compressed with it. Every stored dictionary stays registered for decoding.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from medsearch.store import codec

if TYPE_CHECKING:
    from medsearch.store.rows import Row

TRAIN_RECORDS = 5_000
"""Records the dictionary is trained on (~17 MB of JSON held until then, ~0.4 s to train;
1,000 measured within a point of 4,000). A corpus smaller than this keeps plain zstd."""
RECOMPRESS_MAX = 2 * TRAIN_RECORDS
"""Once trained, a store this small has its earlier records rewritten with the dictionary
(~0.1 s); a larger one (an old store being extended) keeps them as they are."""


class Dictionary:
    """The dictionary of one store connection. ``execute`` and ``write`` are the
    store's own, which turn a full disk into a :class:`~medsearch.errors.DiskFullError`."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        execute: Callable[[str, tuple[Any, ...]], sqlite3.Cursor],
        write: Callable[[str, Iterable[tuple[Any, ...]]], None],
    ) -> None:
        self.conn = conn
        self._execute = execute
        self._write = write
        self._samples: list[bytes] = []
        self.id = 0
        """The dictionary new records are compressed with (0: none yet, plain zstd)."""
        self.load()

    def load(self) -> None:
        """Register every stored dictionary for decoding; the newest one compresses. Also
        after a rollback, which takes a dictionary trained in it away. A read-only store
        from before migration 3 simply has none."""
        has_table = self.conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='dictionaries'"
        ).fetchone()
        newest = 0
        if has_table:
            for (data,) in self.conn.execute(
                "SELECT data FROM dictionaries ORDER BY created_at, rowid"
            ):
                newest = codec.register(data)
        self.id = newest

    def data(self) -> bytes | None:
        """The dictionary's bytes, for parser processes to compress with (None: none yet)."""
        return codec.dictionary_bytes(self.id) if self.id else None

    def learn(self, prepared: Sequence[Row], count: Callable[[], int]) -> None:
        """Collect the first records; at :data:`TRAIN_RECORDS`, train and store the
        dictionary (inside the caller's transaction: it lands with the records using it).
        ``count``: the store's article count, which says whether to rewrite the records
        stored so far with it."""
        room = TRAIN_RECORDS - len(self._samples)
        self._samples.extend(codec.plain(row[4]) for row in prepared[:room])
        if len(self._samples) < TRAIN_RECORDS:
            return
        data = codec.train(self._samples)
        self._samples = []
        if data is None:
            return
        dict_id = codec.register(data)
        now = datetime.now(UTC).isoformat(timespec="seconds")
        self._execute(
            "INSERT OR IGNORE INTO dictionaries(id, data, records, created_at) VALUES (?,?,?,?)",
            (dict_id, data, TRAIN_RECORDS, now),
        )
        self.id = dict_id
        if count() <= RECOMPRESS_MAX:
            rows = self.conn.execute("SELECT pmid, data FROM records").fetchall()
            self._write(
                "UPDATE records SET data = ? WHERE pmid = ?",
                [(codec.compress(codec.decompress(blob), dict_id), p) for p, blob in rows],
            )
