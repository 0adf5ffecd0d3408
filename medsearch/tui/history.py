"""Search history: the queries a researcher typed, recalled with up/down, kept on disk.

One query per line in ``paths.history_file`` (newest last), like a shell's history, so
the file is readable and editable by hand. A repeated query moves to the end instead of
appearing twice. No textual here: the search bar drives it.
"""

from __future__ import annotations

from pathlib import Path

from medsearch.errors import HomeError

LIMIT = 1000


class History:
    """The entries plus a cursor for up/down browsing (``older`` / ``newer``)."""

    def __init__(self, entries: list[str], path: Path | None = None, limit: int = LIMIT) -> None:
        self.entries = entries[-limit:]
        self.path = path
        self.limit = limit
        self._cursor = len(self.entries)
        self._draft = ""

    @classmethod
    def load(cls, path: Path, limit: int = LIMIT) -> History:
        """The history stored at ``path`` (empty when the file does not exist yet)."""
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        except OSError as exc:
            raise HomeError(f"cannot read the search history {path}: {exc}") from exc
        return cls([line for line in lines if line.strip()], path, limit)

    def add(self, query: str) -> None:
        """Remember ``query`` (moved to the end if already there) and save the file."""
        entry = " ".join(query.split())
        self.reset()
        if not entry:
            return
        if entry in self.entries:
            self.entries.remove(entry)
        self.entries.append(entry)
        del self.entries[: -self.limit]
        self._cursor = len(self.entries)
        self.save()

    def save(self) -> None:
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("".join(e + "\n" for e in self.entries), encoding="utf-8")
        except OSError as exc:
            raise HomeError(f"cannot save the search history {self.path}: {exc}") from exc

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
