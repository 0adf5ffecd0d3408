"""An IVF index kept as immutable parts, so that no writer loads or rewrites all of it.

At PubMed scale the IVF-PQ codes are ~45 GB for sentences and ~8 GB for articles. Held
as one index, a writer would load all of it to add a batch and write all of it at each
commit. Instead the codes live in parts (``seg.<gen>.<k>.faiss``), each a Faiss IVF file
for one contiguous range of slots, all sharing one coarse quantizer and PQ:

- a writer keeps only this session's additions in memory (:meth:`IvfParts.writable`)
  and writes them as a new part at commit;
- parts merge like a binary counter (the newest two when the older is no larger) until
  a part holds ``part_entries`` codes, then stay, so there are O(log n) small parts
  plus ~n / part_entries full ones, and a writer's memory is bounded by one merge;
- removed slots are tombstones (``dead.<gen>.npy``) excluded at search until the part
  holding them is rewritten: by a merge, or alone once :data:`PURGE_SHARE` of it is dead;
- every part is memory-mapped (the lists stay in the page cache, not in the process)
  and searched with the shared coarse assignment
  (:func:`search_parts`).

A merge copies codes list by list and never re-encodes, which is valid whatever the
encoding (residual or not): a code stays in the same list of the same quantizer.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import faiss
import numpy as np

from medsearch.errors import VectorsMissingError
from medsearch.index.sorted_ids import member, unique
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors import faiss_index as vf
from medsearch.index.vectors.layout import VectorManifest, save_npy
from medsearch.index.vectors.rows import will_need

_faiss: Any = faiss  # the SWIG wrappers take keyword arguments the stubs do not know

# A part grows by merging until it holds about this many bytes of codes and ids (16M
# 768-d sentence codes, 8M article codes), then stays: a writer's memory is bounded by
# one such merge. A part whose entries are more than PURGE_SHARE tombstones is
# rewritten without them.
PART_BYTES = 1_700_000_000
PURGE_SHARE = 0.25


class Part(NamedTuple):
    """One immutable file of codes: the slots in [lo, hi) that were live when written."""

    file: str
    lo: int
    hi: int
    entries: int


Retrain = Callable[["IvfParts", list[Part], np.ndarray, int], list[Part]]
"""Rewrite every part for a new quantizer: (parts, tombstones, gen) -> new parts."""


class IvfParts:
    """The parts of one collection: committed and memory-mapped, this session's
    additions in memory, and the committed tombstones."""

    def __init__(self, path: Path, part_entries: int) -> None:
        self.path = path
        self.part_entries = part_entries
        self.parts: list[Part] = []
        self.opened: dict[str, Any] = {}
        self.fresh: Any = None
        self.tomb = np.zeros(0, np.int64)
        self._written = 0  # parts written by this object: unique file names per commit
        self._exclusions: tuple[tuple[int, int], np.ndarray | None, vf.Selector] | None = None

    @classmethod
    def load(cls, path: Path, m: VectorManifest, part_entries: int) -> IvfParts:
        """The committed parts; a manifest without any names its whole index as one."""
        out = cls(path, part_entries)
        out.reload(m)
        return out

    def reload(self, m: VectorManifest) -> None:
        """Back to the commit ``m`` describes, keeping the parts already mapped."""
        assert m.index_file is not None
        parts = [Part(*p) for p in m.segments] or [Part(m.index_file, 0, m.count, -1)]
        opened: dict[str, Any] = {}
        for part in parts:
            file = self.path / part.file
            if not file.exists():
                raise VectorsMissingError(
                    f"{file} is missing: delete {self.path} and run `medsearch ingest`"
                    " to encode again"
                )
            index = self.opened.get(part.file)
            opened[part.file] = read_part(file) if index is None else index
        if parts[0].entries < 0:  # a single index file does not record it
            parts[0] = parts[0]._replace(entries=int(opened[parts[0].file].ntotal))
        self.parts, self.opened, self.fresh = parts, opened, None
        self.tomb = np.load(self.path / m.dead_file) if m.dead_file else np.zeros(0, np.int64)
        self._exclusions = None

    # -- reading ---------------------------------------------------------------------

    def index(self, part: Part) -> Any:
        found = self.opened.get(part.file)
        if found is None:
            found = self.opened[part.file] = read_part(self.path / part.file)
        return found

    def indexes(self) -> list[Any]:
        """Every part's index, this session's additions last."""
        fresh = [self.fresh] if self.fresh is not None and self.fresh.ntotal else []
        return [self.index(p) for p in self.parts] + fresh

    def excluded(self, pending: np.ndarray | None) -> np.ndarray | None:
        """Slots a search must skip, sorted: committed tombstones and this session's
        removals (``pending``, sorted)."""
        if not len(self.tomb):
            return pending
        return self.tomb if pending is None else np.union1d(self.tomb, pending)

    def exclusions(
        self, pending: np.ndarray | None, rows: int
    ) -> tuple[np.ndarray | None, vf.Selector]:
        """:meth:`excluded` and its selector over ``rows`` slots, built once per state.

        At PubMed scale the tombstones may number millions; a union and a bitmap per
        query would cost more than the scan. Within a commit removals only accumulate,
        so (rows, number pending) names the state; a reload starts afresh."""
        key = (rows, 0 if pending is None else len(pending))
        if self._exclusions is None or self._exclusions[0] != key:
            dead = self.excluded(pending)
            self._exclusions = (key, dead, vf.Selector(None, dead, rows))
        return self._exclusions[1], self._exclusions[2]

    # -- writing ---------------------------------------------------------------------

    def writable(self) -> Any:
        """Where additions go: a new in-memory part with the shared quantizer and PQ."""
        if self.fresh is None:
            self.fresh = empty_like(self.index(self.parts[0]))
        return self.fresh

    def write(self, index: Any, gen: int, lo: int, hi: int, *, first: bool = False) -> Part:
        """Write ``index`` as a part. With codes of raw vectors (sentences) only the
        ``first`` part keeps the coarse quantizer: the others' lists are scanned with the
        first's assignment, and a quantizer in each would cost its size (50 MB at
        16,384 x 768) on disk and in every search process, once per part. Residual
        codes (articles) need their centroids to be scored, so they keep it."""
        self._written += 1
        file = f"seg.{gen}.{self._written}.faiss"
        keep = first or bool(_ivf(index).by_residual)
        vf.write_index(index if keep else _without_quantizer(index), self.path / file)
        return Part(file, lo, hi, int(index.ntotal))

    def start(self, index: Any, gen: int, rows: int) -> None:
        """A whole new index (built or retrained) becomes the only part."""
        part = self.write(index, gen, 0, rows, first=True)
        self.parts, self.opened = [part], {part.file: read_part(self.path / part.file)}
        self.fresh, self.tomb = None, np.zeros(0, np.int64)

    def fill(
        self,
        trained: Any,
        slots: np.ndarray,
        read_rows: Callable[[np.ndarray], np.ndarray],
        gen: int,
        rows: int,
        coarse: cq.Coarse = cq.CPU,
    ) -> None:
        """Encode the vectors at ``slots`` (sorted) into parts of ``part_entries``, one in
        memory at a time: a rebuild of PubMed's article index never holds its ~8 GB."""
        parts: list[Part] = []
        target, lo = trained, 0
        for start in range(0, len(slots), vf.ADD_BATCH):
            batch = slots[start : start + vf.ADD_BATCH]
            cq.add_with_ids(target, read_rows(batch), batch, coarse)
            if target.ntotal >= self.part_entries:
                hi = int(batch[-1]) + 1
                parts.append(self.write(target, gen, lo, hi, first=not parts))
                target, lo = empty_like(trained), hi
        if target.ntotal or not parts:
            parts.append(self.write(target, gen, lo, rows, first=not parts))
        else:
            parts[-1] = parts[-1]._replace(hi=rows)
        self.parts, self.opened, self.fresh = parts, {}, None
        self.tomb = np.zeros(0, np.int64)

    def commit(
        self,
        gen: int,
        committed_rows: int,
        rows: int,
        dead: np.ndarray | None,
        retrain: Retrain | None = None,
    ) -> dict[str, Any]:
        """Write this session's part, then retrain or merge and purge; the manifest's
        fields for the result (written by the caller's manifest, the commit point)."""
        tomb = self.excluded(dead)
        tomb = np.zeros(0, np.int64) if tomb is None else tomb
        parts = list(self.parts)
        lo, hi = committed_rows, rows
        if hi > lo:
            fresh = self.fresh
            if fresh is not None:
                vf.remove_slots(fresh, tomb[(tomb >= lo) & (tomb < hi)])
            if fresh is not None and fresh.ntotal:
                parts.append(self.write(fresh, gen, lo, hi))
            else:  # every addition was removed again: the last part's range grows
                parts[-1] = parts[-1]._replace(hi=hi)
            tomb = tomb[tomb < lo]
        if retrain is not None:
            parts, tomb = retrain(self, parts, tomb, gen), np.zeros(0, np.int64)
        else:
            parts, tomb = self._tidy(parts, tomb, gen)
        dead_file = None
        if len(tomb):
            dead_file = f"dead.{gen}.npy"
            save_npy(self.path / dead_file, tomb)
        return {
            "index_file": parts[0].file,
            "segments": tuple(tuple(p) for p in parts),
            "dead_file": dead_file,
        }

    def _tidy(self, parts: list[Part], tomb: np.ndarray, gen: int) -> tuple[list[Part], np.ndarray]:
        """Merge the newest parts like a binary counter; rewrite parts mostly dead."""

        def rewrite(group: list[Part]) -> Part:
            nonlocal tomb
            lo, hi, first = group[0].lo, group[-1].hi, group[0] == parts[0]
            target = empty_like(self.index(group[0]))
            inside = (tomb >= lo) & (tomb < hi)
            gather([self.index(p) for p in group], target, reassign=False, dead=tomb[inside])
            tomb = tomb[~inside]
            return self.write(target, gen, lo, hi, first=first)

        for i, part in enumerate(parts):
            in_part = np.count_nonzero((tomb >= part.lo) & (tomb < part.hi))
            if in_part > PURGE_SHARE * max(part.entries, 1):
                parts[i] = rewrite([part])
        while len(parts) >= 2:
            older, newer = parts[-2].entries, parts[-1].entries
            if older > newer or older + newer > self.part_entries:
                break
            parts[-2:] = [rewrite(parts[-2:])]
        return parts, tomb


