"""The query input: Enter submits, up/down walk the persisted history, a paste is whole,
and characters typed over the results land here (see :meth:`SearchBar.type_ahead`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.suggester import Suggester
from textual.widget import Widget
from textual.widgets import Input

from medsearch.tui import keys
from medsearch.tui.backend import Backend
from medsearch.tui.history import History

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher


class TypedAhead(Message):
    """A printable key no binding claims, typed over the results or the article: the
    start of a new query, so it goes to the query and never to an action."""

    def __init__(self, character: str) -> None:
        self.character = character
        super().__init__()


if TYPE_CHECKING:
    _Mixin = Widget
else:
    _Mixin = object  # a Widget base in the MRO would drop OptionList's component classes


class TypesIntoQuery(_Mixin):
    """Mixin for the widgets a new query is typed over (the results, the article): a
    printable key no binding claims becomes :class:`TypedAhead`, never an action.

    Keys reach the focused widget before the screen's (non-priority) bindings are
    checked, so a key bound to an action (space, ``/``, or a letter the user remapped)
    is left to its binding, unless a query is already being typed: keys of a burst that
    were on their way here before the focus moved to the query (a fast typist, a
    terminal delivering several keys at once) are part of it, spaces included.
    """

    _typing = False

    def on_key(self, event: events.Key) -> None:
        if not event.is_printable or event.character is None:
            return
        if not self._typing and event.key in self.screen.active_bindings:
            return
        self._typing = True
        event.stop()
        event.prevent_default()
        self.post_message(TypedAhead(event.character))

    def on_focus(self) -> None:
        self._typing = False


class MeshSuggester(Suggester):
    """Completes a MeSH heading typed in quotes (``"neopl`` -> ``"Neoplasms"[mh]``), read
    from the store on the searcher's thread without blocking the UI; nothing when MeSH is
    not installed or the corpus is not open yet."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(use_cache=True, case_sensitive=True)
        self.backend = backend

    async def get_suggestion(self, value: str) -> str | None:
        if '"' not in value:
            return None

        def lookup(searcher: Searcher) -> str | None:
            from medsearch.mesh.browse import complete

            return complete(searcher.store.conn, value) if searcher.mesh() else None

        pending = self.backend.submit(lookup)
        return None if pending is None else await asyncio.wrap_future(pending)


class SearchBar(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        *keys.bindings("search."),
        # Enter typed before the app took the terminal over was read by the terminal's
        # line discipline, which turns it into a line feed: ctrl+j. It submits too, so a
        # query typed (and entered) while the app starts runs.
        Binding("ctrl+j", "submit", "Run the query", show=False),
    ]

    def __init__(self, history: History, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.history = history
        self._typing_ahead = False

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

    def type_ahead(self, character: str) -> None:
        """A character typed while the results or the article had focus.

        The first one starts a new query (the old one stays in the history: up recalls
        it); the ones that follow before the focus has arrived here are appended.
        Focusing an ``Input`` selects its text, which would let the next keystroke
        replace what was just typed, so this one focus selects nothing.
        """
        if self.has_focus or self._typing_ahead:
            self.insert_text_at_cursor(character)
            return
        self.history.reset()
        self.value = character
        self.cursor_position = len(character)
        self._typing_ahead = True
        self.select_on_focus = False
        self.focus()

    def on_focus(self) -> None:
        self._typing_ahead = False

    def on_blur(self) -> None:
        self.select_on_focus = True  # back to the query with escape or / selects it
