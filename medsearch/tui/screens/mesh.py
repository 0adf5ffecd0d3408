"""The MeSH browser: one heading at a time, its tree walkable, its query one key away.

It shows what :func:`medsearch.mesh.browse.open_heading` reads (scope note, entry
terms, allowed subheadings, broader and narrower headings); choosing a broader or
narrower heading opens it, choosing a subheading adds it to the query being built.
The browser returns a typed :class:`MeshChoice`: the query to search at once, or to
put in the search bar for more typing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from medsearch.errors import MedsearchError
from medsearch.mesh.browse import HeadingView, add_to_query, heading_query
from medsearch.tui import keys
from medsearch.tui.screens.dialogs import CLOSE

Loader = Callable[[str], HeadingView | None]
"""Opens a heading by UI or name (through the searcher's thread)."""


@dataclass(frozen=True, slots=True)
class MeshChoice:
    """What the browser returns: ``query`` for the search bar, searched when ``run``."""

    query: str
    run: bool


class MeshScreen(ModalScreen[MeshChoice | None]):
    BINDINGS: ClassVar[list[BindingType]] = [*CLOSE, *keys.bindings("mesh.")]

    def __init__(self, view: HeadingView, load: Loader, query: str = "") -> None:
        super().__init__()
        self.view = view
        self.load = load
        self.query_text = query
        self.tag = "mh"
        self.noexp = False
        self.subheading = ""

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="mesh-box"):
            yield Label("", classes="dialog-title", id="mesh-title")
            with VerticalScroll(id="mesh-about"):
                yield Static("", id="mesh-body")
            yield OptionList(id="mesh-walk")
            yield Static("", id="mesh-query")

    def on_mount(self) -> None:
        self.show(self.view)
        self.query_one("#mesh-walk", OptionList).focus()

    @property
    def fragment(self) -> str:
        """The heading as the query the browser would add."""
        name = self.view.heading.name
        return heading_query(name, self.tag, noexp=self.noexp, subheading=self.subheading)

    def show(self, view: HeadingView) -> None:
        self.view = view
        self.subheading = ""
        h = view.heading
        self.query_one("#mesh-title", Label).update(Text(f"{h.name}  ({h.ui})"))
        body = Text()
        body.append(", ".join(h.tree_numbers) + "\n", style="dim")
        if h.scope_note:
            body.append(h.scope_note + "\n")
        if h.terms:
            body.append("\nEntry terms: ", style="bold")
            body.append("; ".join(h.terms) + "\n")
        self.query_one("#mesh-body", Static).update(body)
        walk = self.query_one("#mesh-walk", OptionList)
        walk.clear_options()
        walk.add_options(
            [Option(Text(f"↑ {name}"), id=f"open:{ui}") for ui, name in view.broader]
            + [Option(Text(f"↓ {name}"), id=f"open:{ui}") for ui, name in view.narrower]
            + [
                Option(Text(f"/ {q.name} ({q.abbreviation})"), id=f"sub:{q.name}")
                for q in h.qualifiers
            ]
        )
        walk.highlighted = 0 if walk.option_count else None
        self.show_query()

    def show_query(self) -> None:
        line = Text("query: ", style="dim").append(self.fragment, style="bold")
        line.append(
            "   s search · a add to query · m [mh]/[majr] · x explode on/off · esc close",
            style="dim",
        )
        self.query_one("#mesh-query", Static).update(line)

    @on(OptionList.OptionSelected, "#mesh-walk")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        kind, _, value = (event.option.id or "").partition(":")
        if kind == "sub":
            self.subheading = "" if self.subheading == value else value
            self.show_query()
        elif kind == "open":
            self.open(value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="mesh", description="heading")
    def open(self, ui: str) -> None:
        try:
            view = self.load(ui)
        except MedsearchError as exc:
            self.app.call_from_thread(self.notify, str(exc), severity="error")
            return
        if view is not None:
            self.app.call_from_thread(self.show, view)

    def action_search(self) -> None:
        self.dismiss(MeshChoice(self.fragment, run=True))

    def action_add(self) -> None:
        self.dismiss(MeshChoice(add_to_query(self.query_text, self.fragment), run=False))

    def action_major(self) -> None:
        self.tag = "majr" if self.tag == "mh" else "mh"
        self.show_query()

    def action_noexp(self) -> None:
        self.noexp = not self.noexp
        self.show_query()


class HeadingPicker(ModalScreen[str | None]):
    """Choose one of an article's MeSH headings to open in the browser."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE

    def __init__(self, headings: list[str]) -> None:
        super().__init__()
        self.headings = headings

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Open a MeSH heading of this article", classes="dialog-title")
            yield OptionList(*(Option(Text(h)) for h in self.headings), id="headings")

    @on(OptionList.OptionSelected)
    def pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.headings[event.option_index])
