"""The two one-line bars: modes and filters above the query, corpus and activity below."""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widgets import Static

from medsearch.records import Filters

MODE_NAMES = {"search": "Search", "similar": "Similar", "sentences": "Sentences", "cite": "Cite"}
MODE_KEYS = {"search": "f2", "similar": "f3", "sentences": "f4", "cite": "f5"}


def filters_label(filters: Filters) -> str:
    parts: list[str] = []
    if filters.year_from is not None or filters.year_to is not None:
        parts.append(f"{filters.year_from or ''}–{filters.year_to or ''}")
    parts.extend(filters.journals)
    parts.extend(filters.publication_types)
    if filters.exclude_retracted:
        parts.append("no retracted")
    return ", ".join(parts)


class ModeBar(Static):
    mode: reactive[str] = reactive("search")
    filters: reactive[Filters] = reactive(Filters)
    summary: reactive[str] = reactive("")

    def render(self) -> Text:
        out = Text()
        for name, label in MODE_NAMES.items():
            style = "bold reverse" if name == self.mode else "dim"
            out.append(f" {MODE_KEYS[name]} {label} ", style=style)
            out.append(" ")
        label = filters_label(self.filters)
        out.append(f"  filters: {label}" if label else "  no filters (ctrl+f)", style="italic")
        if self.summary:
            out.append(f"   {self.summary}", style="cyan")
        return out


class StatusBar(Static):
    corpus: reactive[str] = reactive("opening corpus…")
    models: reactive[str] = reactive("")
    activity: reactive[str] = reactive("")
    basket: reactive[int] = reactive(0)
    sort: reactive[str] = reactive("relevance")

    def render(self) -> Text:
        out = Text(f" {self.corpus}")
        if self.models:
            out.append(f" · {self.models}")
        if self.activity:
            out.append(f" · ⟳ {self.activity}", style="bold yellow")
        out.append(f" · basket {self.basket}", style="bold" if self.basket else "dim")
        if self.sort != "relevance":
            out.append(f" · sorted by {self.sort} (ctrl+b)", style="bold")
        return out
