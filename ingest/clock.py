"""How long an ingest took, stage by stage.

A run is a few stages of very different cost (a lexical ingest of seconds, then an
encoding of hours), so one figure for "the run" misleads; and a run that stops (a full
disk, a model that cannot load) still wrote what it committed, so the clock writes each
stage's time into the summary as the stage ends and remembers which one was running.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ingest.summary import IngestSummary


class StageClock:
    """The run's wall time and each stage's, written into the summary as they pass, so
    a run that stops still says how long each part took and which one it stopped in."""

    def __init__(self, summary: IngestSummary) -> None:
        self.summary = summary
        self.started = time.monotonic()
        self.running: str | None = None
        """The stage that was running when one raised (None once each has finished)."""

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        self.running = name
        begun = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - begun)
        self.running = None

    def add(self, name: str, seconds: float) -> None:
        self.summary.stages[name] = self.summary.stages.get(name, 0.0) + seconds

    def stop(self) -> None:
        self.summary.seconds = time.monotonic() - self.started
