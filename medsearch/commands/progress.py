"""Progress for the CLI (the :class:`medsearch.progress.Progress` protocol): rich bars
on a terminal, plain lines in a log.

A full PubMed ingest runs for hours, often under ``nohup`` or a scheduler with stderr
in a file. rich draws nothing there until the bars stop (then one frame, cut to 80
columns), so the log says nothing for hours; :class:`LineProgress` writes one plain
line per task every :data:`LINE_SECONDS` and when it finishes.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TextIO

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


LINE_SECONDS = 30.0
"""How often :class:`LineProgress` reports a running task."""


@dataclass
class _Line:
    description: str
    total: int | None
    started: float
    reported: float
    done: int = 0


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class LineProgress:
    """Progress as plain lines, for a stderr that is not a terminal."""

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        interval: float = LINE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self.clock = clock
        self._tasks: dict[str, _Line] = {}

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, key: str, description: str, total: int | None = None) -> None:
        now = self.clock()
        self._tasks[key] = _Line(description, total, now, now)

    def advance(self, key: str, amount: int = 1) -> None:
        task = self._tasks.get(key)
        if task is not None:
            task.done += amount
            self._maybe_report(task)

    def update(self, key: str, *, completed: int | None = None, total: int | None = None) -> None:
        task = self._tasks.get(key)
        if task is not None:
            if completed is not None:
                task.done = completed
            if total is not None:
                task.total = total
            self._maybe_report(task)

    def describe(self, key: str, description: str) -> None:
        if key in self._tasks:
            self._tasks[key].description = description

    def finish(self, key: str) -> None:
        task = self._tasks.pop(key, None)
        if task is not None and (task.done or task.total):
            self._write(f"{task.description}: {task.done:,} done{self._pace(task, final=True)}")

    def message(self, text: str) -> None:
        self._write(text)

    def _maybe_report(self, task: _Line) -> None:
        if self.clock() - task.reported < self.interval:
            return
        task.reported = self.clock()
        of = ""
        if task.total:
            of = f" of {task.total:,} ({100 * task.done / task.total:.0f}%)"
        self._write(f"{task.description}: {task.done:,}{of}{self._pace(task)}")

    def _pace(self, task: _Line, *, final: bool = False) -> str:
        elapsed = self.clock() - task.started
        if elapsed <= 0 or not task.done:
            return ""
        rate = task.done / elapsed
        text = f", {rate:,.0f}/s" if rate >= 10 else f", {rate:.2g}/s"
        if final:
            return f" in {_duration(elapsed)}{text}"
        if task.total and task.total > task.done:
            text += f", {_duration((task.total - task.done) / rate)} left"
        return text

    def _write(self, line: str) -> None:
        print(line, file=self.stream, flush=True)


def cli_progress(*, enabled: bool = True) -> RichProgress | LineProgress:
    """Bars on a terminal, lines in a log; ``enabled=False`` (``--json``) shows nothing."""
    console = Console(stderr=True)
    if enabled and not console.is_terminal:
        return LineProgress()
    return RichProgress(console, enabled=enabled)