# -- Faiss operations on parts -------------------------------------------------------


def _ivf(index: Any) -> Any:
    return faiss.downcast_index(faiss.extract_index_ivf(index))


def read_part(path: Path) -> Any:
    """One part of a compressed collection, its lists memory-mapped (never loaded).

    The object Faiss returns owns the index: keep it, not a view extracted from it.
    """
    return vf.read_index(path, mmap=True)


def _announce(ivf: Any, lists: np.ndarray) -> None:
    """Start reading the probed lists of a part's memory-mapped file, exactly and all at
    once, before Faiss scans them page by page: each fault was otherwise widened into a
    read-around (the first query on the 10M home read 560 MB of parts for 64 of 16,384
    lists).
    """
    il = faiss.downcast_InvertedLists(ivf.invlists)
    if not isinstance(il, faiss.OnDiskInvertedLists):
        return  # in memory: nothing to read
    ranges = []
    for lst in lists.tolist():
        n = il.list_size(lst)
        if n:
            ranges.append((int(il.get_codes(lst)), n * il.code_size))
            ranges.append((int(il.get_ids(lst)), n * 8))
    will_need(ranges)


def empty_like(part: Any) -> Any:
    """An in-memory IVF-PQ index with ``part``'s quantizer and PQ and no entries.

    Built field by field: cloning a memory-mapped part would copy its lists into RAM,
    and Faiss cannot read an index file while skipping its lists in this version.
    """
    src = _ivf(part)
    quantizer = faiss.clone_index(src.quantizer)
    return ivfpq_with(quantizer, src.pq, src.nprobe, by_residual=src.by_residual, nlist=src.nlist)


