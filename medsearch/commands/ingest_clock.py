"""How an ``ingest`` or ``update`` ended, for ``--json`` and the exit status.

A run that stops (a full disk, a model that cannot load) still wrote what it committed,
which a script reading ``--json`` needs to know: the summary comes with the error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medsearch.commands.common import failure
from medsearch.errors import MedsearchError

if TYPE_CHECKING:
    from ingest.clock import StageClock


class IngestFailed(MedsearchError):
    """Some inputs failed to parse; the others are in the store and the index."""


def json_report(
    clock: StageClock, error: BaseException | None, *, stopped_in: str | None = None
) -> dict[str, object]:
    """``--json``'s object: the summary, and how the command ends (``error`` None
    and ``exit_status`` 0 for a run that did everything)."""
    message, status = failure(error) if error is not None else (None, 0)
    out = {**clock.summary.to_dict(), "error": message, "exit_status": status}
    if error is not None and stopped_in is not None:
        out["stopped_in"] = stopped_in
    return out
