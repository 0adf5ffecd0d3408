"""Keep a long-lived search process's garbage collector off its query path.

Loading the encoders (torch, the model, their modules) leaves ~190K objects the cyclic
garbage collector tracks. Every so often a query's own garbage triggers a full
(generation 2) collection, which walks all of them: ~75 ms on this 2-core machine, so
one query in ~6 took 125 ms instead of 50 (hybrid search at 10M articles, the TUI's
every-keystroke path). Those objects live as long as the process, so after a load they
are frozen: later collections skip them. A full collection first would cost ~60 ms of
every CLI search for nothing: after loading minilm on the 10M home it found 10
unreachable objects.
"""

from __future__ import annotations

import gc


def settle() -> None:
    """Exempt every object alive now (the loaded models above all) from later scans."""
    gc.freeze()


def release() -> None:
    """Let the collector scan them again (a closed searcher's models can now be freed)."""
    gc.unfreeze()
