"""Faiss for sentence collections: exact float16 while small, IVF-PQ codes beyond.

The PQ codes encode the vectors themselves (``by_residual = False``), not their
difference to a list centroid, so a code does not depend on the list it sits in. That is
what lets a grown collection retrain its coarse quantizer from the bounded sample
(:func:`trained_like`) and move every code to its new list unchanged (:func:`gather`),
without the vectors, and what lets parts written at different times share one quantizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np

from medsearch.errors import MedsearchError
from medsearch.index import vector_faiss as vf

FLAT = "IDMap,SQfp16"
ADD_BATCH = 65_536
_faiss: Any = faiss


def new_flat(dim: int) -> Any:
    return faiss.index_factory(dim, FLAT, faiss.METRIC_INNER_PRODUCT)


def is_flat(index: Any) -> bool:
    return faiss.try_extract_index_ivf(index) is None


def _ivf(index: Any) -> Any:
    return faiss.downcast_index(faiss.extract_index_ivf(index))


def factory_of(index: Any) -> str:
    if is_flat(index):
        return FLAT
    ivf = _ivf(index)
    return f"IVF{ivf.nlist},PQ{ivf.pq.M}"


def nprobe_of(index: Any) -> int | None:
    return None if is_flat(index) else int(_ivf(index).nprobe)


def convert(index: Any, dim: int, factory: str, sample: np.ndarray) -> Any:
    """A trained IVF-PQ ``factory`` index holding every entry of the exact ``index``.

    The vectors are read back (they are float16 there) and encoded.
    """
    out = _trained(dim, factory, sample)
    inner = faiss.downcast_index(index.index)
    ids = faiss.vector_to_array(index.id_map)
    for lo in range(0, len(ids), ADD_BATCH):
        hi = min(len(ids), lo + ADD_BATCH)
        out.add_with_ids(inner.reconstruct_n(lo, hi - lo), ids[lo:hi])
    return out


def _trained(dim: int, factory: str, sample: np.ndarray) -> Any:
    out = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    ivf = _ivf(out)
    ivf.by_residual = False
    ivf.do_polysemous_training = False
    try:
        out.train(np.ascontiguousarray(sample, dtype=np.float32))
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1]
        raise MedsearchError(
            f"cannot train a {factory!r} index on {len(sample)} sample vectors: {reason}"
        ) from exc
    ivf.nprobe = sentence_nprobe(ivf.nlist)
    return out


def sentence_nprobe(nlist: int) -> int:
    """Lists visited per query: 1/32 of them, at least 64.

    Sentence embeddings are not clustered enough for the articles' 1/256:
    benchmarks/sentence_index.py gave recall@10 (after exact re-scoring of 400
    candidates) 0.915 -> 0.986 on real minilm sentences (256 lists) going from 16 to 64
    probes, and 0.86 -> 0.956 on 1M synthetic 768-d vectors (4,096 lists) from 16 to 128.
    """
    return max(64, nlist // 32)


# -- parts: a compressed collection as immutable IVF-PQ files sharing one quantizer ----


def read_part(path: Path) -> Any:
    """One part of a compressed collection, its lists memory-mapped (never loaded).

    The object Faiss returns owns the index: keep it, not a view extracted from it.
    """
    return vf.read_index(path, mmap=True)


def empty_like(part: Any) -> Any:
    """An in-memory IVF-PQ index with ``part``'s quantizer and PQ and no entries.

    Built field by field: cloning a memory-mapped part would copy its lists into RAM,
    and Faiss cannot read an index file while skipping its lists in this version.
    """
    src = _ivf(part)
    return _with(faiss.clone_index(src.quantizer), src.pq, src.nprobe)


def trained_like(part: Any, dim: int, factory: str, sample: np.ndarray) -> Any:
    """An empty ``factory`` index: a coarse quantizer trained on ``sample``, and
    ``part``'s PQ, so that :func:`gather` can move ``part``'s codes into it unchanged.

    Only the quantizer is trained (k-means with L2 assignment, as Faiss's IVF training
    does for inner product); retraining the PQ too would cost minutes and be thrown away.
    """
    nlist = int(factory.split(",")[0].removeprefix("IVF"))
    x = np.ascontiguousarray(sample, dtype=np.float32)
    if len(x) < nlist:
        raise MedsearchError(f"cannot train {nlist} lists on {len(x)} sample vectors")
    kmeans = faiss.Kmeans(dim, nlist, niter=10, seed=1234)
    kmeans.train(x)
    quantizer = faiss.IndexFlatIP(dim)
    assert kmeans.centroids is not None
    quantizer.add(kmeans.centroids)
    return _with(quantizer, _ivf(part).pq, sentence_nprobe(nlist))


def _with(quantizer: Any, pq: Any, nprobe: int) -> Any:
    out = faiss.IndexIVFPQ(
        quantizer, quantizer.d, quantizer.ntotal, pq.M, pq.nbits, faiss.METRIC_INNER_PRODUCT
    )
    quantizer.this.disown()
    out.own_fields = True
    out.pq = pq
    out.by_residual = False
    out.is_trained = True
    out.nprobe = nprobe
    return out


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
        found = []
        for part in parts:
            ivf = _ivf(part)
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
    parts: list[Any], target: Any, *, reassign: bool, dead: np.ndarray | None = None
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
            keep = ~_member(ids, dead)
            ids, codes = ids[keep], codes[keep]
        if not len(ids):
            continue
        if not reassign:
            _add_entries(out, lst, ids, codes)
            continue
        _, assign = out.quantizer.search(out.pq.decode(codes), 1)
        assign = assign.ravel()
        for dest in np.unique(assign):
            pick = assign == dest
            _add_entries(out, int(dest), ids[pick], codes[pick])
    target.ntotal = out.ntotal = out.invlists.compute_ntotal()


def ids_of(part: Any) -> np.ndarray:
    """Every id (slot) a part holds, in list order."""
    lists = _ivf(part).invlists
    chunks = [
        faiss.rev_swig_ptr(lists.get_ids(i), lists.list_size(i)).copy()
        for i in range(_ivf(part).nlist)
        if lists.list_size(i)
    ]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


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


def _member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    pos = np.minimum(np.searchsorted(sorted_set, values), len(sorted_set) - 1)
    return np.asarray(sorted_set[pos] == values)
