"""Import NIH's Open Citation Collection (iCite's bulk snapshot) into the citation graph.

The snapshot is ``open_citation_collection.zip`` holding one CSV (~850M edges, ~20 GB
unpacked) with the header ``citing,referenced``; a plain ``.csv`` (or ``.csv.gz``)
works too. The columns are found by name, so their order does not matter.

The file is read a block of lines at a time, never whole: a block's edges are sorted
by citing PMID and merged into ``article_refs`` (:func:`medsearch.store.refs.add_collection`)
in one transaction, which also records how far into the file the import got
(``meta`` key ``occ:<name>:<size>``). A killed import resumes at the last committed
block (a block applied twice changes nothing: edges are a set); a finished one is
marked ``done`` and a second import of the same file skips it.
"""

from __future__ import annotations

import gzip
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, cast

import numpy as np

from medsearch.errors import ParseError, UsageError
from medsearch.progress import NullProgress, Progress
from medsearch.records import MAX_PMID
from medsearch.store import Store
from medsearch.store.refs import GRAPH_MAX

BLOCK_BYTES = 32 * 1024 * 1024
"""About 1.5M edges a transaction."""
LINE_BYTES = 4096
"""The longest line read: a row is two PMIDs (~20 bytes). A line past it is an error,
never read whole (a zip holding a 2 GiB line once passed 4 GB)."""
PMID_DIGITS = len(str(MAX_PMID))
"""A value longer than a PMID can be is an error before it is converted: numpy sizes a
block's array by its longest value (one 2M-digit value asked for 745 GiB)."""
CITING = ("citing",)
CITED = ("referenced", "cited")


@dataclass(frozen=True, slots=True)
class ImportReport:
    file: str
    edges_read: int
    edges_added: int
    skipped: bool
    edges_outside: int = 0
    """Rows left out: a PMID of 0 or past the graph's (``GRAPH_MAX``)."""
    """The file was imported before: nothing was read."""


def _key(path: Path) -> str:
    return f"occ:{path.name}:{path.stat().st_size}"


@contextmanager
def _open(path: Path) -> Iterator[tuple[IO[bytes], int | None]]:
    """The CSV's bytes and its unpacked size where the container says it."""
    if not path.is_file():
        raise UsageError(f"no such citation file: {path}")
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            members = [i for i in archive.infolist() if i.filename.lower().endswith(".csv")]
            if not members:
                raise ParseError(str(path), "the zip file holds no .csv")
            with archive.open(members[0]) as stream:
                yield stream, members[0].file_size
    elif path.name.endswith(".gz"):
        with gzip.open(path, "rb") as unpacked:
            yield cast(IO[bytes], unpacked), None
    else:
        with path.open("rb") as stream:
            yield stream, path.stat().st_size


def _columns(header: bytes, path: Path) -> tuple[int, int]:
    names = [n.strip().strip(b'"').decode("ascii", "replace").lower() for n in header.split(b",")]
    citing = next((names.index(n) for n in CITING if n in names), None)
    cited = next((names.index(n) for n in CITED if n in names), None)
    if citing is None or cited is None or len(names) != 2:
        raise ParseError(
            str(path), f"expected the columns citing,referenced; the header is {header[:80]!r}"
        )
    return citing, cited


def _edges(block: bytes, citing_col: int, path: Path) -> tuple[np.ndarray, np.ndarray, int]:
    """The block's (citing, cited) PMIDs, sorted by citing, and how many rows were left
    out: those naming a PMID of 0 or past the graph's (none in the snapshot)."""
    values = block.replace(b"\r", b"").replace(b"\n", b",").strip(b",").split(b",")
    if len(values) % 2:
        raise ParseError(str(path), "a row without two columns")
    longest = max(values, key=len)
    if len(longest.strip()) > PMID_DIGITS:
        raise ParseError(
            str(path),
            f"a value longer than a PMID ({PMID_DIGITS} digits at most): {longest[:30]!r}...",
        )
    try:
        numbers = np.array(values, dtype=np.bytes_).astype(np.uint64).reshape(-1, 2)
    except (ValueError, OverflowError) as exc:
        raise ParseError(str(path), f"a value that is not a PMID ({exc})") from exc
    citing, cited = numbers[:, citing_col], numbers[:, 1 - citing_col]
    top = np.uint64(GRAPH_MAX)
    good = (citing > 0) & (citing <= top) & (cited > 0) & (cited <= top)
    citing, cited = citing[good].astype(np.uint32), cited[good].astype(np.uint32)
    order = np.argsort(citing, kind="stable")
    return citing[order], cited[order], int(len(good) - good.sum())


def _line(stream: IO[bytes], path: Path) -> bytes:
    """The rest of a line, up to :data:`LINE_BYTES`; longer is an error."""
    line = stream.readline(LINE_BYTES + 1)
    if len(line) > LINE_BYTES:
        raise ParseError(str(path), f"a line longer than {LINE_BYTES:,} bytes")
    return line


def import_collection(store: Store, path: Path, progress: Progress | None = None) -> ImportReport:
    """Add the collection's edges in ``path`` to the store (resumable)."""
    progress = progress or NullProgress()
    key = _key(path)
    row = store.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    if row is not None and row[0] == "done":
        return ImportReport(path.name, 0, 0, skipped=True)
    done_bytes = int(row[0]) if row is not None else 0
    read = added = outside = 0
    with _open(path) as (stream, size):
        buffered = stream
        header = _line(buffered, path)
        citing_col, _ = _columns(header.strip(), path)
        position = len(header)
        progress.start("citations", "Citation edges (bytes)", total=size)
        if done_bytes > position:  # a resumed import: skip what was committed
            skip = done_bytes - position
            while skip:
                got = len(buffered.read(min(skip, BLOCK_BYTES)))
                if not got:
                    break
                skip -= got
            position = done_bytes
        progress.advance("citations", position)
        while True:
            block = buffered.read(BLOCK_BYTES)
            if not block:
                break
            if not block.endswith(b"\n"):
                block += _line(buffered, path)
            citing, cited, left_out = _edges(block, citing_col, path)
            outside += left_out
            position += len(block)
            with store.transaction():
                added += store.add_collection_edges(citing, cited)
                _set(store, key, str(position))
            read += len(citing)
            progress.advance("citations", len(block))
    with store.transaction():
        _set(store, key, "done")
    progress.finish("citations")
    return ImportReport(path.name, read, added, skipped=False, edges_outside=outside)


def _set(store: Store, key: str, value: str) -> None:
    store.conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET"
        " value = excluded.value",
        (key, value),
    )
