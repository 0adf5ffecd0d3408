"""The storage half of a vector collection: append-only files and the id -> slot lookup.

:class:`SlotStore` knows nothing of Faiss. It appends float16 rows and their ids, reads
rows back through memory maps, and answers "which slot holds id X" from the committed
sorted lookup (``np.searchsorted`` over a memory-mapped file) overlaid with the
uncommitted changes of this session (:class:`PendingSlots`, emptied by every commit).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, Self

import numpy as np

from medsearch.errors import MedsearchError
from medsearch.index.vectors.coarse import CPU, Coarse
from medsearch.index.vectors.layout import VectorManifest, save_npy
from medsearch.index.vectors.pending_slots import ABSENT, PendingSlots
from medsearch.index.vectors.rows import gather, to_float32

IdsLike = Sequence[int] | np.ndarray
READ_BATCH = 65_536  # rows per memmap read: ~100 MB of float32 at 768-d
LOOKUP_CHUNK = 1 << 22  # lookup entries merged at a time at commit: 64 MB of ids and slots


class SlotStore:
    """Rows of float16 vectors and their ids; slot = row number."""

    def __init__(self, path: Path, manifest: VectorManifest) -> None:
        self.path = path
        self.manifest = manifest
        self._rows = manifest.count
        self._live = manifest.live
        self._pending = PendingSlots()  # uncommitted id -> slot (-1 = removed)
        self._dead: list[np.ndarray] = []  # slots tombstoned since the last commit
        self._fh: dict[str, BinaryIO] = {}
        self._views: dict[str, np.ndarray] = {}
        self._lk_ids, self._lk_slots = self._load_lookup()
        self.readonly = False
        self.coarse: Coarse = CPU
        """Where IVF list placement and k-means run (the vector stage sets its GPU)."""

    def read_only(self) -> Self:
        """This collection as a reader: writing through it is refused (see ``open``)."""
        self.readonly = True
        return self

    @property
    def dim(self) -> int:
        return self.manifest.dim

    def close(self) -> None:
        for fh in self._fh.values():
            fh.close()
        self._fh.clear()
        self._views.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return self._live

    def remove(self, ids: IdsLike) -> int:
        """Forget ``ids`` (unknown ones are ignored); returns how many were present."""
        self.check_writable()
        ids = np.unique(np.asarray(ids, dtype=np.int64).ravel())
        slots = self._slots_of(ids)
        found = slots >= 0
        if not found.any():
            return 0
        self._bury(slots[found])
        self._pending.set(ids[found], -1)
        self._live -= int(found.sum())
        return int(found.sum())

    def contains(self, ids: IdsLike) -> np.ndarray:
        return self._slots_of(np.asarray(ids, dtype=np.int64).ravel()) >= 0

    def check_writable(self) -> None:
        if self.readonly:
            raise MedsearchError(f"{self.path} was opened for reading; it cannot be written")

    def _append(self, name: str, data: bytes) -> None:
        self.check_writable()
        fh = self._fh.get(name)
        if fh is None:
            fh = self._fh[name] = open(self.path / name, "ab")  # noqa: SIM115
        fh.write(data)
        self._views.pop(name, None)

    def _view(self, name: str, dtype: Any, width: int) -> np.ndarray:
        view = self._views.get(name)
        if view is None or len(view) != self._rows:
            if name in self._fh:
                self._fh[name].flush()
            shape = (self._rows, width) if width > 1 else (self._rows,)
            if self._rows == 0:
                view = np.zeros(shape, dtype=dtype)
            else:
                view = np.memmap(self.path / name, dtype=dtype, mode="r", shape=shape)
            self._views[name] = view
        return view

    def _read_rows(self, slots: np.ndarray) -> np.ndarray:
        """float32 rows at ``slots``; scattered ones are prefetched (:mod:`.rows`)."""
        name = self.manifest.vectors_file
        view = self._view(name, np.float16, self.dim)
        return to_float32(gather(view, slots, self.path / name))

    def _ids_at(self, slots: np.ndarray) -> np.ndarray:
        name = self.manifest.ids_file
        return gather(self._view(name, "<i8", 1), slots, self.path / name)

    def _load_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        name = self.manifest.lookup_file
        if not name or self.manifest.live == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        table = np.load(self.path / name, mmap_mode="r")
        return table[0], table[1]

    def _slots_of(self, ids: np.ndarray) -> np.ndarray:
        """Slot of each id, -1 where absent: committed lookup, then uncommitted changes."""
        slots = np.full(len(ids), -1, dtype=np.int64)
        if len(self._lk_ids):
            pos = np.searchsorted(self._lk_ids, ids)
            pos = np.minimum(pos, len(self._lk_ids) - 1)
            hit = np.asarray(self._lk_ids[pos]) == ids
            slots[hit] = np.asarray(self._lk_slots[pos[hit]])
        if self._pending:
            changed = self._pending.get(ids)
            known = changed != ABSENT
            slots[known] = changed[known]
        return slots

    def _bury(self, slots: np.ndarray) -> None:
        """Tombstone ``slots`` (distinct) until the commit; kept sorted so that
        :meth:`_dead_slots` is a sorted set without a sort per search."""
        self._dead.append(np.sort(slots))

    def _dead_slots(self) -> np.ndarray | None:
        """Every slot tombstoned since the last commit, sorted and distinct."""
        if not self._dead:
            return None
        if len(self._dead) > 1:
            self._dead = [np.unique(np.concatenate(self._dead))]
        return self._dead[0]

    def _live_lookup(self) -> tuple[np.ndarray, np.ndarray]:
        """The lookup as it will be committed: (ids sorted, slots)."""
        ids, slots = np.asarray(self._lk_ids), np.asarray(self._lk_slots)
        if not self._pending:
            return ids, slots
        p_ids, p_slots = self._pending.items()
        keep = ~np.isin(ids, p_ids)
        alive = p_slots >= 0
        ids = np.concatenate([ids[keep], p_ids[alive]])
        slots = np.concatenate([slots[keep], p_slots[alive]])
        order = np.argsort(ids, kind="stable")
        return ids[order], slots[order]

    def _write_lookup(self, file: Path) -> int:
        """Write the lookup as it will be committed to ``file``; the live count.

        The same table as :meth:`_live_lookup`, merged chunk by chunk from the committed
        (memory-mapped) lookup and this session's sorted changes, so a commit's memory
        stays one chunk however large the collection: at ~350M sentences the table is
        5.6 GB and sorting it whole would take several times that.
        """
        from numpy.lib.format import open_memmap

        old_ids, old_slots = self._lk_ids, self._lk_slots
        n = len(old_ids)
        p_ids, p_slots = self._pending.items()  # sorted
        pos = np.searchsorted(old_ids, p_ids) if n else np.zeros(len(p_ids), np.int64)
        hit = pos < n
        hit[hit] = np.asarray(old_ids[pos[hit]]) == p_ids[hit]
        gone = pos[hit]  # entries replaced (a new slot) or removed (-1)
        alive = p_slots >= 0
        ins_pos, ins_ids, ins_slots = pos[alive], p_ids[alive], p_slots[alive]
        live = n - len(gone) + len(ins_ids)
        if live == 0:  # a memory map cannot be empty
            save_npy(file, np.zeros((2, 0), np.int64))
            return 0
        tmp = file.with_name(file.name + ".tmp")
        out = open_memmap(tmp, mode="w+", dtype=np.int64, shape=(2, live))
        written = 0
        for lo in range(0, max(n, 1), LOOKUP_CHUNK):
            hi = min(n, lo + LOOKUP_CHUNK)
            last = hi >= n
            c_ids, c_slots = np.asarray(old_ids[lo:hi]), np.asarray(old_slots[lo:hi])
            d = gone[(gone >= lo) & (gone < hi)] - lo
            keep = np.ones(len(c_ids), bool)
            keep[d] = False
            c_ids, c_slots = c_ids[keep], c_slots[keep]
            pick = (ins_pos >= lo) & ((ins_pos < hi) | last)
            if pick.any():
                at = ins_pos[pick] - lo
                at = at - np.searchsorted(d, at)  # positions once ``d`` are deleted
                c_ids = np.insert(c_ids, at, ins_ids[pick])
                c_slots = np.insert(c_slots, at, ins_slots[pick])
            out[0, written : written + len(c_ids)] = c_ids
            out[1, written : written + len(c_ids)] = c_slots
            written += len(c_ids)
        assert written == live
        out.flush()
        del out
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, file)
        return live

    def _compact(self, gen: int, slots: np.ndarray) -> np.ndarray:
        """Copy live rows into new data files (slot order kept); return renumbered slots.

        The new files carry the generation in their name, so until the manifest names
        them a crash leaves the old files, and the last commit, untouched.
        """
        order = np.argsort(slots, kind="stable")
        live_slots = slots[order]
        vectors_file, ids_file = f"vectors.{gen}.f16", f"ids.{gen}.i64"
        with (
            open(self.path / vectors_file, "wb") as vfh,
            open(self.path / ids_file, "wb") as ifh,
        ):
            for lo in range(0, len(live_slots), READ_BATCH):
                batch = live_slots[lo : lo + READ_BATCH]
                view = self._view(self.manifest.vectors_file, np.float16, self.dim)
                vfh.write(np.asarray(view[batch]).tobytes())
                ifh.write(self._ids_at(batch).astype("<i8").tobytes())
            for fh in (vfh, ifh):
                fh.flush()
                os.fsync(fh.fileno())
        self.close()
        new_slots = np.empty_like(slots)
        new_slots[order] = np.arange(len(slots), dtype=np.int64)
        self._rows = len(slots)
        self.manifest = self.manifest.evolve(vectors_file=vectors_file, ids_file=ids_file)
        self._dead = []  # dead rows are gone from the data; the index is rebuilt next
        return new_slots
