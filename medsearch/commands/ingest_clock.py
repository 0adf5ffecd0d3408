"""How long an ``ingest`` took, stage by stage, and how it ended, for its summary.

A run is a few stages of very different cost (a lexical ingest of seconds, then an
encoding of hours), so one figure for "the run" misleads; and a run that stops (a full
disk, a model that cannot load) still wrote what it committed, which a script reading
``--json`` needs to know.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from medsearch.commands.common import failure
from medsearch.errors import MedsearchError

if TYPE_CHECKING:
    from ingest.pipeline import IngestSummary


class IngestFailed(MedsearchError):
    """Some inputs failed to parse; the others are in the store and the index."""


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

    def report(
        self, error: BaseException | None, *, stopped_in: str | None = None
    ) -> dict[str, object]:
        """``--json``'s object: the summary, and how the command ends (``error`` None
        and ``exit_status`` 0 for a run that did everything)."""
        message, status = failure(error) if error is not None else (None, 0)
        out = {**self.summary.to_dict(), "error": message, "exit_status": status}
        if error is not None and stopped_in is not None:
            out["stopped_in"] = stopped_in
        return out
