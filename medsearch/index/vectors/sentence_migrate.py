"""Sentence collections in the old layout (format 1: a float16 copy of every vector).

Those directories hold every vector, so converting them needs no encoder: the live
vectors are read in slot order and added to a new :class:`SentenceCollection`, which
trains its codes from them; then renames swap the directories. Readers never convert
(they raise :class:`~medsearch.index.vectors.sentence_index.OldLayoutError`); the writer
(``medsearch ingest``) does, through :func:`open_sentences`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.layout import fsync_dir, read_manifest
from medsearch.index.vectors.sentence_index import LAYOUT, SentenceCollection
from medsearch.index.vectors.store import READ_BATCH

COMMIT_BATCHES = 16  # commit every ~1M vectors converted


def migrate_fp16(path: Path) -> int:
    """Convert an old-layout directory to codes from its own float16 copy; live count.

    No re-encoding: the old layout holds every vector. The new collection is built
    beside the old one and swapped in by renames; a crash between them is finished by
    the next call (``<dir>.old`` is put back when ``<dir>`` is missing).
    """
    path = Path(path)
    staging, backup = path.with_name(path.name + ".new"), path.with_name(path.name + ".old")
    if not path.exists() and backup.exists():
        os.replace(backup, path)
    shutil.rmtree(staging, ignore_errors=True)
    with VectorCollection.open(path) as old:
        m = old.manifest
        new = SentenceCollection.open(staging, dim=m.dim, profile=m.profile, create=True)
        with new:
            ids, slots = old._live_lookup()
            order = np.argsort(slots, kind="stable")  # read the float16 file in order
            for lo in range(0, len(order), READ_BATCH):
                pick = order[lo : lo + READ_BATCH]
                new.add(ids[pick], old._read_rows(slots[pick]))
                if (lo // READ_BATCH) % COMMIT_BATCHES == COMMIT_BATCHES - 1:
                    new.commit()  # codes go to a part on disk: memory stays bounded
            new.commit()
            live = len(new)
    os.replace(path, backup)
    os.replace(staging, path)
    fsync_dir(path.parent)
    shutil.rmtree(backup, ignore_errors=True)
    return live


def needs_migration(path: Path) -> bool:
    """Whether ``path`` holds (or was being converted from) the old layout."""
    path = Path(path)
    if not path.exists():
        return path.with_name(path.name + ".old").exists()
    manifest = read_manifest(path)
    return manifest is not None and manifest.layout != LAYOUT


def open_sentences(
    path: Path, *, dim: int | None = None, profile: str | None = None, create: bool = False
) -> SentenceCollection:
    """Open for writing: an old-layout collection is converted first (see migrate_fp16)."""
    path = Path(path)
    backup = path.with_name(path.name + ".old")
    if not path.exists() and backup.exists():  # interrupted between the two renames
        os.replace(backup, path)
    manifest = read_manifest(path)
    if manifest is not None and manifest.layout != LAYOUT:
        migrate_fp16(path)
    return SentenceCollection.open(path, dim=dim, profile=profile, create=create)