def ivfpq_with(
    quantizer: Any, pq: Any, nprobe: int, *, by_residual: bool, nlist: int | None = None
) -> Any:
    """An empty, trained inner-product IVF-PQ index over ``quantizer`` (taken over)."""
    lists = quantizer.ntotal if nlist is None else nlist
    out = faiss.IndexIVFPQ(
        quantizer, quantizer.d, lists, pq.M, pq.nbits, faiss.METRIC_INNER_PRODUCT
    )
    quantizer.this.disown()
    out.own_fields = True
    out.pq = pq
    out.by_residual = by_residual
    out.is_trained = True
    out.nprobe = nprobe
    return out


def _without_quantizer(index: Any) -> Any:
    """``index``'s lists and PQ behind an empty quantizer (for writing only): scanning
    a list of codes of raw vectors needs no centroid."""
    src = _ivf(index)
    shell = ivfpq_with(
        faiss.IndexFlatIP(src.d), src.pq, src.nprobe, by_residual=src.by_residual, nlist=src.nlist
    )
    shell.replace_invlists(src.invlists, False)
    shell.ntotal = src.ntotal
    return shell


def search_parts(
    parts: list[Any], queries: np.ndarray, k: int, selector: Any, nprobe: int
) -> tuple[np.ndarray, np.ndarray]:
    """(scores, slots) of the top ``k`` over every part, as if they were one index.

    The coarse quantizer (shared) runs once; each part then scans the same lists of its
    own (``search_preassigned``) and the per-part top ``k`` are merged. Measured at 700K
    768-d sentences in two parts: 4.2 ms p50 against 7.0 ms for Faiss's
    ``HStackInvertedLists``, which copies every probed list of every part per query.
    """
    q = np.ascontiguousarray(queries, dtype=np.float32)
    first = _ivf(parts[0])
    nprobe = max(1, min(nprobe, first.nlist))
    k = max(1, min(k, sum(int(p.ntotal) for p in parts)))
    scanned = sum(int(p.ntotal) for p in parts) * nprobe / first.nlist
    long_scan = scanned > vf.PARALLEL_SCAN
    params = _faiss.SearchParametersIVF(sel=selector, nprobe=nprobe)
    with vf.omp_threads(None if long_scan or len(q) > 1 else 1):
        coarse_d, coarse_i = first.quantizer.search(q, nprobe)
        probed = unique(coarse_i[coarse_i >= 0])
        found = []
        for part in parts:
            ivf = _ivf(part)
            _announce(ivf, probed)
            ivf.parallel_mode = 1 if long_scan else 0
            scores = np.empty((len(q), k), np.float32)
            slots = np.empty((len(q), k), np.int64)
            # The raw method: the Python wrapper refuses search parameters (the selector).
            ivf.search_preassigned_c(
                len(q),
                faiss.swig_ptr(q),
                k,
                faiss.swig_ptr(coarse_i),
                faiss.swig_ptr(coarse_d),
                faiss.swig_ptr(scores),
                faiss.swig_ptr(slots),
                False,
                params,
            )
            found.append((scores, slots))
    if len(found) == 1:
        return found[0]
    scores = np.concatenate([f[0] for f in found], axis=1)
    slots = np.concatenate([f[1] for f in found], axis=1)
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(slots, order, 1)


