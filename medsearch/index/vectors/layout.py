"""On-disk layout of a vector collection: the manifest, the index choice, atomic writes.

A collection directory holds::

    manifest.json        the commit point: everything below is named or sized by it
    vectors.f16          float16 rows, append-only; row number = "slot"
    ids.i64              int64 id of each slot, append-only (never rewritten)
    lookup.<gen>.npy     (2, live) int64: live ids sorted, and their slots
    index.<gen>.faiss    the Faiss index; its ids ARE slot numbers

Why slots and not ids inside Faiss: a slot is dense and ascending, so the flat index
can map results back to ids with one array read (``ids.i64[slot]``) and an IVF index
stores slots in its inverted lists like any other id. The reverse direction (id ->
slot) is a sorted pair of arrays searched with ``np.searchsorted``: at 40M vectors that
is a 640 MB memory-mapped file touched in ~25 pages per look-up, instead of a Python
dict of 40M entries (several GB). Liveness lives in the lookup, not in ``ids.i64``:
the append-only files are never modified below the committed row count, so a crash at
any moment leaves the last commit intact (rows beyond ``count`` are truncated on open,
files of an unfinished generation are deleted).
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from medsearch.errors import MedsearchError, VectorsMissingError

T = TypeVar("T")

FORMAT_VERSION = 2  # 2: an IVF-PQ index may be in parts (segments); 1 reads as one part
MANIFEST = "manifest.json"

# Exact inner product scores every vector for every query: ~270 ms per query at 1M x 768
# on this 2-core machine (DESIGN.md "Vectors"), i.e. ~135 ms at 500K, and 1.5 GB of
# float32 in RAM. Past that, latency and memory grow linearly while IVF-PQ with exact
# re-scoring holds recall@10 >= 0.99 at ~1-2 ms, so 500K is where "fits comfortably" ends.
FLAT_MAX = 500_000

# An IVF index trained on n vectors keeps working as it grows, but its lists get long
# and the coarse quantizer too coarse; retrain (rebuild) once it has grown this much.
# Geometric growth keeps the total rebuild cost linear in the final size.
RETRAIN_GROWTH = 8

# Exact re-scoring of rescore_factor * k PQ candidates from the float16 memmap: 4x gave
# recall@10 0.994 at 1M in DESIGN.md's measurements (PQ96) and 1.0 with PQ192 in
# benchmarks/vectors.py. Every candidate is one row read from the memmap, which at 40M
# (61 GB of float16) is mostly on disk: more candidates cost random reads.
RESCORE_FACTOR = 4

# k-means wants >= 39 points per centroid; more buy little and cost linearly. The cap
# keeps training at 40M (16K lists: ~640K x 768 float32 = 2 GB, about an hour of
# k-means on 2 cores) bounded; at 1M (4K lists) training used 262K points.
TRAIN_POINTS_PER_LIST = 64
TRAIN_POINTS_MAX = 640_000
MIN_NLIST = 16
# 4 * sqrt(40M) would be 32K lists; 16K keeps training time and the coarse quantizer
# (16K x 768 float32 = 50 MB, scanned once per query) small at ~2,500 vectors a list.
MAX_NLIST = 16_384


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True, slots=True)
class VectorManifest:
    """What a collection is and which files make up its last commit."""

    profile: str
    dim: int
    metric: str = "ip"  # inner product always: MedCPT is raw IP, minilm is normalised
    count: int = 0  # rows in vectors/ids (slots), live or not
    live: int = 0  # ids that currently have a vector
    kind: str = "flat"  # "flat" (exact), "ivfpq" (re-scored) or "custom"
    factory: str = "IDMap,Flat"  # the Faiss index_factory string actually built
    factory_override: str | None = None  # a user's explicit factory, kept across rebuilds
    nprobe: int | None = None
    rescore_factor: int = RESCORE_FACTOR
    trained_on: int = 0  # live count when the index was (re)built
    generation: int = 0
    index_file: str | None = None
    lookup_file: str | None = None
    vectors_file: str = "vectors.f16"
    ids_file: str = "ids.i64"
    build_seconds: float = 0.0
    created: str = ""
    updated: str = ""
    format_version: int = FORMAT_VERSION
    # Sentence collections (format 2) keep codes, not vectors: see sentence_index.py.
    layout: str = "fp16"  # "fp16": a float16 copy of every vector; "codes": none
    sample_file: str = "sample.f16"  # bounded training sample (layout "codes")
    sample_rows: int = 0
    sample_seen: int = 0  # vectors ever offered to the sample (reservoir sampling)
    # Compressed sentence collections (format 3): the immutable IVF-PQ files that hold
    # the codes, as (file, first slot, end slot, entries), oldest first; index_file is
    # the first. Empty: the whole index is index_file (flat, or format 2).
    segments: tuple[tuple[str, int, int, int], ...] = ()
    dead_file: str | None = None  # committed tombstones: sorted slots still in a part

    @property
    def exact(self) -> bool:
        """Whether Faiss scores are exact; otherwise candidates are re-scored."""
        return self.kind == "flat"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VectorManifest:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if "segments" in values:  # JSON has lists where the manifest keeps tuples
            values["segments"] = tuple(tuple(s) for s in values["segments"])
        return cls(**values)

    def evolve(self, **changes: Any) -> VectorManifest:
        return replace(self, **changes)


def read_manifest(directory: Path) -> VectorManifest | None:
    path = directory / MANIFEST
    if not path.exists():
        return None
    return VectorManifest.from_dict(json.loads(path.read_text(encoding="utf-8")))


def read_committed(path: Path, manifest: VectorManifest, build: Callable[[VectorManifest], T]) -> T:
    """``build(manifest)`` for a reader; once more from a newer manifest if a writer's
    commit replaced the files it names in between (the writer deletes merged parts and
    old generations right after its commit). Missing files of the last commit stay an
    error."""
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return build(manifest)
        except (VectorsMissingError, FileNotFoundError):
            newer = read_manifest(path)
            if newer is None or newer.generation == manifest.generation:
                raise
            manifest = newer
    return build(manifest)


READ_ATTEMPTS = 3


def fsync_dir(directory: Path) -> None:
    """Make renames inside ``directory`` durable (no-op where unsupported)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to ``path.tmp``, fsync, then rename: readers see old or new, never half."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def write_manifest(directory: Path, manifest: VectorManifest) -> None:
    text = json.dumps(manifest.to_dict(), indent=2, sort_keys=True)
    atomic_write_bytes(directory / MANIFEST, text.encode())
    fsync_dir(directory)


