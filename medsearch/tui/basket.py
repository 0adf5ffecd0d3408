"""Where the basket's export goes, and writing it there (no textual in here).

The default folder is the data home's ``exports/`` (:attr:`Paths.exports`). Everything
medsearch writes then lives under the one folder that ``--home`` / ``MEDSEARCH_HOME``
chose and the README names, on a laptop and on a server reached over ssh alike: a user
documents folder does not exist on most servers, and the current directory is wherever
the app happened to be started, which is how exports used to get lost. The file name
carries the time, so a second export never overwrites the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from medsearch.errors import UsageError
from medsearch.export import write_export
from medsearch.paths import Paths
from medsearch.records import Article


def default_export_path(paths: Paths, now: datetime | None = None) -> Path:
    """``<home>/exports/basket-YYYY-MM-DD-HHMMSS.bib`` (the dialog fixes the suffix)."""
    stamp = (now or datetime.now()).strftime("%Y-%m-%d-%H%M%S")
    return paths.exports / f"basket-{stamp}.bib"


def write_basket(articles: Sequence[Article], fmt: str, path: Path, paths: Paths) -> Path:
    """Write the export and return its absolute path, which the app shows in full.

    The default folder is created on first use; any other folder must exist already,
    so a mistyped path is reported instead of becoming a new directory.
    """
    target = path.expanduser().absolute()
    try:
        if target.parent == paths.exports.absolute():
            target.parent.mkdir(parents=True, exist_ok=True)
        return write_export(articles, fmt, target)
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from exc
