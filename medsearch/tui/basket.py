"""Where the basket's export goes, and writing it there (no textual in here).

The default folder is the data home's ``exports/`` (:attr:`Paths.exports`). Everything
medsearch writes then lives under the one folder that ``--home`` / ``MEDSEARCH_HOME``
chose and the README names, on a laptop and on a server reached over ssh alike: a user
documents folder does not exist on most servers, and the current directory is wherever
the app happened to be started, where an export is easily lost. The file name
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
from medsearch.watches.model import Watch


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


def default_watch_name(now: datetime | None = None) -> str:
    """``basket-YYYY-MM-DD``: one watch a day unless the user names it."""
    return f"basket-{(now or datetime.now()).strftime('%Y-%m-%d')}"


def watch_basket(paths: Paths, name: str, pmids: Sequence[int]) -> Watch:
    """Save the basket's PMIDs as a reference-list watch, as ``medsearch check PMIDFILE
    --watch NAME`` does: each later update's retractions, expressions of concern and
    corrections of them are reported by ``watch run`` and on the Watches screen."""
    from medsearch.store import Store
    from medsearch.watches.book import WatchBook
    from medsearch.watches.references import make_reference_watch

    if not pmids:
        raise UsageError("the basket is empty: nothing to watch")
    with Store(paths.store, readonly=True) as store:
        made, known = make_reference_watch(name, pmids, "the TUI basket", store)
    with WatchBook(paths.watches_file) as book:
        book.add_references(made, known)
        return book.get(name)
