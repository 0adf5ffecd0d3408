"""The query input: Enter submits, up/down walk the persisted history."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.binding import BindingType
from textual.widgets import Input

from medsearch.tui import keys
from medsearch.tui.history import History


class SearchBar(Input):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings("search.")

    def __init__(self, history: History, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = history

    def _recall(self, entry: str | None) -> None:
        if entry is not None:
            self.value = entry
            self.cursor_position = len(entry)

    def action_older(self) -> None:
        self._recall(self.history.older(self.value))

    def action_newer(self) -> None:
        self._recall(self.history.newer())
