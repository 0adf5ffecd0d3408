"""Faiss for sentence collections: exact float16 while small, IVF-PQ codes beyond.

The PQ codes encode the vectors themselves (``by_residual = False``), not their
difference to a list centroid, so a code does not depend on the list it sits in. That is
what lets a grown collection retrain its coarse quantizer from the bounded sample
(:func:`trained_like`) and move every code to its new list unchanged (:func:`gather`),
without the vectors, and what lets parts written at different times share one quantizer.
"""

from __future__ import annotations

from typing import Any

import faiss
import numpy as np

from medsearch.errors import MedsearchError
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors.ivf_parts import ivfpq_with

FLAT = "IDMap,SQfp16"
SENTENCE_PROBES_MIN = 128
SENTENCE_PROBES_MAX = 256
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


def nlist_of(index: Any) -> int:
    return int(_ivf(index).nlist)


def nprobe_of(index: Any) -> int | None:
    return None if is_flat(index) else int(_ivf(index).nprobe)


def convert(
    index: Any, dim: int, factory: str, sample: np.ndarray, coarse: cq.Coarse = cq.CPU
) -> Any:
    """A trained IVF-PQ ``factory`` index holding every entry of the exact ``index``.

    The vectors are read back (they are float16 there) and encoded; ``coarse`` trains
    the lists and places the vectors in them.
    """
    out = _trained(dim, factory, sample, coarse)
    inner = faiss.downcast_index(index.index)
    ids = faiss.vector_to_array(index.id_map)
    for lo in range(0, len(ids), ADD_BATCH):
        hi = min(len(ids), lo + ADD_BATCH)
        cq.add_with_ids(out, inner.reconstruct_n(lo, hi - lo), ids[lo:hi], coarse)
    return out


def _trained(dim: int, factory: str, sample: np.ndarray, coarse: cq.Coarse) -> Any:
    out = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    ivf = _ivf(out)
    ivf.by_residual = False
    ivf.do_polysemous_training = False
    try:
        cq.train(out, sample, coarse)
    except RuntimeError as exc:
        reason = str(exc).strip().splitlines()[-1]
        raise MedsearchError(
            f"cannot train a {factory!r} index on {len(sample)} sample vectors: {reason}"
        ) from exc
    ivf.nprobe = sentence_nprobe(ivf.nlist)
    return out


def sentence_nprobe(nlist: int) -> int:
    """Lists visited per query: 1/32 of them, at least 128 and at most 256.

    Sentence embeddings are not clustered enough for the articles' 1/256: the probes
    that find 0.97 of each query's true top 10 stayed at 64-128 from 256 to 4,096 lists
    and from 250K to 2M synthetic 768-d sentences, fewer (not more) as a collection
    grows at a fixed number of lists (``python -m benchmarks.sentence_index scale``). Hence a floor
    and a cap rather than a fraction:

    * the floor: a collection grown as ingest grows it (trained at ~200K sentences with
      2,048 lists, not retrained before 1.57M) recalled 0.935 of the top 10 at 1.5M
      synthetic sentences with 64 probes and 0.9545 with 128 (400 candidates re-scored;
      PQ search p50 16.6 vs 25.0 ms on 2 cores); all 51,680 real minilm sentences at
      1,024 lists, 0.950 vs 0.974;
    * the cap: 256 probes reached >= 0.99 of the true top 10's lists at 4,096 lists and
      1-2M sentences. Without it PubMed's ~350M sentences in 16,384 lists would scan
      11M codes a query; with it 5.5M.
    """
    return min(SENTENCE_PROBES_MAX, max(SENTENCE_PROBES_MIN, nlist // 32))


def spherical_lists(index: Any) -> bool:
    """Whether ``index``'s lists were trained as Faiss trains an inner-product IVF (unit
    centroids). Collections grown under earlier versions have shorter ones, and their
    next commit retrains them (``SentenceCollection.lists_stale``)."""
    if is_flat(index):
        return True
    quantizer = _ivf(index).quantizer
    if quantizer.ntotal == 0:  # a later part: the first part holds the quantizer
        return True
    norms = np.linalg.norm(quantizer.reconstruct_n(0, quantizer.ntotal), axis=1)
    return bool(np.all(np.abs(norms - 1.0) < 1e-3))


def trained_like(
    part: Any, dim: int, factory: str, sample: np.ndarray, coarse: cq.Coarse = cq.CPU
) -> Any:
    """An empty ``factory`` index: a coarse quantizer trained on ``sample``, and
    ``part``'s PQ, so that :func:`gather` can move ``part``'s codes into it unchanged.

    Only the quantizer is trained, as Faiss trains an inner-product IVF (and as
    :func:`convert` trained the first lists): spherical k-means, unit centroids assigned
    by inner product. Plain L2 k-means leaves centroids shorter the looser their cluster,
    and ranking lists by inner product with those penalises the loose ones: on 250K
    synthetic 768-d sentences the probes needed to find 0.97 of each query's true top 10
    went from 64 to all 256 lists (``python -m benchmarks.sentence_index scale``). Retraining the PQ
    too would cost minutes and be thrown away.
    """
    nlist = int(factory.split(",")[0].removeprefix("IVF"))
    x = np.ascontiguousarray(sample, dtype=np.float32)
    if len(x) < nlist:
        raise MedsearchError(f"cannot train {nlist} lists on {len(x)} sample vectors")
    quantizer = faiss.IndexFlatIP(dim)
    quantizer.add(coarse.kmeans(x, nlist, niter=10, seed=1234, spherical=True))
    return ivfpq_with(quantizer, _ivf(part).pq, sentence_nprobe(nlist), by_residual=False)
