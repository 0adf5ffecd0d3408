"""The ranked list: one option per hit, headings (cite mode's sentences) in between."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from medsearch.records import Hit
from medsearch.tui.render import hit_prompt
from medsearch.tui.widgets.search_bar import TypesIntoQuery


@dataclass(frozen=True, slots=True)
class Heading:
    """A non-selectable row (a citing sentence above its suggestions)."""

    text: Text


Row = Hit | Heading


class ResultsList(TypesIntoQuery, OptionList):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.rows: list[Row] = []
        self.terms: frozenset[str] = frozenset()

    def show(
        self,
        rows: Sequence[Row],
        *,
        marked: Collection[int],
        terms: frozenset[str],
        keep: int | None = None,
    ) -> None:
        """Replace the rows; the highlight stays on PMID ``keep`` if it is still listed."""
        self.rows = list(rows)
        self.terms = terms
        self.set_options(self._option(i, row, marked) for i, row in enumerate(self.rows))
        hits = [i for i, row in enumerate(self.rows) if isinstance(row, Hit)]
        kept = [i for i in hits if keep is not None and self._hit(i).pmid == keep]
        chosen = kept or hits
        self.highlighted = chosen[0] if chosen else None

    def _option(self, index: int, row: Row, marked: Collection[int]) -> Option:
        if isinstance(row, Heading):
            return Option(row.text, id=f"row-{index}", disabled=True)
        return Option(
            hit_prompt(row, marked=row.pmid in marked, terms=self.terms), id=f"row-{index}"
        )

    def _hit(self, index: int) -> Hit:
        row = self.rows[index]
        assert isinstance(row, Hit)
        return row

    @property
    def current(self) -> Hit | None:
        index = self.highlighted
        if index is None or index >= len(self.rows):
            return None
        row = self.rows[index]
        return row if isinstance(row, Hit) else None

    @property
    def hits(self) -> list[Hit]:
        return [row for row in self.rows if isinstance(row, Hit)]

    def refresh_marks(self, marked: Collection[int]) -> None:
        """Redraw the mark column after the basket changed."""
        for index, row in enumerate(self.rows):
            if isinstance(row, Hit):
                prompt = hit_prompt(row, marked=row.pmid in marked, terms=self.terms)
                self.replace_option_prompt_at_index(index, prompt)
