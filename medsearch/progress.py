"""Progress reporting for long jobs, independent of who draws it.

Long jobs (ingest, download, encoding, evaluation) take a :class:`Progress` and report
through it; the CLI passes a rich implementation, the TUI its own widgets, tests and
scripts :class:`NullProgress`.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, key: str, description: str, total: int | None = None) -> None:
        """Begin a task; ``total`` is None when the size is unknown (a counter)."""

    def advance(self, key: str, amount: int = 1) -> None: ...

    def update(
        self, key: str, *, completed: int | None = None, total: int | None = None
    ) -> None: ...

    def finish(self, key: str) -> None: ...

    def describe(self, key: str, description: str) -> None:
        """Change a running task's description (live rates: tokens/s, devices)."""

    def message(self, text: str) -> None:
        """A line for the user (a skipped file, a warning) that should not break the bars."""


class NullProgress:
    """Reports nothing; keeps messages so tests and scripts can look at them."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.descriptions: dict[str, str] = {}

    def start(self, key: str, description: str, total: int | None = None) -> None:
        pass

    def advance(self, key: str, amount: int = 1) -> None:
        pass

    def update(self, key: str, *, completed: int | None = None, total: int | None = None) -> None:
        pass

    def finish(self, key: str) -> None:
        pass

    def describe(self, key: str, description: str) -> None:
        self.descriptions[key] = description

    def message(self, text: str) -> None:
        self.messages.append(text)
