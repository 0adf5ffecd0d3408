"""The query input: Enter submits, up/down walk the persisted history, a paste is whole."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import events
from textual.binding import BindingType
from textual.widgets import Input

from medsearch.tui import keys
from medsearch.tui.history import History


class SearchBar(Input):
    BINDINGS: ClassVar[list[BindingType]] = keys.bindings("search.")

    def __init__(self, history: History, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = history

    def _on_paste(self, event: events.Paste) -> None:
        """A pasted paragraph is one query, its lines joined by spaces.

        Textual's ``Input`` keeps only the first line of a paste, and an abstract copied
        from a PDF or a web page breaks every line: the search would read a fragment.
        """
        event.prevent_default()  # not Input's own handler as well
        event.stop()
        text = " ".join(event.text.split())
        if not text:
            return
        if self.selection.is_empty:
            self.insert_text_at_cursor(text)
        else:
            self.replace(text, *self.selection)

    def _recall(self, entry: str | None) -> None:
        if entry is not None:
            self.value = entry
            self.cursor_position = len(entry)

    def action_older(self) -> None:
        self._recall(self.history.older(self.value))

    def action_newer(self) -> None:
        self._recall(self.history.newer())
