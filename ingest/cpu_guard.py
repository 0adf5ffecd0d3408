"""Whether ``ingest --device auto`` encodes a backlog on a machine without a GPU.

A CPU's rate differs by two orders of magnitude between machines and profiles (~2
articles/s with sentences for MedCPT on 2 cores, hundreds for minilm on many), so no
article count is the right limit. The vector stage times this machine instead: it
encodes the first :data:`PROBE_ARTICLES` waiting articles (their vectors and their
abstract sentences, committed and kept like any others), extrapolates to the whole
backlog, and goes on only if that fits the time limit (``[ingest] cpu_encode_minutes``).
Otherwise lexical search is ready, the rest waits for ``--device cpu``, a GPU or
NCBI's vectors, and the summary says what the full encode would take.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest.encode_pipeline import Rate
from medsearch.errors import MedsearchError

PROBE_ARTICLES = 32
"""Articles encoded to time the CPU: ~15 s at the slowest rate measured (2 cores, MedCPT
with sentences), a fraction of a second with minilm on a larger machine."""


@dataclass(frozen=True)
class Estimate:
    """What the probe measured, and what the backlog would take at that rate."""

    probed: int
    """Articles encoded to time the machine (with their abstract sentences)."""
    seconds: float
    """What encoding them took."""
    backlog: int
    """Articles that waited when the stage started, the probed ones included."""

    @property
    def remaining(self) -> int:
        return max(self.backlog - self.probed, 0)

    @property
    def total_seconds(self) -> float:
        """The whole backlog at the probe's rate: what the limit is weighed against."""
        return self.backlog * self.seconds / max(self.probed, 1)

    @property
    def remaining_seconds(self) -> float:
        return self.remaining * self.seconds / max(self.probed, 1)


def measured(rates: Sequence[Rate], backlog: int) -> Estimate:
    """The probe's estimate from its passes' rates (articles first). Their commits are
    left out: one per pass is a fixed cost here, while a long run spaces them to a tenth
    of its time. The first batch's warm-up stays in, so the estimate errs long."""
    seconds = sum(r.seconds - r.busy.get("commit", 0.0) for r in rates)
    return Estimate(rates[0].articles if rates else 0, max(seconds, 0.0), backlog)


def cpu_only(device: str) -> bool:
    """Whether ``device`` leaves the choice to medsearch (``auto``) on a machine whose
    only device for it is the CPU: the one case the guard weighs."""
    if device.strip().lower() != "auto":
        return False
    from medsearch.models.device import detect, resolve_devices

    return all(d == "cpu" for d in resolve_devices(device, detect()))


def duration(seconds: float) -> str:
    """``~40 s``, ``~12 min``, ``~5.2 h``, ``~3 days``: an estimate, read at a glance."""
    if seconds < 90:
        return f"~{seconds:,.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:,.0f} min"
    if seconds < 48 * 3600:
        return f"~{seconds / 3600:,.1f} h"
    return f"~{seconds / 86400:,.0f} days"


def limit_text(minutes: float) -> str:
    return f"{minutes:g}-minute"


def going_on(estimate: Estimate, *, sentences: bool = True) -> str:
    """Said before the rest of an allowed encode starts, and kept in the summary: one
    figure, the time still to come (the probe's own seconds beside it read as a second
    estimate)."""
    return (
        f"encoding the other {estimate.remaining:,} articles"
        f"{' and their abstract sentences' if sentences else ''}"
        f" on this CPU: {duration(estimate.remaining_seconds)} more, at the rate of the first"
        f" {estimate.probed:,}"
    )


def stopped(estimate: Estimate, minutes: float) -> str:
    """Why the stage stopped after the probe, what the encode would take, what else
    there is."""
    return (
        f"{estimate.remaining:,} articles (and their abstract sentences) wait to be encoded"
        f" and this machine has no GPU: at the rate measured on the first {estimate.probed:,}"
        f" ({estimate.seconds:,.1f} s, kept), encoding all {estimate.backlog:,} would take"
        f" {duration(estimate.total_seconds)} here, past the {limit_text(minutes)} limit"
        " (cpu_encode_minutes under [ingest] in config.toml), so the rest was not started."
        " Lexical search works now; for semantic search import NCBI's MedCPT vectors"
        " (`medsearch ingest --embeddings DIR_OR_URL`), encode on a machine with a GPU, or"
        " run `medsearch ingest --device cpu` to encode here anyway (resumable: Ctrl-C"
        " keeps what is done)"
    )


class CpuLimitError(MedsearchError):
    """The probe's estimate is past the limit and the caller needs every vector to go
    on (``eval`` measures them): an error, where ``ingest`` leaves lexical search ready."""


def refused(estimate: Estimate, minutes: float, command: str) -> str:
    """Why ``command`` (which needs the whole backlog encoded) stops after the probe."""
    return (
        f"encoding all {estimate.backlog:,} documents would take {duration(estimate.total_seconds)}"
        f" on this CPU (timed on the first {estimate.probed:,}, which are kept), past the"
        f" {limit_text(minutes)} limit (cpu_encode_minutes under [ingest] in config.toml):"
        f" run `medsearch {command} ... --device cpu` to encode them anyway (resumable; the"
        " vectors are kept for the next run), or use a machine with a GPU"
    )
