"""Abstract-sentence vectors without a float copy per sentence.

PubMed has ~350M abstract sentences; a float16 copy of each at 768-d is 1.5 KB, ~540 GB,
more than the whole data home may take. A sentence collection therefore keeps only::

    manifest.json        the commit point (format 2, layout "codes")
    ids.i64              sentence id of each slot, append-only (as for articles)
    lookup.<gen>.npy     live sentence ids sorted, and their slots (deletes, updates)
    sample.f16           a bounded uniform sample of the vectors ever added: training only
    index.<gen>.faiss    the vectors themselves: exact float16 while the collection is
                         small, Faiss IVF-PQ codes (by_residual off) beyond

Search returns candidates with approximate (PQ) scores; the dense side re-scores the top
few hundred exactly by re-encoding their text with the query encoder, which is how the
sentences were encoded (:mod:`medsearch.retrieval.dense`). The text comes from the
store: a sentence id is ``pmid * 1000 + position`` and the position is the shared
splitter's (:func:`ingest.sentences.article_sentences`), so nothing else is stored.

Readers memory-map the index (``IO_FLAG_MMAP``: the inverted lists stay on disk and in
the page cache, not in the process); a writer loads it into memory on its first change.
PQ codes are of the raw vectors, not of residuals, so when the collection outgrows its
coarse quantizer (:data:`RETRAIN_GROWTH`), the quantizer is retrained on the sample and
every code is moved to its new list unchanged: no vector is needed again.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.errors import MedsearchError, NotFoundError, UsageError, VectorsMissingError
from medsearch.index import sentence_faiss as sf
from medsearch.index import vector_faiss as vf
from medsearch.index.vector_layout import (
    RETRAIN_GROWTH,
    VectorManifest,
    now_iso,
    read_manifest,
    remove_unreferenced,
    save_npy,
    truncate_to_commit,
    write_manifest,
)
from medsearch.index.vector_store import IdsLike, SlotStore

Results = list[list[tuple[int, float]]]

SENTENCE_FORMAT = 2
LAYOUT = "codes"

# Below this many live sentences the index is exact float16 (Faiss SQfp16: 2 bytes per
# dimension, the vectors themselves, no second copy). benchmarks/sentence_index.py:
# exact search over 100K x 768 costs ~25 ms a query here, and a collection this small
# (~12K abstracts) is ~150 MB either way; past it IVF-PQ is smaller and faster.
FLAT_MAX = 100_000

# Reservoir sample kept for (re)training: 524,288 x 768 float16 = 768 MB at PubMed scale
# (0.15% of ~350M sentences): 32 points for each of 16,384 lists (vector_layout's
# MAX_NLIST) and far more than PQ's codebooks need (256 x 39 per sub-quantizer).
SAMPLE_MAX = 524_288
POINTS_PER_LIST = 32


def ivfpq_factory(n: int, dim: int, sample_rows: int) -> str:
    """IVF lists for ``n`` sentences (~4 sqrt(n), trainable from the sample), PQ dim/8."""
    from medsearch.index.vector_layout import nlist_for

    nlist = nlist_for(n)
    while nlist > 16 and nlist * POINTS_PER_LIST > sample_rows:
        nlist //= 2
    return f"IVF{nlist},PQ{sf.pq_bytes(dim)}"


class SentenceCollection(SlotStore):
    """Sentence vectors as codes keyed by sentence id; see the module docstring."""

    flat_max: int = FLAT_MAX
    sample_max: int = SAMPLE_MAX

    def __init__(self, path: Path, manifest: VectorManifest) -> None:
        super().__init__(path, manifest)
        self._index: Any = None
        self._in_memory = False
        self._dirty = False
        self._sample_rows = manifest.sample_rows
        self._seen = manifest.sample_seen
        if manifest.index_file and (path / manifest.index_file).exists():
            self._index = sf.read_index(path / manifest.index_file, mmap=True)
        elif manifest.live:
            raise VectorsMissingError(
                f"{path / str(manifest.index_file)} is missing: delete {path} and run"
                " `medsearch ingest` to encode the sentences again"
            )
        else:
            self._index = sf.new_flat(manifest.dim)
            self._in_memory = True

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
    ) -> SentenceCollection:
        """Open (or create) the collection at ``path``, recovering to the last commit.

        A directory in the old layout (a float16 copy per sentence) is not searched: the
        error says how to migrate it (:mod:`medsearch.index.sentence_migrate`, which
        ``medsearch ingest`` runs). ``readonly`` (searches) skips the recovery, as for
        :meth:`medsearch.index.vector.VectorCollection.open`.
        """
        from medsearch.index.vector import check_compatible

        path = Path(path)
        manifest = read_manifest(path)
        if manifest is None:
            if not create:
                raise VectorsMissingError(
                    f"no sentence vectors at {path} (run `medsearch ingest` to build them)"
                )
            if dim is None or profile is None:
                raise UsageError("creating a sentence collection needs a dim and a profile")
            path.mkdir(parents=True, exist_ok=True)
            stamp = now_iso()
            manifest = VectorManifest(
                profile=profile,
                dim=dim,
                created=stamp,
                updated=stamp,
                vectors_file="",
                layout=LAYOUT,
                format_version=SENTENCE_FORMAT,
            )
            (path / manifest.ids_file).write_bytes(b"")
            write_manifest(path, manifest)
        if manifest.layout != LAYOUT:
            raise OldLayoutError(path)
        if manifest.format_version > SENTENCE_FORMAT:
            raise MedsearchError(
                f"{path} was written by a newer medsearch (format {manifest.format_version})"
            )
        check_compatible(path, manifest, dim=dim, profile=profile)
        if readonly:
            return cls(path, manifest).read_only()
        _recover(path, manifest)
        return cls(path, manifest)

    @property
    def exact(self) -> bool:
        """Whether search scores are exact (small collections) or PQ estimates."""
        return sf.is_flat(self._index)

    # -- writing ---------------------------------------------------------------------

    def add(self, ids: IdsLike, vectors: np.ndarray) -> None:
        """Store ``vectors`` under ``ids``; an id already present is replaced."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        vectors = np.asarray(vectors, dtype=np.float32)
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
        if not np.isfinite(vectors.astype(np.float16)).all():
            raise MedsearchError("vectors contain NaN/inf or values beyond float16 range")
        index = self._writable()
        old = self._slots_of(ids)
        replaced = old >= 0
        if replaced.any():
            self._dead.append(old[replaced])
        slots = np.arange(self._rows, self._rows + len(ids), dtype=np.int64)
        self._append(self.manifest.ids_file, ids.astype("<i8").tobytes())
        self._sample(vectors)
        self._rows += len(ids)
        self._live += int((~replaced).sum())
        self._pending.update(zip(ids.tolist(), slots.tolist(), strict=True))
        index.add_with_ids(vectors, slots)
        self._dirty = True

    def commit(self) -> None:
        """Make every change durable at once; convert or retrain the index when grown."""
        self._commit(force_rebuild=False)

    def rebuild(self) -> None:
        """Drop removed entries and retrain the index for the current size, then commit."""
        self._commit(force_rebuild=True)

    # -- reading ---------------------------------------------------------------------

    def get(self, ids: IdsLike) -> np.ndarray:
        raise NotFoundError(
            "sentence vectors are not stored (only compressed codes): re-encode the"
            " sentence text with the query encoder"
        )

    def search(self, queries: np.ndarray, k: int, *, nprobe: int | None = None) -> Results:
        """Per query, up to ``k`` (sentence id, score) pairs, best first.

        Scores are exact inner products while :attr:`exact`; otherwise PQ estimates, so
        ask for more than you need and re-score (see :mod:`medsearch.retrieval.dense`).
        """
        q = np.atleast_2d(np.asarray(queries, dtype=np.float32))
        if q.shape[1] != self.dim:
            raise UsageError(f"queries have {q.shape[1]} dimensions, the index {self.dim}")
        if k <= 0 or self._live == 0:
            return [[] for _ in range(len(q))]
        dead = self._dead_slots()
        selector = vf.Selector(None, dead, self._rows)
        probe = nprobe or self.manifest.nprobe
        scores, slots = vf.search_index(self._index, q, k, selector, probe)
        out: Results = []
        for row_s, row_c in zip(scores, slots, strict=True):
            keep = row_c >= 0
            ids = self._ids_at(row_c[keep])
            out.append(list(zip(ids.tolist(), row_s[keep].tolist(), strict=True)))
        return out

    # -- internals -------------------------------------------------------------------

    def _writable(self) -> Any:
        """The index in memory (a reader's memory map cannot take additions)."""
        if not self._in_memory:
            assert self.manifest.index_file is not None
            self._index = sf.read_index(self.path / self.manifest.index_file, mmap=False)
            self._in_memory = True
        return self._index

    def _sample(self, vectors: np.ndarray) -> None:
        """Reservoir sampling (Algorithm R) into ``sample.f16``: uniform over all adds.

        Replacements are written in place before the commit; a crash can leave a few
        rows from vectors that were never committed, which is harmless for training.
        """
        half = vectors.astype(np.float16)
        cap = self.sample_max
        room = max(0, min(cap - self._sample_rows, len(half)))
        file = self.path / self.manifest.sample_file
        if room:
            self._append(self.manifest.sample_file, half[:room].tobytes())
            self._sample_rows += room
        rest = half[room:]
        seen = self._seen + room
        self._seen += len(half)
        if not len(rest):
            return
        rng = np.random.default_rng(seen)
        slots = rng.integers(0, seen + np.arange(1, len(rest) + 1))
        hit = slots < cap
        if not hit.any():
            return
        fh = self._fh.pop(self.manifest.sample_file, None)
        if fh is not None:
            fh.close()
        width = 2 * self.dim
        with open(file, "r+b") as out:
            for row, slot in zip(rest[hit], slots[hit].tolist(), strict=True):
                out.seek(slot * width)
                out.write(row.tobytes())

    def _read_sample(self) -> np.ndarray:
        if self._sample_rows == 0:
            return np.zeros((0, self.dim), np.float32)
        fh = self._fh.get(self.manifest.sample_file)
        if fh is not None:
            fh.flush()
        raw = np.fromfile(
            self.path / self.manifest.sample_file, np.float16, self._sample_rows * self.dim
        )
        return raw.reshape(self._sample_rows, self.dim).astype(np.float32)

    def _commit(self, *, force_rebuild: bool) -> None:
        self.check_writable()
        if not (force_rebuild or self._pending or self._dead or self._dirty):
            return
        for fh in self._fh.values():
            fh.flush()
            os.fsync(fh.fileno())
        ids, slots = self._live_lookup()
        dead = self._dead_slots()
        index = self._writable()
        if dead is not None:
            vf.remove_slots(index, dead)
        trained_on = self.manifest.trained_on
        want_ivf = len(ids) > self.flat_max
        grown = len(ids) > RETRAIN_GROWTH * max(trained_on, 1)
        if (want_ivf and (sf.is_flat(index) or grown)) or (force_rebuild and want_ivf):
            factory = ivfpq_factory(len(ids), self.dim, self._sample_rows)
            if force_rebuild or factory != sf.factory_of(index):
                self._index = None
                self._index = index = sf.convert(index, self.dim, factory, self._read_sample())
                trained_on = len(ids)
        gen = self.manifest.generation + 1
        lookup_file = f"lookup.{gen}.npy"
        table = np.stack([ids, slots]) if len(ids) else np.zeros((2, 0), np.int64)
        save_npy(self.path / lookup_file, table)
        index_file = f"index.{gen}.faiss"
        vf.write_index(index, self.path / index_file)
        self.manifest = self.manifest.evolve(
            count=self._rows,
            live=len(ids),
            generation=gen,
            index_file=index_file,
            lookup_file=lookup_file,
            kind="flat" if sf.is_flat(index) else "ivfpq",
            factory=sf.factory_of(index),
            nprobe=sf.nprobe_of(index),
            trained_on=trained_on if not sf.is_flat(index) else 0,
            sample_rows=self._sample_rows,
            sample_seen=self._seen,
            updated=now_iso(),
        )
        write_manifest(self.path, self.manifest)
        self._pending, self._dead, self._dirty = {}, [], False
        self._live = len(ids)
        self._lk_ids, self._lk_slots = self._load_lookup()
        _remove_unreferenced(self.path, self.manifest)


class OldLayoutError(MedsearchError):
    """A sentence collection written before format 2 (a float16 copy of every vector)."""

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"the sentence vectors at {path} use the old layout (a float16 copy of every"
            " sentence, ~1.5 KB each at 768-d); run `medsearch ingest` once to convert"
            " them to compressed codes (no re-encoding), or delete that directory to skip"
            " sentence search"
        )
        self.path = path


def _recover(path: Path, m: VectorManifest) -> None:
    """Cut rows written after the last commit and delete files no commit refers to."""
    committed = ((m.ids_file, 8 * m.count), (m.sample_file, 2 * m.dim * m.sample_rows))
    truncate_to_commit(path, committed, "the sentences must be re-encoded")
    _remove_unreferenced(path, m)


def _remove_unreferenced(path: Path, m: VectorManifest) -> None:
    remove_unreferenced(path, {m.ids_file, m.sample_file, m.index_file, m.lookup_file})
