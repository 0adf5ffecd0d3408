"""Every binding with its id and current key (after the user's ``[keys]`` remapping)."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from medsearch.tui.keys import SPECS, Keymap


def help_table(keymap: Keymap, config_file: str) -> Table:
    table = Table(
        title="Keys",
        caption=Text(f'Remap any id in {config_file}, table [keys]: "article.mark" = "m"'),
        expand=True,
    )
    table.add_column("key", style="bold green", no_wrap=True)
    table.add_column("does")
    table.add_column("where", style="dim")
    table.add_column("id", style="dim", no_wrap=True)
    rows = [(keymap.key_for(s), s.description, s.where, s.id) for s in SPECS] + [
        ("enter", "Run the query / read the highlighted article", "search bar, results", ""),
        ("typing", "A new query in the search bar", "results, detail", ""),
        ("tab", "Next pane", "everywhere", ""),
        ("escape", "Back to the search bar / close a dialog", "everywhere", ""),
    ]
    for row in rows:  # Text: "[mh] / [majr]" read as markup would show " / "
        table.add_row(*(Text(cell) for cell in row))
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,f1,q", "dismiss", "Close", id="help.close")
    ]

    def __init__(self, keymap: Keymap, config_file: str) -> None:
        super().__init__()
        self.keymap = keymap
        self.config_file = config_file

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_table(self.keymap, self.config_file))
