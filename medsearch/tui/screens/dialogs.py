"""Small modal dialogs that return typed values: filters, the basket's export, a sentence."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select
from textual.widgets.option_list import Option

from medsearch.errors import UsageError
from medsearch.export import FORMATS, suffix_for
from medsearch.records import Article, Filters
from medsearch.tui.render import basket_prompt

CLOSE: list[BindingType] = [Binding("escape", "dismiss", "Cancel", id="dialog.cancel")]


def parse_year(text: str, name: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    if not (text.isdigit() and len(text) == 4):
        raise UsageError(f"{name} must be a four-digit year, not {text!r}")
    return int(text)


def filters_from(
    year_from: str, year_to: str, journal: str, pub_type: str, exclude_retracted: bool = False
) -> Filters:
    """The dialog's fields as :class:`Filters`; empty fields mean no restriction."""
    first, last = parse_year(year_from, "from"), parse_year(year_to, "to")
    if first is not None and last is not None and first > last:
        raise UsageError(f"the year range {first}–{last} is empty")
    return Filters(
        year_from=first,
        year_to=last,
        journals=(journal.strip(),) if journal.strip() else (),
        publication_types=(pub_type.strip(),) if pub_type.strip() else (),
        exclude_retracted=exclude_retracted,
    )


class FiltersScreen(ModalScreen[Filters | None]):
    BINDINGS: ClassVar[list[BindingType]] = CLOSE

    def __init__(self, current: Filters) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        c = self.current
        with Vertical(classes="dialog"):
            yield Label("Filters (empty = any)", classes="dialog-title")
            with Horizontal(classes="row"):
                yield Input(str(c.year_from or ""), placeholder="from year", id="year-from")
                yield Input(str(c.year_to or ""), placeholder="to year", id="year-to")
            yield Input(
                ", ".join(c.journals), placeholder="journal (title or ISO abbrev.)", id="journal"
            )
            yield Input(
                ", ".join(c.publication_types),
                placeholder="publication type, e.g. Review",
                id="pub-type",
            )
            yield Checkbox(
                "Leave out retracted articles", c.exclude_retracted, id="exclude-retracted"
            )
            with Horizontal(classes="buttons"):
                yield Button("Apply", variant="primary", id="apply")
                yield Button("Clear", id="clear")

    def on_mount(self) -> None:
        self.query_one("#year-from", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#apply")
    def apply(self) -> None:
        first, last, journal, pub_type = (
            self.query_one(f"#{i}", Input).value
            for i in ("year-from", "year-to", "journal", "pub-type")
        )
        exclude = self.query_one("#exclude-retracted", Checkbox).value
        try:
            self.dismiss(filters_from(first, last, journal, pub_type, exclude))
        except UsageError as exc:
            self.notify(str(exc), severity="error")

    @on(Button.Pressed, "#clear")
    def clear(self) -> None:
        self.dismiss(Filters())


@dataclass(frozen=True, slots=True)
class ExportRequest:
    fmt: str
    path: Path


class ExportScreen(ModalScreen[ExportRequest | None]):
    """The basket: the marked articles (tab to the list, space or delete unmarks), then
    where and how to export them.

    ``basket`` is the session's own dict, so an article unmarked here is unmarked
    everywhere; the caller redraws its marks when the dialog closes.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        *CLOSE,
        Binding("space,delete", "unmark", "Unmark", id="basket.unmark"),
    ]

    def __init__(self, basket: dict[int, Article], default: Path) -> None:
        super().__init__()
        self.basket = basket
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label(self.title_text(), classes="dialog-title", id="basket-title")
            yield OptionList(
                *(Option(basket_prompt(a), id=f"pmid-{p}") for p, a in self.basket.items()),
                id="basket",
            )
            yield Label("tab to the list: space or delete unmarks", classes="hint")
            yield Select([(f, f) for f in FORMATS], value="bibtex", allow_blank=False, id="format")
            yield Input(str(self.default.with_suffix(suffix_for("bibtex"))), id="path")
            with Horizontal(classes="buttons"):
                yield Button("Export", variant="primary", id="export")

    def on_mount(self) -> None:
        self.query_one("#path", Input).focus()

    def title_text(self) -> str:
        return f"Export {len(self.basket)} marked article(s)"

    def action_unmark(self) -> None:
        listing = self.query_one("#basket", OptionList)
        index = listing.highlighted
        if self.focused is not listing or index is None:
            return
        option_id = listing.get_option_at_index(index).id or ""
        self.basket.pop(int(option_id.removeprefix("pmid-")), None)
        listing.remove_option_at_index(index)
        self.query_one("#basket-title", Label).update(self.title_text())

    @on(Select.Changed, "#format")
    def follow_format(self, event: Select.Changed) -> None:
        """Keep the file suffix in step with the format, unless the user chose their own."""
        path_input = self.query_one("#path", Input)
        path = Path(path_input.value)
        if path.suffix in {suffix_for(f) for f in FORMATS} and isinstance(event.value, str):
            path_input.value = str(path.with_suffix(suffix_for(event.value)))

    @on(Input.Submitted)
    @on(Button.Pressed, "#export")
    def export(self) -> None:
        text = self.query_one("#path", Input).value.strip()
        fmt = self.query_one("#format", Select).value
        if not self.basket:
            self.notify("the basket is empty: nothing to export", severity="warning")
            return
        if not text:
            self.notify("give a file path to export to", severity="error")
            return
        self.dismiss(ExportRequest(fmt=str(fmt), path=Path(text).expanduser()))


class WatchNameScreen(ModalScreen[str | None]):
    """The name to watch the basket under (enter keeps the default)."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE

    def __init__(self, count: int, default: str) -> None:
        super().__init__()
        self.count = count
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(
                f"Watch {self.count} marked article(s) for retractions, expressions of"
                " concern and corrections",
                classes="dialog-title",
            )
            yield Input(self.default, id="watch-name")
            yield Label("each `medsearch update` re-checks them (Watches, F6)", classes="hint")
            with Horizontal(classes="buttons"):
                yield Button("Watch", variant="primary", id="watch")

    def on_mount(self) -> None:
        self.query_one("#watch-name", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#watch")
    def chosen(self) -> None:
        name = self.query_one("#watch-name", Input).value.strip()
        if not name:
            self.notify("give the watch a name", severity="error")
            return
        self.dismiss(name)


class SentencePicker(ModalScreen[str | None]):
    """Choose one abstract sentence to search for sentences like it."""

    BINDINGS: ClassVar[list[BindingType]] = CLOSE

    def __init__(self, sentences: list[str]) -> None:
        super().__init__()
        self.sentences = sentences

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Label("Find sentences like…", classes="dialog-title")
            yield OptionList(*(Option(Text(s)) for s in self.sentences), id="sentences")

    @on(OptionList.OptionSelected)
    def pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.sentences[event.option_index])
