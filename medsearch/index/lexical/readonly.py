"""Opening a tantivy index for searching in a folder this process may not write.

While tantivy opens an index's segments it holds a file lock (``.tantivy-meta.lock``,
opened for writing and created if missing), so that a writer's clean-up cannot delete a
segment midway. In a folder the reader may not write (a data home on read-only media,
a copy made read-only, another user's home) that fails ("Failed to acquire Lockfile")
although searching writes nothing. tantivy-py offers no other kind of directory, so
such an index is opened through a private folder of symbolic links to its files: the
lock is taken there, and the segments are read (memory-mapped) where they are.

The lock guards nothing then; an owner who ingests while another user searches can
delete a segment during the opening, which fails with one line, and the open index
keeps reading the segments it mapped.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import tantivy

from medsearch.errors import StoreError

LOCKS = frozenset({".tantivy-meta.lock", ".tantivy-writer.lock"})


def open_for_search(path: Path) -> Any:
    """The tantivy index at ``path``, through a folder of links where ``path`` cannot be
    written; files this user may not read are named (no rebuild would help)."""
    try:
        return tantivy.Index.open(str(path))
    except ValueError as exc:
        unreadable = sorted(
            entry.name
            for entry in path.iterdir()
            if entry.is_file() and not os.access(entry, os.R_OK)
        )
        if unreadable:
            raise StoreError(
                f"the lexical index at {path} cannot be read by this user"
                f" ({', '.join(unreadable[:3])}{', ...' if len(unreadable) > 3 else ''} not"
                " readable); ask its owner to make the data home readable"
            ) from exc
        if os.access(path, os.W_OK):
            raise
    return tantivy.Index.open(str(linked(path)))


def linked(path: Path) -> Path:
    """A new folder of links to the files of the index at ``path``, but its locks;
    removed when the process exits (the index may be searched until then)."""
    view = Path(tempfile.mkdtemp(prefix="medsearch-lexical-"))
    atexit.register(shutil.rmtree, view, True)
    for entry in path.resolve().iterdir():
        if entry.name not in LOCKS:
            (view / entry.name).symlink_to(entry)
    return view
