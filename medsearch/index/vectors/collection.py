"""Vector collections keyed by int64 id (PMIDs for articles, sentence ids for sentences).

Raw vectors live on disk as an append-only, memory-mapped float16 array, so that
indexes can be rebuilt without re-encoding, "similar articles" reads a stored vector
instead of encoding again, and a compressed (IVF-PQ) index can re-score its candidates
exactly. The Faiss index is chosen by size (exact flat inner product while small,
IVF-PQ with re-scoring beyond) and recorded in the manifest. See
:mod:`medsearch.index.vectors.layout` for the files and why Faiss ids are slot numbers.

One writer at a time; any number of readers of the last commit.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.errors import (
    IndexMismatchError,
    MedsearchError,
    NotFoundError,
    UsageError,
    VectorsMissingError,
)
from medsearch.index.sorted_ids import member, unique
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors import faiss_index as vf
from medsearch.index.vectors.ivf_parts import PART_BYTES, IvfParts, search_parts
from medsearch.index.vectors.layout import (
    FLAT_MAX,
    FORMAT_VERSION,
    RETRAIN_GROWTH,
    VectorManifest,
    choose_factory,
    committed_files,
    kind_of_factory,
    normalise_factory,
    now_iso,
    read_committed,
    read_manifest,
    recover,
    remove_unreferenced,
    save_npy,
    write_manifest,
)
from medsearch.index.vectors.pending_slots import PendingSlots
from medsearch.index.vectors.rows import fits_float16, to_float16, to_float32
from medsearch.index.vectors.store import IdsLike, SlotStore

Results = list[list[tuple[int, float]]]

# Filters (and set queries' sets) that leave at most this many candidates are scored
# exactly from the memmap; more go through the index with the set as a Faiss ID selector,
# which scores members only. On 1M clustered 384-d vectors in IVF4096,PQ96 here, the
# selector kept recall@10 0.99-1.0 for sets of 2K to 100K and took 8 / 11 / 14 / 31 ms
# p95 at 10K / 20K / 50K / 100K against 25 / 44 / 114 / 229 ms exact; exact scoring
# stays for small sets, where it is a guarantee for ~2 us a vector.
EXACT_FILTER_MAX = 10_000


class VectorCollection(SlotStore):
    """A directory of vectors keyed by id; see the module docstring."""

    flat_max: int = FLAT_MAX
    exact_filter_max: int = EXACT_FILTER_MAX
    part_entries: int = PART_BYTES // 200  # 8M PQ192 codes and their list ids

    def __init__(self, path: Path, manifest: VectorManifest, *, mmap: bool = False) -> None:
        super().__init__(path, manifest)
        self._index: Any = None  # an index held whole (exact, custom, or just built) ...
        self._ivf: IvfParts | None = None  # ... or IVF-PQ parts, mapped (ivf_parts.py)
        self._stale = False  # the in-memory index must be rebuilt from the memmap
        self._dirty = False  # the in-memory index differs from the committed file
        self._meta = _index_meta(manifest)
        if manifest.index_file and (path / manifest.index_file).exists():
            if manifest.kind == "ivfpq":  # neither a reader nor a writer loads the codes
                self._ivf = IvfParts.load(path, manifest, self.part_entries)
            else:
                self._index = vf.read_index(path / manifest.index_file, mmap=mmap)
        elif manifest.live:
            self._stale = True  # index file lost: rebuild from the vectors on demand
        else:  # empty: start exact, whatever was built before
            self._index = vf.new_index(manifest.dim, "IDMap,Flat")
            self._meta.update(kind="flat", factory="IDMap,Flat", nprobe=None, trained_on=0)

    # -- opening ---------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        dim: int | None = None,
        profile: str | None = None,
        create: bool = False,
        readonly: bool = False,
    ) -> VectorCollection:
        """Open (or create) the collection at ``path``, recovering to the last commit.

        ``readonly`` (searches) skips the recovery: rows past the last commit may be an
        ingest's work in progress, and a reader sees only what the manifest counts.
        """
        path = Path(path)
        manifest = read_manifest(path)
        if manifest is None:
            if not create:
                raise VectorsMissingError(
                    f"no vectors at {path} (run `medsearch ingest` to build them)"
                )
            if dim is None or profile is None:
                raise UsageError("creating a vector collection needs a dim and a profile")
            path.mkdir(parents=True, exist_ok=True)
            stamp = now_iso()
            manifest = VectorManifest(profile=profile, dim=dim, created=stamp, updated=stamp)
            for name in (manifest.vectors_file, manifest.ids_file):
                (path / name).write_bytes(b"")
            write_manifest(path, manifest)
        if manifest.format_version > FORMAT_VERSION:
            raise MedsearchError(
                f"{path} was written by a newer medsearch (format {manifest.format_version})"
            )
        check_compatible(path, manifest, dim=dim, profile=profile)
        if readonly:  # IVF lists memory-mapped: ~8 GB of codes at PubMed scale stay on disk
            return read_committed(path, manifest, lambda m: cls(path, m, mmap=True)).read_only()
        recover(path, manifest)
        return cls(path, manifest)

    # -- writing ---------------------------------------------------------------------

    def add(self, ids: IdsLike, vectors: np.ndarray) -> None:
        """Store ``vectors`` under ``ids``; an id already present is replaced."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape != (len(ids), self.dim):
            raise UsageError(
                f"expected {len(ids)} vectors of {self.dim} dimensions,"
                f" got an array of shape {vectors.shape}"
            )
        if len(ids) == 0:
            return
        if len(np.unique(ids)) != len(ids):  # the last occurrence wins, as in a dict
            _, first_from_end = np.unique(ids[::-1], return_index=True)
            keep = np.sort(len(ids) - 1 - first_from_end)
            ids, vectors = ids[keep], vectors[keep]
        if not fits_float16(vectors):
            raise MedsearchError("vectors contain NaN/inf or values beyond float16 range")
        half = to_float16(vectors)
        old = self._slots_of(ids)
        replaced = old >= 0
        if replaced.any():
            self._bury(old[replaced])
        slots = np.arange(self._rows, self._rows + len(ids), dtype=np.int64)
        self._append(self.manifest.vectors_file, half.tobytes())
        self._append(self.manifest.ids_file, ids.astype("<i8").tobytes())
        self._rows += len(ids)
        self._live += int((~replaced).sum())
        self._pending.set(ids, slots)
        self._add_to_index(to_float32(half), slots)

    def commit(self) -> None:
        """Make every change durable at once (see the module docstring of layout)."""
        self._commit(rebuild=False, factory=None, compact=False)

    def rebuild(self, *, factory: str | None = None) -> None:
        """Rebuild the index from the stored vectors, dropping dead rows, then commit.

        ``factory`` (an ``index_factory`` string such as ``IVF4096,SQ8``) is remembered
        and used by later automatic rebuilds; ``"auto"`` returns to size-based choice.
        """
        self._commit(rebuild=True, factory=factory, compact=True)

    # -- reading ---------------------------------------------------------------------

    def get(self, ids: IdsLike) -> np.ndarray:
        """The stored vectors of ``ids`` as float32 ``(n, dim)``, in the order asked."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        slots = self._slots_of(ids)
        if (slots < 0).any():
            missing = ids[slots < 0][:5].tolist()
            raise NotFoundError(f"no vector for id(s) {', '.join(map(str, missing))}")
        return self._read_rows(slots)

    def search(
        self,
        queries: np.ndarray,
        k: int,
        *,
        allowed_ids: IdsLike | None = None,
        nprobe: int | None = None,
    ) -> Results:
        """Per query, up to ``k`` (id, inner product) pairs, best first."""
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if q.shape[1] != self.dim:
            raise UsageError(f"queries have {q.shape[1]} dimensions, the index {self.dim}")
        if k <= 0 or self._live == 0:
            return [[] for _ in range(len(q))]
        dead = self._dead_slots()
        allowed: np.ndarray | None = None
        if allowed_ids is not None:
            slots = self._slots_of(np.asarray(allowed_ids, dtype=np.int64).ravel())
            allowed = unique(slots[slots >= 0])
            if len(allowed) == 0:
                return [[] for _ in range(len(q))]
            if len(allowed) <= self.exact_filter_max:
                return self._as_results(*self._exact(q, allowed, k))
        index = self._ensure_index()
        if index is None and self._ivf is not None and allowed is None:
            dead, selector = self._ivf.exclusions(dead, self._rows)  # built once per state
        else:
            if index is None and self._ivf is not None:
                dead = self._ivf.excluded(dead)
            selector = vf.Selector(allowed, dead, self._rows)
        exact = self._meta["kind"] == "flat"
        fetch = k if exact else k * int(self.manifest.rescore_factor)
        probe = nprobe or self._meta["nprobe"]
        scores, slots = self._search_index(q, fetch, selector, probe)
        short = slots[:, min(slots.shape[1], len(allowed)) - 1] < 0 if allowed is not None else None
        if short is not None and probe and short.any():  # filter emptied the probed lists
            scores, slots = self._search_index(q, fetch, selector, probe * 8)
        out_scores, out_slots = [], []
        for i in range(len(q)):
            row = slots[i]
            keep = row >= 0
            if dead is not None and len(dead):
                keep &= ~member(row, dead)
            if exact:
                out_scores.append(scores[i][keep][:k])
                out_slots.append(row[keep][:k])
            else:
                s, c = self._exact(q[i : i + 1], unique(row[keep]), k)
                out_scores.append(s[0])
                out_slots.append(c[0])
        return self._as_results(out_scores, out_slots)

    # -- internals: index ------------------------------------------------------------

    def _search_index(
        self, q: np.ndarray, k: int, selector: vf.Selector, nprobe: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        if self._index is not None or self._ivf is None:
            return vf.search_index(self._index, q, k, selector, nprobe)
        return search_parts(self._ivf.indexes(), q, k, selector.sel, nprobe or 1)

    def _add_to_index(self, vectors: np.ndarray, slots: np.ndarray) -> None:
        if self._stale:
            return
        if self._index is None and self._ivf is not None:
            cq.add_with_ids(self._ivf.writable(), vectors, slots, self.coarse)
            self._dirty = True
            return
        total = self._index.ntotal + len(slots)
        if (
            self._meta["kind"] == "flat"
            and total > self.flat_max
            and self._target(total)[0] != "flat"
        ):
            self._index, self._stale = None, True  # never grow a huge float32 flat index
            return
        cq.add_with_ids(self._index, vectors, slots, self.coarse)
        self._dirty = True

    def _target(self, n: int) -> tuple[str, str]:
        """(kind, factory) the index should have at ``n`` live vectors."""
        override = self.manifest.factory_override
        if not override:
            return choose_factory(n, self.dim, self.flat_max)
        spec = normalise_factory(override)
        if n < vf.min_train_points(self.dim, spec):
            return "flat", "IDMap,Flat"  # too few vectors to train it yet: exact for now
        return kind_of_factory(spec), spec

    def _outgrown(self, n: int) -> bool:
        """Whether a commit at ``n`` live vectors should rebuild the index."""
        kind, spec = self._target(n)
        current = self._meta
        if spec == current["factory"]:
            return False
        if self.manifest.factory_override:
            return True
        if kind == current["kind"] == "ivfpq":  # same kind, more lists: retrain lazily
            return bool(n > RETRAIN_GROWTH * max(current["trained_on"], 1))
        return kind != "flat"  # a shrinking collection keeps its index until rebuild()

    def _ensure_index(self, *, force: bool = False, slots: np.ndarray | None = None) -> Any:
        """The in-memory index, (re)built from the stored vectors when stale or forced."""
        if self._stale or force:
            if slots is None:
                slots = self._live_lookup()[1]
            kind, spec = self._target(len(slots))
            self._index = self._ivf = None  # free the old index before building the new one
            start = time.perf_counter()
            ordered = np.sort(slots)
            index, nprobe = vf.trained_index(
                self.dim, spec, ordered, self._read_rows, coarse=self.coarse
            )
            vf.add_rows(index, ordered, self._read_rows, self.coarse)
            self._index, self._stale, self._dirty = index, False, True
            self._meta = _built(kind, spec, nprobe, len(slots), start)
        return self._index

    def _parted(self, n: int) -> bool:
        """Whether an index for ``n`` vectors is IVF-PQ, kept in parts."""
        return self._target(n)[0] == "ivfpq"

    def _rebuild_parts(self, gen: int, slots: np.ndarray) -> None:
        """Train on the stored vectors, then encode them straight into parts: memory is
        one part (~1.7 GB), not the whole index (~8 GB at 40.9M articles)."""
        kind, spec = self._target(len(slots))
        self._index = self._ivf = None
        start = time.perf_counter()
        ordered = np.sort(slots)
        trained, nprobe = vf.trained_index(
            self.dim, spec, ordered, self._read_rows, coarse=self.coarse
        )
        ivf = IvfParts(self.path, self.part_entries)
        ivf.fill(trained, ordered, self._read_rows, gen, self._rows, self.coarse)
        self._ivf, self._stale, self._dirty, self._dead = ivf, False, True, []
        self._meta = _built(kind, spec, nprobe, len(slots), start)

    def _exact(
        self, q: np.ndarray, slots: np.ndarray, k: int
    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
        return vf.exact_topk(q, slots, k, self._read_rows)

    def _as_results(self, scores: list[np.ndarray], slots: list[np.ndarray]) -> Results:
        return [
            list(zip(self._ids_at(c).tolist(), np.asarray(s).tolist(), strict=True))
            for s, c in zip(scores, slots, strict=True)
        ]

    # -- internals: commit -----------------------------------------------------------

    def _commit(self, *, rebuild: bool, factory: str | None, compact: bool) -> None:
        self.check_writable()
        m = self.manifest
        if not (rebuild or self._pending or self._dead or self._dirty or self._stale):
            return
        for fh in self._fh.values():
            fh.flush()
            os.fsync(fh.fileno())
        ids, slots = self._live_lookup()
        override = m.factory_override if factory is None else factory
        if override == "auto":
            override = None
        if override != m.factory_override:
            self.manifest = m = m.evolve(factory_override=override)
            rebuild = True
        outgrown = self._outgrown(len(ids))
        gen = m.generation + 1
        compacted = compact and self._rows > len(ids)
        if compacted:
            slots = self._compact(gen, slots)
        dead = self._dead_slots()
        if (rebuild or outgrown or compacted or self._stale) and self._parted(len(slots)):
            self._rebuild_parts(gen, slots)
        elif rebuild or outgrown or compacted or self._stale:
            self._ensure_index(force=True, slots=slots)
        elif dead is not None and self._index is not None:
            self._dirty = True
            if not vf.remove_slots(self._index, dead):  # e.g. HNSW: rebuild instead
                self._ensure_index(force=True, slots=slots)
        lookup_file = f"lookup.{gen}.npy"
        table = np.stack([ids, slots]) if len(ids) else np.zeros((2, 0), np.int64)
        save_npy(self.path / lookup_file, table)
        files = self._commit_index(gen)
        self.manifest = self.manifest.evolve(
            count=self._rows,
            live=len(ids),
            generation=gen,
            lookup_file=lookup_file,
            updated=now_iso(),
            format_version=FORMAT_VERSION,
            **files,
            **self._meta,
        )
        write_manifest(self.path, self.manifest)
        self._pending, self._dead, self._dirty = PendingSlots(), [], False
        self._live = len(ids)
        self._lk_ids, self._lk_slots = self._load_lookup()
        if self._ivf is not None:
            self._ivf.reload(self.manifest)
        remove_unreferenced(self.path, committed_files(self.manifest))

    def _commit_index(self, gen: int) -> dict[str, Any]:
        """Write what changed in the index; the manifest fields naming its files.

        An IVF-PQ index built whole (from the stored vectors) becomes the only part and
        leaves memory; parts take this session's additions as a new part. Other kinds
        (exact, a user's factory) are written whole, as they are small or chosen.
        """
        m = self.manifest
        if self._index is None and self._ivf is not None:
            return self._ivf.commit(gen, m.count, self._rows, self._dead_slots())
        if self._meta["kind"] == "ivfpq":
            self._ivf = IvfParts(self.path, self.part_entries)
            self._ivf.start(self._index, gen, self._rows)
            self._index = None
            part = self._ivf.parts[0]
            return {"index_file": part.file, "segments": (tuple(part),), "dead_file": None}
        index_file = m.index_file
        if self._dirty or index_file is None or m.segments:
            index_file = f"index.{gen}.faiss"
            vf.write_index(self._index, self.path / index_file)
        return {"index_file": index_file, "segments": (), "dead_file": None}


def check_compatible(
    path: Path, manifest: VectorManifest, *, dim: int | None, profile: str | None
) -> None:
    """Refuse to search vectors built with another model profile or size."""
    if profile is not None and profile != manifest.profile:
        raise IndexMismatchError(
            f"the vectors at {path} were built with model profile"
            f" {manifest.profile!r}, not {profile!r}; rebuild them or use"
            f" --models {manifest.profile}"
        )
    if dim is not None and dim != manifest.dim:
        raise IndexMismatchError(
            f"the vectors at {path} have {manifest.dim} dimensions, the model"
            f" {profile or manifest.profile!r} gives {dim}"
        )


def _built(kind: str, spec: str, nprobe: int | None, n: int, start: float) -> dict[str, Any]:
    """The manifest's index fields for an index just built on ``n`` vectors."""
    return {
        "kind": kind,
        "factory": spec,
        "nprobe": nprobe,
        "trained_on": n,
        "build_seconds": round(time.perf_counter() - start, 3),
    }


def _index_meta(m: VectorManifest) -> dict[str, Any]:
    return {
        "kind": m.kind,
        "factory": m.factory,
        "nprobe": m.nprobe,
        "trained_on": m.trained_on,
        "build_seconds": m.build_seconds,
    }
