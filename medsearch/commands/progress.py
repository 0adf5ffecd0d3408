"""Rich progress bars for the CLI (the :class:`medsearch.progress.Progress` protocol)."""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import ProgressColumn as _Column


class RateColumn(_Column):
    """Items per second, the number a user watching a long ingest wants."""

    def render(self, task: Any) -> Any:
        from rich.text import Text

        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f}/s" if speed else "", style="progress.data.speed")


class RichProgress:
    def __init__(self, console: Console | None = None, *, enabled: bool = True) -> None:
        self.console = console or Console(stderr=True)
        self._bars = Progress(
            SpinnerColumn(),
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            RateColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
            disable=not enabled,
            transient=False,
        )
        self._tasks: dict[str, TaskID] = {}

    def __enter__(self) -> RichProgress:
        self._bars.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._bars.stop()

    def start(self, key: str, description: str, total: int | None = None) -> None:
        if key in self._tasks:
            self._bars.reset(self._tasks[key], total=total, description=description)
        else:
            self._tasks[key] = self._bars.add_task(description, total=total)

    def advance(self, key: str, amount: int = 1) -> None:
        if key in self._tasks:
            self._bars.advance(self._tasks[key], amount)

    def update(self, key: str, *, completed: int | None = None, total: int | None = None) -> None:
        if key in self._tasks:
            self._bars.update(self._tasks[key], completed=completed, total=total)

    def describe(self, key: str, description: str) -> None:
        if key in self._tasks:
            self._bars.update(self._tasks[key], description=description)

    def finish(self, key: str) -> None:
        if key in self._tasks:
            task = self._tasks[key]
            self._bars.update(task, total=self._bars.tasks[task].completed)
            self._bars.stop_task(task)

    def message(self, text: str) -> None:
        self._bars.console.print(text, markup=False, highlight=False, soft_wrap=True)