def gather(
    parts: list[Any],
    target: Any,
    *,
    reassign: bool,
    dead: np.ndarray | None = None,
    coarse: cq.Coarse = cq.CPU,
) -> None:
    """Copy every entry of ``parts`` into ``target`` except the ids in ``dead`` (sorted).

    Codes are copied, never re-encoded. ``reassign`` (a retrained quantizer) decodes each
    code to find its new list; otherwise list ``l`` goes to list ``l``. Peak memory is
    ``target`` plus one list.
    """
    out = _ivf(target)
    code_size = out.code_size
    for lst in range(_ivf(parts[0]).nlist):
        got = [_list_entries(_ivf(p).invlists, lst, code_size) for p in parts]
        ids = np.concatenate([g[0] for g in got])
        codes = np.concatenate([g[1] for g in got])
        if dead is not None and len(dead) and len(ids):
            keep = ~member(ids, dead)
            ids, codes = ids[keep], codes[keep]
        if not len(ids):
            continue
        if not reassign:
            _add_entries(out, lst, ids, codes)
            continue
        assign = coarse.assign(out.quantizer, out.pq.decode(codes))
        for dest in np.unique(assign):
            pick = assign == dest
            _add_entries(out, int(dest), ids[pick], codes[pick])
    target.ntotal = out.ntotal = out.invlists.compute_ntotal()


def _list_entries(lists: Any, lst: int, code_size: int) -> tuple[np.ndarray, np.ndarray]:
    n = lists.list_size(lst)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros((0, code_size), np.uint8)
    ids = faiss.rev_swig_ptr(lists.get_ids(lst), n).copy()
    codes = faiss.rev_swig_ptr(lists.get_codes(lst), n * code_size).copy()
    return ids, codes.reshape(n, code_size)


def _add_entries(ivf: Any, lst: int, ids: np.ndarray, codes: np.ndarray) -> None:
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    ivf.invlists.add_entries(lst, len(ids), faiss.swig_ptr(ids), faiss.swig_ptr(codes))
