"""Faiss for sentence collections: exact float16 while small, IVF-PQ codes beyond.

The PQ codes encode the vectors themselves (``by_residual = False``), not their
difference to a list centroid, so a code does not depend on the list it sits in. That is
what lets :func:`convert` retrain the coarse quantizer of a grown collection from the
bounded sample and move every code to its new list unchanged, without the vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import faiss
import numpy as np

from medsearch.errors import MedsearchError

FLAT = "IDMap,SQfp16"
ADD_BATCH = 65_536
_faiss: Any = faiss


def pq_bytes(dim: int) -> int:
    """PQ sub-quantizers (bytes per code): one per 8 dimensions, dividing ``dim``.

    768-d -> PQ96 (96 bytes a sentence), 384-d -> PQ48. benchmarks/sentence_index.py
    measured recall@10 after exact re-scoring of the candidates against PQ sizes.
    """
    target = max(1, dim // 8)
    for m in range(target, 0, -1):
        if dim % m == 0:
            return m
    return 1


def new_flat(dim: int) -> Any:
    return faiss.index_factory(dim, FLAT, faiss.METRIC_INNER_PRODUCT)


def read_index(path: Path, *, mmap: bool) -> Any:
    """Read an index; ``mmap`` leaves IVF lists on disk (read-only, for searching)."""
    flags = faiss.IO_FLAG_MMAP | faiss.IO_FLAG_READ_ONLY if mmap else 0
    return faiss.read_index(str(path), flags)


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
    """A trained IVF-PQ ``factory`` index holding every entry of ``index``.

    From the exact flat index the vectors are read back (they are float16 there) and
    encoded; from a smaller IVF-PQ index the codes are moved (see the module docstring).
    """
    if is_flat(index):
        out = _trained(dim, factory, sample)
        inner = faiss.downcast_index(index.index)
        ids = faiss.vector_to_array(index.id_map)
        for lo in range(0, len(ids), ADD_BATCH):
            hi = min(len(ids), lo + ADD_BATCH)
            out.add_with_ids(inner.reconstruct_n(lo, hi - lo), ids[lo:hi])
        return out
    return _rebucket(_ivf(index), dim, factory, sample)


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


def _rebucket(old: Any, dim: int, factory: str, sample: np.ndarray) -> Any:
    """A new coarse quantizer trained on ``sample``; the old codes moved unchanged."""
    new = _trained(dim, factory, sample)  # trains a PQ too; replaced by the old one below
    ivf = _ivf(new)
    ivf.pq = old.pq
    code_size = old.code_size
    lists = old.invlists
    for lo in range(old.nlist):
        n = lists.list_size(lo)
        if n == 0:
            continue
        ids = faiss.rev_swig_ptr(lists.get_ids(lo), n).copy()
        codes = faiss.rev_swig_ptr(lists.get_codes(lo), n * code_size).copy()
        codes = codes.reshape(n, code_size)
        _, assign = ivf.quantizer.search(old.pq.decode(codes), 1)
        assign = assign.ravel()
        for target in np.unique(assign):
            pick = assign == target
            sel_ids = np.ascontiguousarray(ids[pick])
            sel_codes = np.ascontiguousarray(codes[pick])
            ivf.invlists.add_entries(
                int(target), len(sel_ids), faiss.swig_ptr(sel_ids), faiss.swig_ptr(sel_codes)
            )
    ivf.ntotal = old.ntotal
    new.ntotal = old.ntotal
    return new
