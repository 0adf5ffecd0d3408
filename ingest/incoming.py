"""Input files as a run knows them, and files that arrive while it runs.

:class:`InputFile` is one input and its content key (the MD5 the ledger knows it by).
:class:`Incoming` is how a download running beside an ingest hands over each file as
it lands (:mod:`ingest.download_ahead`), so the run parses it at once instead of
waiting for the whole download.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ingest.workers import Arrivals


@dataclass(frozen=True, slots=True)
class InputFile:
    """One input and its content key: ``checksum`` is the MD5 the ledger knows it by."""

    path: Path
    size: int
    checksum: str

    @property
    def name(self) -> str:
        return self.path.name


Finished = Callable[[InputFile, bool], None]
"""Told of each file a run is done with, and whether the store now has it."""


class Incoming:
    """Input files handed to a running ingest as they land: a download beside it.

    The downloading thread calls :meth:`add` for each verified file and :meth:`end` when
    it stops; :meth:`Ingestor.run` starts parsing each file as it comes (after the files
    given on the command line), so the two overlap instead of taking turns, and tells
    ``on_finished`` of every file it is done with, which may then be deleted (see
    ``--delete-downloads``). ``expected``: how many files the download will bring, for
    the progress bar. Files added before the run starts wait for it.
    """

    def __init__(self, expected: int = 0, on_finished: Finished | None = None) -> None:
        self.expected = expected
        self.on_finished = on_finished
        self.added = 0
        self._lock = threading.Lock()
        self._early: list[InputFile] = []
        self._ended = False
        self._feed: Arrivals | None = None
        self._items: dict[Path, InputFile] = {}
        self._done: frozenset[str] = frozenset()
        self._local: frozenset[str] = frozenset()
        self._mine: set[Path] = set()
        self.skipped = 0
        """Files whose content the store had already (under another name)."""

    def add(self, item: InputFile) -> None:
        with self._lock:
            self.added += 1
            if self._feed is None:
                self._early.append(item)
                return
            fate = self._put(item)
        if fate is not None and self.on_finished is not None:
            self.on_finished(item, fate)

    def end(self) -> None:
        with self._lock:
            self._ended = True
            if self._feed is not None:
                self._feed.end()

    def attach(self, feed: Arrivals, items: dict[Path, InputFile], done: frozenset[str]) -> None:
        """Feed ``feed`` from now on (``items``: where the run looks files up by path, the
        run's own files already in it); content the store has (``done``: ledger
        checksums) or the run has already is skipped, not parsed twice."""
        with self._lock:
            self._feed, self._items = feed, items
            self._done, self._local = done, frozenset(i.checksum for i in items.values())
            early, self._early = self._early, []
            fates = [(item, self._put(item)) for item in early]
            if self._ended:
                feed.end()
        for item, fate in fates:
            if fate is not None and self.on_finished is not None:
                self.on_finished(item, fate)

    def finished(self, item: InputFile, in_store: bool) -> None:
        """The run is done with ``item``: ``on_finished`` hears of it if it came from here."""
        with self._lock:
            mine = item.path in self._mine
            self._mine.discard(item.path)
        if mine and self.on_finished is not None:
            self.on_finished(item, in_store)

    def _put(self, item: InputFile) -> bool | None:
        """Hand ``item`` to the run (None), or skip it: True when the store has its
        content, False when one of the run's own files has it (and will apply it)."""
        assert self._feed is not None
        if item.checksum in self._done or item.checksum in self._local:
            self.skipped += 1
            return item.checksum in self._done
        self._mine.add(item.path)
        self._items[item.path] = item  # before the path: the run looks it up when it comes
        self._feed.add(item.path)
        return None
