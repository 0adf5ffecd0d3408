"""Up/down recall of the queries typed, read from the one search history.

The search history (:mod:`medsearch.history`) records every search the TUI and the CLI
run; this is its recall: the distinct queries typed, newest last, a repeated query
moved to the end instead of appearing twice. Recording is the search's job (in its
worker), so this only remembers what was typed in this session on top. The TUI's former
flat file (``history.txt``) is imported into the history the first time it is opened.
No textual here: the search bar drives it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medsearch.errors import HomeError
from medsearch.paths import Paths

if TYPE_CHECKING:
    from medsearch.history.store import HistoryStore

LIMIT = 1000


class History:
    """The entries plus a cursor for up/down browsing (``older`` / ``newer``)."""

    def __init__(self, entries: list[str], limit: int = LIMIT) -> None:
        self.entries = entries[-limit:]
        self.limit = limit
        self._cursor = len(self.entries)
        self._draft = ""

    @classmethod
    def load(cls, paths: Paths, store: HistoryStore | None = None, limit: int = LIMIT) -> History:
        """The recall of ``paths``'s history (empty when there is none yet), read from
        ``store`` when the caller has it open. A read-only home with only the former flat
        file recalls that file's lines."""
        from medsearch.history.store import open_history

        if store is not None:
            return cls(store.recall(limit), limit)
        reader = open_history(paths, write=False)
        if reader is not None:
            with reader:
                return cls(reader.recall(limit), limit)
        try:
            lines = paths.history_file.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        except OSError as exc:
            raise HomeError(f"cannot read the search history {paths.history_file}: {exc}") from exc
        return cls([" ".join(line.split()) for line in lines if line.strip()], limit)

    def add(self, query: str) -> None:
        """Remember ``query`` for recall (moved to the end if already there)."""
        entry = " ".join(query.split())
        self.reset()
        if not entry:
            return
        if entry in self.entries:
            self.entries.remove(entry)
        self.entries.append(entry)
        del self.entries[: -self.limit]
        self._cursor = len(self.entries)

    def older(self, current: str) -> str | None:
        """The entry before the cursor; ``current`` is kept as the draft to come back to."""
        if self._cursor == len(self.entries):
            self._draft = current
        if self._cursor == 0:
            return None
        self._cursor -= 1
        return self.entries[self._cursor]

    def newer(self) -> str | None:
        """The entry after the cursor, then the draft; None when already at the draft."""
        if self._cursor >= len(self.entries):
            return None
        self._cursor += 1
        if self._cursor == len(self.entries):
            return self._draft
        return self.entries[self._cursor]

    def reset(self) -> None:
        self._cursor = len(self.entries)
        self._draft = ""
