"""Import NCBI's precomputed MedCPT article embeddings instead of encoding on a CPU.

NCBI publishes https://ftp.ncbi.nlm.nih.gov/pub/lu/MedCPT/pubmed_embeddings/ as pairs
``embeds_chunk_N.npy`` (float32, ``(n, 768)``: MedCPT article-encoder vectors) and
``pmids_chunk_N.json`` (the ``n`` PMIDs of those rows, as numbers or strings). Encoding
all of PubMed on a CPU takes weeks (DESIGN.md), so CPU-only users start from these.

Rules:

- rows are matched to PMIDs within their own chunk, never by position across chunks;
- PMIDs the store does not hold are skipped (``known_pmids`` answers for a batch);
- the ``.npy`` is memory-mapped and added in batches, so a 3 GB chunk never sits in RAM;
- a chunk is committed to the collection and *then* recorded in
  ``imported_chunks.json`` (name, size, rows) next to the collection: a crash in between
  re-imports that chunk on the next run, which is harmless (adds replace);
- remote chunks are fetched with :mod:`ingest.download`'s resumable machinery (``.part``
  files continued with HTTP Range, retries with exponential backoff) and deleted once
  imported, because the full set is ~120 GB;
- anything malformed (not an ``.npy``, wrong dimension, row count different from the
  PMID list, PMIDs that are not integers) is a :class:`MedsearchError` naming the chunk.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ingest import download as dl
from ingest.http_get import fetch_text
from medsearch.errors import IndexMismatchError, MedsearchError, UsageError
from medsearch.index.vectors.collection import VectorCollection

MEDCPT_PROFILE = "medcpt"
MEDCPT_DIM = 768
LEDGER = "imported_chunks.json"
BATCH = 50_000

Progress = Callable[[str, int, int], None]
KnownPmids = Callable[[np.ndarray], np.ndarray]

_CHUNK = re.compile(r"embeds_chunk_(\d+)\.npy")
_HREF = re.compile(r"""href\s*=\s*["']?([^"'\s>]+)""", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Chunk:
    """One ``embeds_chunk_N.npy`` and its PMID list, local paths or URLs."""

    number: int
    embeds: str
    pmids: str

    @property
    def name(self) -> str:
        return f"embeds_chunk_{self.number}.npy"


@dataclass(frozen=True, slots=True)
class EmbeddingImportStats:
    chunks: int = 0  # chunks found at the source
    skipped_chunks: int = 0  # already imported by an earlier run
    rows: int = 0  # vectors read from the chunks imported now
    imported: int = 0  # vectors added to the collection
    unknown: int = 0  # rows whose PMID the store does not hold

    def __str__(self) -> str:
        return (
            f"{self.imported:,} vectors imported from {self.chunks - self.skipped_chunks} of"
            f" {self.chunks} chunks ({self.skipped_chunks} already done,"
            f" {self.unknown:,} PMIDs not in the store)"
        )


def import_embeddings(
    source: str,
    collection: VectorCollection,
    *,
    known_pmids: KnownPmids,
    download_dir: Path,
    progress: Progress | None = None,
    batch_size: int = BATCH,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60,
    sleep: Callable[[float], None] = time.sleep,
) -> EmbeddingImportStats:
    """Add every not-yet-imported chunk at ``source`` (a directory or an http(s) URL)."""
    manifest = collection.manifest
    if manifest.profile != MEDCPT_PROFILE:
        raise IndexMismatchError(
            f"NCBI's embeddings are MedCPT vectors but the collection at {collection.path}"
            f" was built with model profile {manifest.profile!r}"
        )
    if manifest.dim != MEDCPT_DIM:
        raise IndexMismatchError(
            f"the collection at {collection.path} has {manifest.dim} dimensions, MedCPT 768"
        )
    remote = source.startswith(("http://", "https://"))
    chunks = (
        _list_remote(source, retries, backoff, timeout, sleep) if remote else _list_local(source)
    )
    ledger_path = collection.path / LEDGER
    ledger = _read_ledger(ledger_path)
    totals = {"rows": 0, "imported": 0, "unknown": 0, "skipped": 0}
    for chunk in chunks:
        if _already_imported(chunk, ledger, download_dir, remote):
            totals["skipped"] += 1
            continue
        if remote:
            fetch = _Fetcher(download_dir, retries, backoff, timeout, sleep, progress)
            embeds, pmids = fetch(chunk.embeds), fetch(chunk.pmids)
        else:
            embeds, pmids = Path(chunk.embeds), Path(chunk.pmids)
        counts = _import_chunk(
            chunk.name, embeds, pmids, collection, known_pmids, batch_size, progress
        )
        collection.commit()
        ledger[chunk.name] = {"size": embeds.stat().st_size, **counts}
        _write_ledger(ledger_path, ledger)
        for key in ("rows", "imported", "unknown"):
            totals[key] += counts[key]
        if remote:  # 3 GB a chunk: keep the disk for the index, not the downloads
            embeds.unlink(missing_ok=True)
            pmids.unlink(missing_ok=True)
    return EmbeddingImportStats(
        chunks=len(chunks),
        skipped_chunks=totals["skipped"],
        rows=totals["rows"],
        imported=totals["imported"],
        unknown=totals["unknown"],
    )


def _import_chunk(
    name: str,
    embeds_path: Path,
    pmids_path: Path,
    collection: VectorCollection,
    known_pmids: KnownPmids,
    batch_size: int,
    progress: Progress | None,
) -> dict[str, int]:
    pmids = _read_pmids(name, pmids_path)
    try:
        vectors = np.load(embeds_path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise MedsearchError(f"{name}: not a readable NumPy .npy file ({exc})") from exc
    if vectors.ndim != 2 or vectors.shape[1] != MEDCPT_DIM or vectors.shape[1] != collection.dim:
        raise MedsearchError(
            f"{name}: vectors of shape {vectors.shape}, expected (n, {collection.dim})"
        )
    if not np.issubdtype(vectors.dtype, np.floating):
        raise MedsearchError(f"{name}: vectors of type {vectors.dtype}, expected float32")
    if len(vectors) != len(pmids):
        raise MedsearchError(
            f"{name}: {len(vectors):,} vectors but {len(pmids):,} PMIDs in its pmids file"
        )
    imported = 0
    for lo in range(0, len(pmids), batch_size):
        ids = pmids[lo : lo + batch_size]
        keep = np.asarray(known_pmids(ids), dtype=bool)
        if keep.any():
            rows = np.asarray(vectors[lo : lo + batch_size], dtype=np.float32)[keep]
            collection.add(ids[keep], rows)
            imported += int(keep.sum())
        if progress is not None:
            progress(name, min(lo + batch_size, len(pmids)), len(pmids))
    return {"rows": len(pmids), "imported": imported, "unknown": len(pmids) - imported}


def _read_pmids(name: str, path: Path) -> np.ndarray:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, list):
            raise ValueError("not a JSON list")
        return np.array([int(p) for p in raw], dtype=np.int64)
    except (ValueError, TypeError, OSError) as exc:
        raise MedsearchError(f"{name}: cannot read its PMID list {path.name} ({exc})") from exc


def _list_local(source: str) -> list[Chunk]:
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a directory of embeds_chunk_N.npy files")
    chunks = []
    for path in folder.iterdir():
        match = _CHUNK.fullmatch(path.name)
        if match:
            n = int(match.group(1))
            chunks.append(Chunk(n, str(path), str(folder / f"pmids_chunk_{n}.json")))
    if not chunks:
        raise UsageError(f"{folder}: no embeds_chunk_N.npy files there")
    return sorted(chunks, key=lambda c: c.number)


def _list_remote(
    url: str, retries: int, backoff: float, timeout: float, sleep: Callable[[float], None]
) -> list[Chunk]:
    base = url if url.endswith("/") else url + "/"
    page = dl._retrying(base, lambda: fetch_text(base, timeout), retries, backoff, sleep)
    found: dict[int, Chunk] = {}
    for match in _HREF.finditer(page):
        href = match.group(1)
        name = href.split("?", 1)[0].rsplit("/", 1)[-1]
        chunk = _CHUNK.fullmatch(name)
        if chunk:
            n = int(chunk.group(1))
            embeds = urllib.parse.urljoin(base, href)
            found[n] = Chunk(n, embeds, urllib.parse.urljoin(base, f"pmids_chunk_{n}.json"))
    if not found:
        raise UsageError(f"{base}: the listing names no embeds_chunk_N.npy files")
    return [found[n] for n in sorted(found)]


class _Fetcher:
    """Download one URL into ``download_dir`` via ``NAME.part``, resuming and retrying."""

    def __init__(
        self,
        folder: Path,
        retries: int,
        backoff: float,
        timeout: float,
        sleep: Callable[[float], None],
        progress: Progress | None,
    ) -> None:
        self.folder, self.retries, self.backoff = folder, retries, backoff
        self.timeout, self.sleep, self.progress = timeout, sleep, progress

    def __call__(self, url: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        name = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
        final, part = self.folder / name, self.folder / (name + ".part")
        if final.exists():
            return final
        report = None
        if self.progress is not None:
            progress = self.progress

            def report(done: int, total: int | None) -> None:
                progress(f"downloading {name}", done, total or 0)

        self._fetch(url, part, report)
        os.replace(part, final)
        return final

    def _fetch(self, url: str, part: Path, report: Any) -> None:
        action = lambda: dl._fetch_to_part(url, part, self.timeout, report)  # noqa: E731
        dl._retrying(url, action, self.retries, self.backoff, self.sleep)


def _already_imported(
    chunk: Chunk, ledger: dict[str, dict[str, int]], download_dir: Path, remote: bool
) -> bool:
    entry = ledger.get(chunk.name)
    if entry is None:
        return False
    if remote:  # the local copy was deleted after import; a re-fetched copy must match
        local = download_dir / chunk.name
        return not local.exists() or local.stat().st_size == entry.get("size")
    return Path(chunk.embeds).stat().st_size == entry.get("size")


def _read_ledger(path: Path) -> dict[str, dict[str, int]]:
    if not path.exists():
        return {}
    data: dict[str, dict[str, int]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _write_ledger(path: Path, ledger: dict[str, dict[str, int]]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(ledger, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)
