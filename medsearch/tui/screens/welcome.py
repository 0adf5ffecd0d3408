"""The first screen of an empty data home: how to get a corpus, as lines to copy."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

COMMANDS: tuple[tuple[str, str], ...] = (
    ("medsearch ingest --download baseline --limit 1", "fetch and index one PubMed baseline file"),
    ("medsearch ingest PATH", "index PubMed XML files (.xml / .xml.gz) you already have"),
    ("scripts/start", "from a fresh clone: set up, ingest, then open this app"),
)


def welcome_text(home: str) -> Text:
    out = Text()
    out.append("Welcome to medsearch\n\n", style="bold")
    out.append("There is no corpus in ")
    out.append(home, style="italic")
    out.append(" yet. Ingest one from a shell, then press r here:\n\n")
    for command, why in COMMANDS:
        out.append(f"    {command}\n", style="bold green")
        out.append(f"        {why}\n\n", style="dim")
    out.append("Searches run on the words alone (lexical) until the vectors are built;\n")
    out.append("the status bar says which kind of search you get.")
    return out


class WelcomeScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "retry", "Look again", id="welcome.retry"),
        Binding("c", "copy", "Copy the first command", id="welcome.copy"),
        Binding("q", "app.quit", "Quit", id="welcome.quit"),
    ]

    def __init__(self, home: str) -> None:
        super().__init__()
        self.home = home

    def compose(self) -> ComposeResult:
        with VerticalScroll(), Center():
            yield Static(welcome_text(self.home), id="welcome-text")
        yield Footer()

    def action_retry(self) -> None:
        self.dismiss()
        self.app.call_later(self.app.run_action, "reopen")

    def action_copy(self) -> None:
        self.app.copy_to_clipboard(COMMANDS[0][0])
        self.notify(f"copied: {COMMANDS[0][0]}")
