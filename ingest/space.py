"""Will it fit? The disk a download-and-ingest will take, checked before it starts.

The full baseline is 51.8 GB of downloads and, today, hundreds of GB of store, index
and vectors; finding out that the disk is too small ten hours in helps nobody. So
``ingest --download`` plans first: the listing gives each file's size, a file's size
gives its number of citations (~1,270 gzipped bytes each), and bytes per citation for
the store, the lexical index and the vectors come from the corpus already in the data
home (the store and index once it has enough articles to say), else from :data:`MEASURED`
(real PubMed text, ``benchmarks/footprint.py``). Files already downloaded or already
ingested cost nothing.

While it runs, ingest also keeps a few files' parsed records in spools (see
:mod:`ingest.workers`), counted too. The estimate gets :data:`HEADROOM` on top (tantivy
merges write a segment before they delete the old ones; SQLite's WAL grows by a file's
worth before a checkpoint), and the user's ``[ingest] keep_free_bytes`` is kept free
besides.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ingest.download import RemoteFile, size_limit
from ingest.download_ahead import CONNECTIONS
from ingest.pipeline import UNIT_FILES
from ingest.workers import MAX_PARSERS, SPOOL_AHEAD
from medsearch.errors import DiskSpaceError
from medsearch.footprint import GZ_BYTES_PER_CITATION, PUBMED, REPRESENTATIVE_CITATIONS, human

HEADROOM = 0.10
"""Extra share of the estimate: merges and the WAL need room while they work."""

MIN_CORPUS = REPRESENTATIVE_CITATIONS
"""Articles a data home needs before its own store and lexical bytes per citation replace
:data:`MEASURED` (below, a small store overstates PubMed's by up to ~50%: no dictionary yet)."""

UNLISTED_FILE_BYTES = 40_000_000
"""A baseline file's size when the listing gives none (the 2026 mean is ~38.8 MB)."""

SPOOL_BYTES_PER_GZ_BYTE = 2.3
"""A parser's spool against its gzipped file: 2,922 bytes an article pickled (rows
compressed, lexical documents; the 936 real records of ../shared/data/pubmed) against
~1,270 gzipped."""

SPOOLED_FILES = MAX_PARSERS + SPOOL_AHEAD
"""The most files spooled at once: as many as parse by default and those parsed that
wait for the writer."""

DOWNLOADED_FILES = SPOOLED_FILES + UNIT_FILES
"""Downloaded files on disk at once, besides those downloading, when each is deleted
once ingested (``--delete-downloads``): those parsing or waiting, and those in the
unit being written."""

FreeBytes = Callable[[Path], int]


@dataclass(frozen=True)
class PerCitation:
    """Bytes one citation adds to each part of the data home."""

    store: float
    lexical: float
    article_vectors: float
    sentence_vectors: float


MEASURED = PerCitation(store=900, lexical=520, article_vectors=1_750, sentence_vectors=1_150)
"""The figures a first ingest has to go on, per citation at 768-d, as the indexes are laid
out past 500K vectors (the size where this check matters): store from
``benchmarks/footprint.py`` (SciFact + the real PubMed files, dictionary-compressed
records and bookkeeping: 892 B); lexical index, article vectors (IVF-PQ + float16 copy,
~70 GB at 40.9M) from 60K real abstracts (docs/benchmarks-history.md, "``ingest
--download`` disk check"); sentence vectors as compressed
codes: 128 B per sentence (``benchmarks/sentence_index.py``) x ~8.6 sentences per
citation, plus their id files (~46 GB at 350M sentences; a float16 copy would add
~540 GB).
Update them when the vector layout changes; a corpus of 1,000+ articles uses its own."""


@dataclass(frozen=True)
class SpaceNeeded:
    """What a planned ingest will write, by part, in bytes."""

    downloads: int
    citations: int
    store: int
    lexical: int
    vectors: int
    spool: int = 0
    """Parsed records waiting for the writer: written and removed as ingest runs."""

    @property
    def total(self) -> int:
        written = self.downloads + self.store + self.lexical + self.vectors + self.spool
        return round(written * (1 + HEADROOM))


def to_fetch(files: Sequence[RemoteFile], dest_dir: Path) -> int:
    """Bytes still to download: whole files not yet there, the rest of a ``.part``. A
    ``.part`` longer than its file may be (:func:`ingest.download.size_limit`) is garbage
    the download deletes, so its file counts whole."""
    total = 0
    for remote in files:
        size = remote.size if remote.size is not None else UNLISTED_FILE_BYTES
        final = dest_dir / remote.name
        part = dest_dir / (remote.name + ".part")
        if final.exists():
            continue
        have = part.stat().st_size if part.exists() else 0
        if have > size_limit(remote.size).most:
            have = 0
        total += max(0, size - have)
    return total


def estimate(
    files: Sequence[RemoteFile],
    dest_dir: Path,
    per: PerCitation,
    *,
    ingested: frozenset[str] = frozenset(),
    encode: bool = True,
    keep_downloads: bool = True,
    connections: int = CONNECTIONS,
) -> SpaceNeeded:
    """The bytes ``files`` will take: downloads, then store, index and (with ``encode``)
    vectors for the citations of the files not in ``ingested`` (the ledger's names).
    Downloads deleted as they are ingested (not ``keep_downloads``) take at most
    :data:`DOWNLOADED_FILES` + ``connections`` files' room at once."""
    new = [f for f in files if f.name not in ingested]
    sizes = sorted(f.size if f.size is not None else UNLISTED_FILE_BYTES for f in new)
    downloads = to_fetch(files, dest_dir)
    if not keep_downloads:
        downloads = min(downloads, sum(sizes[-(DOWNLOADED_FILES + connections) :]))
    gz = sum(sizes)
    citations = round(gz / GZ_BYTES_PER_CITATION)
    vectors = per.article_vectors + per.sentence_vectors if encode else 0.0
    return SpaceNeeded(
        downloads=downloads,
        citations=citations,
        store=round(citations * per.store),
        lexical=round(citations * per.lexical),
        vectors=round(citations * vectors),
        spool=round(sum(sizes[-SPOOLED_FILES:]) * SPOOL_BYTES_PER_GZ_BYTE),
    )


def per_citation(footprint: dict[str, object], articles: int) -> PerCitation:
    """The data home's own bytes per citation (from ``stats``' footprint): the vectors' at
    any size (projected in their PubMed-scale layout, so the home's own dimension counts),
    the store's and lexical index's once it holds :data:`MIN_CORPUS` articles. Each part
    it has none of yet falls back to :data:`MEASURED` (a lexical-only corpus about to be
    encoded, say)."""
    parts = footprint.get("parts")
    own: dict[str, float] = {}
    if isinstance(parts, list):
        for part in parts:
            if not isinstance(part, dict):
                continue
            # Bytes per citation at PubMed's size (abstract mix and the compressed vector
            # layout applied) where the footprint projects it, else as the corpus is now.
            projected = part.get("projected_bytes")
            value = part.get("bytes_per_article")
            if isinstance(projected, int | float) and projected > 0:
                value = projected / PUBMED.citations
            if isinstance(value, int | float) and value > 0:
                own[str(part["part"])] = float(value)
    if articles < MIN_CORPUS:
        own.pop("store", None)
        own.pop("lexical index", None)
    return PerCitation(
        store=own.get("store", MEASURED.store),
        lexical=own.get("lexical index", MEASURED.lexical),
        article_vectors=own.get("article vectors", MEASURED.article_vectors),
        sentence_vectors=own.get("sentence vectors", MEASURED.sentence_vectors),
    )


def disk_free(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check(
    needed: SpaceNeeded,
    home: Path,
    *,
    keep_free: int = 0,
    free_bytes: FreeBytes = disk_free,
) -> None:
    """Raise :class:`DiskSpaceError` (one line: needed, free, where) if it cannot fit."""
    free = free_bytes(home)
    if needed.total + keep_free <= free:
        return
    kept = f" and keep {human(keep_free)} free ([ingest] keep_free_bytes)" if keep_free else ""
    raise DiskSpaceError(
        f"not enough disk for this ingest: it needs about {human(needed.total)}"
        f" ({needed.total:,} bytes: downloads {human(needed.downloads)}, store"
        f" {human(needed.store)}, lexical index {human(needed.lexical)}, vectors"
        f" {human(needed.vectors)} for ~{needed.citations:,} citations, parser spools"
        f" {human(needed.spool)} while it runs, +{HEADROOM:.0%})"
        f"{kept}, but {human(free)} ({free:,} bytes) is free under the data home {home};"
        " free space, use --limit N, choose another --home, or pass --skip-space-check"
    )
