"""Child Python processes that import nothing from the current directory.

``multiprocessing`` starts its forkserver, its resource tracker and every spawned child
as ``python -c ...``, and ``-c`` puts the current directory first on ``sys.path``: a
``medsearch/`` or ``ingest/`` folder (a clone, or something planted) in the folder
``medsearch ingest`` runs from was imported by the parsers instead of the installed
package, running its code or failing every file as "parser process died". Python's
``-P`` (``PYTHONSAFEPATH``, 3.11) leaves that directory out and keeps ``PYTHONPATH``
(``-I`` would drop it too, and with it a checkout run through ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()


@contextmanager
def safe_path() -> Iterator[None]:
    """Children started inside this block run with ``PYTHONSAFEPATH=1``. The variable is
    set only for the block (a later ``python -c`` the user's code starts is theirs)."""
    with _LOCK:
        before = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("PYTHONSAFEPATH", None)
            else:
                os.environ["PYTHONSAFEPATH"] = before
