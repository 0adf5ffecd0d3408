# Over 450 lines: a SentenceCollection's parts, tombstones and retraining change one
# manifest together; the Faiss work is in sentence_faiss.py and ivf_parts.py.
"""Abstract-sentence vectors without a float copy per sentence.

PubMed has ~350M abstract sentences; a float16 copy of each at 768-d is 1.5 KB, ~540 GB,
more than the whole data home may take. A sentence collection therefore keeps only::

    manifest.json        the commit point (format 2, layout "codes")
    ids.i64              sentence id of each slot, append-only (as for articles)
    lookup.<gen>.npy     live sentence ids sorted, and their slots (deletes, updates)
    sample.f16           a bounded uniform sample of the vectors ever added: training only
    index.<gen>.faiss    while the collection is small: the vectors, exact float16
    seg.<gen>.<k>.faiss  beyond: immutable parts of Faiss IVF-PQ codes (by_residual off)
                         sharing one coarse quantizer and PQ, each holding the slots
                         added in one range of commits
    dead.<gen>.npy       slots removed or replaced whose codes are still in a part

Search returns candidates with approximate (PQ) scores; the dense side re-scores the top
few hundred exactly by re-encoding their text with the query encoder, which is how the
sentences were encoded (:mod:`medsearch.retrieval.dense`). The text comes from the
store: a sentence id is ``pmid * 1000 + position`` and the position is the shared
splitter's (:func:`medsearch.sentences.article_sentences`), so nothing else is stored.

Why parts: at ~350M sentences the codes are ~45 GB. Held in one index, a writer would
load all of it to add a batch and write all of it at every commit. Instead new codes go
to a small in-memory part, written as a new file at commit; every part is memory-mapped
(``IO_FLAG_MMAP``: the lists stay in the page cache, not in the process) and searched as
one index (:func:`~medsearch.index.vectors.sentence_faiss.search_parts`). Removed slots are
tombstones until the part holding them is rewritten. Parts merge like a binary counter
(the newest two when the older is no larger) up to :data:`PART_ENTRIES`, so there are
O(log n) small parts plus ~n / PART_ENTRIES full ones, and a writer's memory is bounded
by one merge.

PQ codes are of the raw vectors, not of residuals, so when the collection outgrows its
coarse quantizer (:data:`RETRAIN_GROWTH`), the quantizer is retrained on the sample and
every code is moved to its new list unchanged, one part at a time: no vector is needed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.errors import MedsearchError, NotFoundError, UsageError, VectorsMissingError
from medsearch.index.vectors import coarse
from medsearch.index.vectors import faiss_index as vf
from medsearch.index.vectors import sentence_faiss as sf
from medsearch.index.vectors.ivf_parts import (
    PART_BYTES,
    IvfParts,
    Part,
    Retrain,
    empty_like,
    gather,
    search_parts,
)
from medsearch.index.vectors.layout import (
    RETRAIN_GROWTH,
    SAMPLE_MAX,
    VectorManifest,
    committed_files,
    now_iso,
    read_committed,
    read_manifest,
    remove_unreferenced,
    sentence_pq_bytes,
    truncate_to_commit,
    write_manifest,
)
from medsearch.index.vectors.pending_slots import PendingSlots
from medsearch.index.vectors.rows import fits_float16, to_float16, to_float32
from medsearch.index.vectors.store import IdsLike, SlotStore

Results = list[list[tuple[int, float]]]

SENTENCE_FORMAT = 3  # 2: one index file; 3: parts (format 2 is read as one part)
LAYOUT = "codes"

# Below this many live sentences the index is exact float16 (Faiss SQfp16: 2 bytes per
# dimension, the vectors themselves, no second copy). benchmarks/sentence_index.py:
# exact search over 100K x 768 costs ~25 ms a query here, and a collection this small
# (~12K abstracts) is ~150 MB either way; past it IVF-PQ is smaller and faster.
FLAT_MAX = 100_000

POINTS_PER_LIST = 32

# Reservoir replacements wait in memory until this many rows (~48 MB at 768-d), a commit
# or a read of the sample, then go to the file in slot order, which visits the file's
# pages once and in order: x3.3-4.5 faster than the same writes in arrival order
# (docs/benchmarks-history.md, 2 cores). Replacements are the writer's largest
# cost while a collection is young: ~354K of them between 0.5M and 1M sentences.
REPLACE_BUFFER_ROWS = 32_768

# Lists an earlier version trained for the wrong similarity are retrained by a commit on
# a CPU only up to this many codes: placing them again against 16,384 lists runs at
# ~10.6K codes/s on 2 cores (medsearch/index/vectors/coarse.py), ~13 minutes for 8M; PubMed's
# ~350M would take ~9 h there, minutes on the encoding GPU.
STALE_RETRAIN_CPU_MAX = 8_000_000


def ivfpq_factory(n: int, dim: int, sample_rows: int) -> str:
    """IVF lists for ``n`` sentences (~4 sqrt(n), trainable from the sample), PQ dim/8."""
    from medsearch.index.vectors.layout import nlist_for

    nlist = nlist_for(n)
    while nlist > 16 and nlist * POINTS_PER_LIST > sample_rows:
        nlist //= 2
    return f"IVF{nlist},PQ{sentence_pq_bytes(dim)}"


class SentenceCollection(SlotStore):
    """Sentence vectors as codes keyed by sentence id; see the module docstring."""

    flat_max: int = FLAT_MAX
    sample_max: int = SAMPLE_MAX
    part_entries: int = PART_BYTES // 104  # 16M PQ96 codes and their list ids

    def __init__(self, path: Path, manifest: VectorManifest) -> None:
        super().__init__(path, manifest)
        self._flat: Any = None  # exact mode: the whole index
        self._flat_in_memory = False
        self._ivf: IvfParts | None = None  # compressed mode: the parts
        self._no_exclusions = vf.Selector(None, None, 0)
        self._dirty = False
        self._sample_rows = manifest.sample_rows
        self._seen = manifest.sample_seen
        self._replacing: list[tuple[np.ndarray, np.ndarray]] = []  # (slots, float16 rows)
        self._replacing_rows = 0
        self._stale_lists: bool | None = None  # see lists_stale
        index_file = manifest.index_file
        if manifest.kind == "ivfpq" and index_file:
            self._ivf = IvfParts.load(path, manifest, self.part_entries)
        elif index_file and (path / index_file).exists():
            self._flat = vf.read_index(path / index_file, mmap=True)
        elif manifest.live:
            raise VectorsMissingError(
                f"{path / str(index_file)} is missing: delete {path} and run"
                " `medsearch ingest` to encode the sentences again"
            )
        else:
            self._flat = sf.new_flat(manifest.dim)
            self._flat_in_memory = True

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
        error says how to migrate it (:mod:`medsearch.index.vectors.sentence_migrate`, which
        ``medsearch ingest`` runs). ``readonly`` (searches) skips the recovery, as for
        :meth:`medsearch.index.vectors.collection.VectorCollection.open`.
        """
        from medsearch.index.vectors.collection import check_compatible

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
            return read_committed(path, manifest, lambda m: cls(path, m)).read_only()
        _recover(path, manifest)
        return cls(path, manifest)

    @property
    def exact(self) -> bool:
        """Whether search scores are exact (small collections) or PQ estimates."""
        return self._flat is not None

    @property
    def parts(self) -> list[Part]:
        """The committed files of codes, oldest first (empty while exact)."""
        return [] if self._ivf is None else list(self._ivf.parts)

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
        if not fits_float16(vectors):
            raise MedsearchError("vectors contain NaN/inf or values beyond float16 range")
        index = self._writable()
        old = self._slots_of(ids)
        replaced = old >= 0
        if replaced.any():
            self._bury(old[replaced])
        slots = np.arange(self._rows, self._rows + len(ids), dtype=np.int64)
        self._append(self.manifest.ids_file, ids.astype("<i8").tobytes())
        self._sample(vectors)
        self._rows += len(ids)
        self._live += int((~replaced).sum())
        self._pending.set(ids, slots)
        coarse.add_with_ids(index, vectors, slots, self.coarse)
        self._dirty = True

    def commit(self) -> None:
        """Make every change durable at once; convert, merge or retrain when grown."""
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
        selector = self._selector()
        if self._flat is not None:
            scores, slots = vf.search_index(self._flat, q, k, selector, None)
        else:
            assert self._ivf is not None
            indexes = self._ivf.indexes()
            # The rule of this version, not the manifest's: a collection trained under an
            # older rule searches as a new one would, with no retrain.
            probe = nprobe or sf.sentence_nprobe(sf.nlist_of(indexes[0]))
            scores, slots = search_parts(indexes, q, k, selector.sel, probe)
        out: Results = []
        for row_s, row_c in zip(scores, slots, strict=True):
            keep = row_c >= 0
            ids = self._ids_at(row_c[keep])
            out.append(list(zip(ids.tolist(), row_s[keep].tolist(), strict=True)))
        return out

    # -- internals -------------------------------------------------------------------

    def _selector(self) -> vf.Selector:
        """Tombstones and uncommitted removals (cached by the parts: a reader's never
        change, and at PubMed scale the tombstones may number millions)."""
        dead = self._dead_slots()
        if self._ivf is not None:
            return self._ivf.exclusions(dead, self._rows)[1]
        return vf.Selector(None, dead, self._rows) if dead is not None else self._no_exclusions

    def _writable(self) -> Any:
        """Where additions go: the exact index in memory, or this session's new part."""
        if self._flat is not None:
            if not self._flat_in_memory:
                assert self.manifest.index_file is not None
                self._flat = vf.read_index(self.path / self.manifest.index_file, mmap=False)
                self._flat_in_memory = True
            return self._flat
        assert self._ivf is not None
        return self._ivf.writable()

    def _sample(self, vectors: np.ndarray) -> None:
        """Reservoir sampling (Algorithm R) into ``sample.f16``: uniform over all adds.

        Only the rows that enter the sample are converted to float16 (converting every
        added vector cost the writer ~5 us a sentence).

        Replacements wait in memory and are written together (:meth:`_write_replacements`).
        """
        cap = self.sample_max
        room = max(0, min(cap - self._sample_rows, len(vectors)))
        if room:
            self._append(self.manifest.sample_file, to_float16(vectors[:room]).tobytes())
            self._sample_rows += room
        rest = vectors[room:]
        seen = self._seen + room
        self._seen += len(vectors)
        if not len(rest):
            return
        rng = np.random.default_rng(seen)
        slots = rng.integers(0, seen + np.arange(1, len(rest) + 1))
        hit = slots < cap
        if not hit.any():
            return
        self._replacing.append((slots[hit], to_float16(rest[hit])))
        self._replacing_rows += int(hit.sum())
        if self._replacing_rows >= REPLACE_BUFFER_ROWS:
            self._write_replacements()

    def _write_replacements(self) -> None:
        """Write the buffered reservoir replacements in slot order; of two for one slot,
        the later (Algorithm R's order).

        One positioned write per row: a scatter through a memory map was faster still,
        but counted every touched page of the 805 MB file in the writer's RSS. Replaced
        rows are durable at the next commit; a crash can leave a few rows from vectors
        that were never committed, which is harmless for training.
        """
        if not self._replacing:
            return
        slots = np.concatenate([s for s, _ in self._replacing])
        rows = np.concatenate([r for _, r in self._replacing])
        self._replacing, self._replacing_rows = [], 0
        order = np.argsort(slots, kind="stable")  # stable: a slot's later row stays later
        slots, rows = slots[order], rows[order]
        last = np.ones(len(slots), dtype=bool)
        last[:-1] = slots[1:] != slots[:-1]
        fh = self._fh.pop(self.manifest.sample_file, None)
        if fh is not None:
            fh.close()  # appended rows first, so a replacement lands on them
        width = 2 * self.dim
        fd = os.open(self.path / self.manifest.sample_file, os.O_WRONLY)
        try:
            for row, slot in zip(rows[last], slots[last].tolist(), strict=True):
                os.pwrite(fd, row.tobytes(), slot * width)
        finally:
            os.close(fd)

    def _read_sample(self) -> np.ndarray:
        self._write_replacements()
        if self._sample_rows == 0:
            return np.zeros((0, self.dim), np.float32)
        fh = self._fh.get(self.manifest.sample_file)
        if fh is not None:
            fh.flush()
        raw = np.fromfile(
            self.path / self.manifest.sample_file, np.float16, self._sample_rows * self.dim
        )
        return to_float32(raw.reshape(self._sample_rows, self.dim))

    def lists_stale(self) -> bool:
        """Whether the inverted lists were trained with plain L2 k-means, as the growth
        retrain of earlier versions did (see :func:`sf.trained_like`). A commit retrains
        them and moves the codes, with no re-encoding, when :meth:`retrains_stale_lists`."""
        if self._ivf is None:
            return False
        if self._stale_lists is None:
            self._stale_lists = not sf.spherical_lists(self._ivf.index(self._ivf.parts[0]))
        return self._stale_lists

    def retrains_stale_lists(self) -> bool:
        """Whether the next commit retrains stale lists: always where a GPU places the
        codes, on a CPU only up to :data:`STALE_RETRAIN_CPU_MAX` of them (the retrain
        places every code again, an hour or more past that on a workstation's CPU)."""
        return self.lists_stale() and (
            self.coarse is not coarse.CPU or self._live <= STALE_RETRAIN_CPU_MAX
        )

    def _commit(self, *, force_rebuild: bool) -> None:
        self.check_writable()
        # Stale lists are retrained as a rebuild retrains them, whatever else changed.
        force_rebuild = force_rebuild or self.retrains_stale_lists()
        if not (force_rebuild or self._pending or self._dead or self._dirty):
            return
        self._write_replacements()
        for fh in self._fh.values():
            fh.flush()
            os.fsync(fh.fileno())
        sample = self.path / self.manifest.sample_file
        if self.manifest.sample_file not in self._fh and sample.exists():
            with open(sample, "rb+") as fh:  # rows replaced in place by _sample
                os.fsync(fh.fileno())
        gen = self.manifest.generation + 1
        lookup_file = f"lookup.{gen}.npy"
        live = self._write_lookup(self.path / lookup_file)
        changes: dict[str, Any] = {}
        if self._flat is not None:
            changes = self._commit_flat(gen, live, force_rebuild)
        if self._flat is None:
            changes = self._commit_parts(gen, live, force_rebuild, changes)
        self.manifest = self.manifest.evolve(
            count=self._rows,
            live=live,
            generation=gen,
            lookup_file=lookup_file,
            sample_rows=self._sample_rows,
            sample_seen=self._seen,
            format_version=SENTENCE_FORMAT,
            updated=now_iso(),
            **changes,
        )
        write_manifest(self.path, self.manifest)
        self._pending, self._dead, self._dirty = PendingSlots(), [], False
        self._stale_lists = None
        self._live = live
        self._lk_ids, self._lk_slots = self._load_lookup()
        if self._ivf is not None:
            self._ivf.reload(self.manifest)
        _remove_unreferenced(self.path, self.manifest)

    def _commit_flat(self, gen: int, live: int, force_rebuild: bool) -> dict[str, Any]:
        """Write the exact index, or turn it into the first part once it is too big."""
        index = self._writable()
        dead = self._dead_slots()
        if dead is not None:
            vf.remove_slots(index, dead)
        if live <= self.flat_max:
            index_file = f"index.{gen}.faiss"
            vf.write_index(index, self.path / index_file)
            return {"index_file": index_file, "kind": "flat", "factory": sf.FLAT}
        factory = ivfpq_factory(live, self.dim, self._sample_rows)
        ivf = sf.convert(index, self.dim, factory, self._read_sample(), self.coarse)
        self._flat = None
        self._dead = []
        self._ivf = IvfParts(self.path, self.part_entries)
        self._ivf.start(ivf, gen, self._rows)
        return {"trained_on": live}

    def _commit_parts(
        self, gen: int, live: int, force_rebuild: bool, changes: dict[str, Any]
    ) -> dict[str, Any]:
        """Add this session's part, then retrain, merge or purge; the manifest's fields."""
        parts = self._ivf
        assert parts is not None
        trained_on = changes.get("trained_on", self.manifest.trained_on)
        factory = ivfpq_factory(live, self.dim, self._sample_rows)
        grown = live > RETRAIN_GROWTH * max(trained_on, 1)
        retrain = None
        if force_rebuild or (grown and factory != sf.factory_of(parts.index(parts.parts[0]))):
            retrain, trained_on = self._retrainer(factory), live
        fields = parts.commit(gen, self.manifest.count, self._rows, self._dead_slots(), retrain)
        first = parts.index(Part(*fields["segments"][0]))
        return {
            **fields,
            "kind": "ivfpq",
            "factory": sf.factory_of(first),
            "nprobe": sf.nprobe_of(first),
            "trained_on": trained_on,
        }

    def _retrainer(self, factory: str) -> Retrain:
        """Every part's codes moved to a quantizer retrained on the sample, part by part:
        memory stays one part, and no vector is needed (the codes are of raw vectors)."""
        sample = self._read_sample()

        def retrain(ivf: IvfParts, parts: list[Part], tomb: np.ndarray, gen: int) -> list[Part]:
            trained = sf.trained_like(ivf.index(parts[0]), self.dim, factory, sample, self.coarse)
            out: list[Part] = []
            for i, part in enumerate(parts):
                target = empty_like(trained)
                gather([ivf.index(part)], target, reassign=True, dead=tomb, coarse=self.coarse)
                if target.ntotal or (i == len(parts) - 1 and not out):
                    out.append(ivf.write(target, gen, part.lo, part.hi, first=not out))
                elif out:
                    out[-1] = out[-1]._replace(hi=part.hi)
            return out

        return retrain


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
    remove_unreferenced(path, committed_files(m))