def pq_subquantizers(dim: int) -> int:
    """PQ code size: one byte per 4 dimensions (768 -> PQ192, 384 -> PQ96).

    benchmarks/vectors.py at 1M x 768 (synthetic, clustered; 4x re-scoring, nprobe 16):
    PQ96 recall@10 0.94 at 1.6 ms (0.996 with 8x re-scoring, 3.7 ms, twice the rows
    read from disk); PQ192 recall@10 1.0 at 1.7 ms. PQ192 at 40M is ~8 GB of codes and
    ids in RAM (PQ96: ~4.2 GB), inside the 16 GB budget; ``m`` must divide ``dim``.
    """
    return _divisor_at_most(dim, max(1, dim // 4))


def sentence_pq_bytes(dim: int) -> int:
    """Sentence PQ sub-quantizers (bytes per code): one per 8 dimensions, dividing ``dim``.

    768-d -> PQ96 (96 bytes a sentence), 384-d -> PQ48. benchmarks/sentence_index.py
    measured recall@10 after exact re-scoring of the candidates against PQ sizes.
    """
    return _divisor_at_most(dim, max(1, dim // 8))


def _divisor_at_most(dim: int, target: int) -> int:
    for m in range(target, 0, -1):
        if dim % m == 0:
            return m
    return 1


# Per vector besides its code: its id in an inverted list (8), ids.i64 (8) and the
# lookup's (id, slot) pair (16).
ENTRY_BYTES = 8 + 8 + 16

# Reservoir sample a sentence collection keeps for (re)training: 524,288 x 768 float16 =
# 768 MB at PubMed scale (0.15% of ~350M sentences): 32 points for each of 16,384 lists
# (MAX_NLIST) and far more than PQ's codebooks need (256 x 39 per sub-quantizer).
SAMPLE_MAX = 524_288


def bytes_at_scale(collection: str, dim: int) -> float:
    """Bytes per vector once a collection has the layout it has at PubMed scale.

    A small collection is exact (flat) and says little about its bytes per vector at
    40.9M articles or ~350M sentences: articles then keep a float16 row, a PQ code and
    their ids (1,760 B at 768-d; ~1.75 KB measured on 60K real abstracts,
    docs/benchmarks-history.md, "`ingest --download` disk check"); sentences only a PQ
    code and ids (128 B at 768-d, measured at 1M in BENCHMARKS.md), plus the fixed
    training sample.
    """
    if collection == "sentences":
        return sentence_pq_bytes(dim) + ENTRY_BYTES
    return 2 * dim + pq_subquantizers(dim) + ENTRY_BYTES


def nlist_for(n: int) -> int:
    """Inverted lists: ~4 * sqrt(n) rounded to a power of two, never under-trained."""
    raw = 4 * math.sqrt(max(n, 1))
    nlist = int(2 ** round(math.log2(max(raw, 1))))
    nlist = max(MIN_NLIST, min(MAX_NLIST, nlist))
    while nlist > MIN_NLIST and nlist * 39 > n:
        nlist //= 2
    return nlist


def default_nprobe(nlist: int) -> int:
    """Lists visited per query: 1/256 of them, at least 16.

    At 1M vectors (4,096 lists) recall@10 was the same with 16 and 32 probes: PQ error,
    which re-scoring fixes, dominates, not the coarse quantizer. A fixed fraction keeps
    the codes scanned per query proportional to n (~156K at 40M: milliseconds).
    """
    return max(16, nlist // 256)


def choose_factory(n: int, dim: int, flat_max: int = FLAT_MAX) -> tuple[str, str]:
    """(kind, factory) for ``n`` live vectors: exact while small, IVF-PQ beyond."""
    if n <= flat_max:
        return "flat", "IDMap,Flat"
    return "ivfpq", f"IVF{nlist_for(n)},PQ{pq_subquantizers(dim)}"


def kind_of_factory(factory: str) -> str:
    spec = factory.replace("IDMap,", "").replace("IDMap2,", "").strip()
    if spec == "Flat":
        return "flat"
    if spec.startswith("IVF") and ",PQ" in spec:
        return "ivfpq"
    return "custom"


def normalise_factory(factory: str) -> str:
    """Non-IVF indexes cannot store arbitrary ids; wrap them in an IDMap."""
    if factory.startswith(("IDMap", "IVF")):
        return factory
    return "IDMap," + factory


def save_npy(path: Path, table: np.ndarray) -> None:
    buf = io.BytesIO()
    np.save(buf, table)
    atomic_write_bytes(path, buf.getvalue())


def recover(path: Path, m: VectorManifest) -> None:
    """Cut rows written after the last commit and delete files no commit refers to."""
    committed = ((m.vectors_file, 2 * m.dim * m.count), (m.ids_file, 8 * m.count))
    truncate_to_commit(path, committed, "the vectors must be rebuilt")
    remove_unreferenced(path, committed_files(m))


def index_bytes(path: Path, m: VectorManifest) -> int:
    """Bytes of the committed index: its one file, or every part."""
    files = {str(p[0]) for p in m.segments} or ({m.index_file} if m.index_file else set())
    return sum((path / f).stat().st_size for f in files)


def committed_files(m: VectorManifest) -> set[str | None]:
    """Every file the commit ``m`` names (the manifest itself aside)."""
    parts = {str(p[0]) for p in m.segments}
    named = {m.vectors_file, m.ids_file, m.index_file, m.lookup_file, m.dead_file}
    return {*named, m.sample_file if m.layout == "codes" else None, *parts}


def truncate_to_commit(path: Path, committed: Iterable[tuple[str, int]], lost: str) -> None:
    """Cut each append-only file back to the bytes the last commit counted.

    A missing file is only an error when the commit counted bytes in it (``lost`` says
    what must be redone); a shorter one is corruption, never silently accepted.
    """
    for name, size in committed:
        file = path / name
        if not file.exists():
            if size:
                raise VectorsMissingError(f"{file} is missing; {lost}")
            file.write_bytes(b"")
        elif file.stat().st_size != size:
            if file.stat().st_size < size:
                raise MedsearchError(f"{file} is shorter than its manifest says: corrupt")
            with open(file, "r+b") as fh:
                fh.truncate(size)


def remove_unreferenced(path: Path, keep: set[str | None]) -> None:
    """Delete the collection files no commit refers to (the manifest is always kept)."""
    keep = {MANIFEST, *keep}
    patterns = (
        "*.tmp",
        "index.*.faiss",
        "seg.*.faiss",
        "dead.*.npy",
        "lookup.*.npy",
        "vectors*.f16",
        "ids*.i64",
    )
    for pattern in patterns:
        for file in path.glob(pattern):
            if file.name not in keep:
                file.unlink(missing_ok=True)
    fsync_dir(path)
