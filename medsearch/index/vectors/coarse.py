"""Coarse quantisation: which inverted list each vector goes to, and the k-means that
trains the lists, on Faiss's CPU code or on the GPU the vector stage already holds.

Why a GPU path: at PubMed scale an IVF index has 16,384 lists of 768-d centroids, so
placing one vector costs 25 MFLOP. The vector stage makes ~40K sentence vectors a second
on an H100; placing them is ~1 TFLOP/s of work, far past what the CPU side of the stage
can give while it also splits, tokenises and writes (2 cores here: 10.6K placements/s at
16,384 lists). Training is worse: the first IVF-PQ of the sentences (172K vectors) took
45 s of Faiss k-means on the H100 machine's 16 cores, the GPU idle all along. A matrix
product on the encoder's GPU does either in milliseconds.

:data:`CPU` (Faiss, unchanged behaviour) is the default everywhere; the vector stage
hands a :class:`TorchCoarse` to the collections it writes when it encodes on CUDA.
Readers never need one: a query visits a handful of lists.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Any

import faiss
import numpy as np

_faiss: Any = faiss
CHUNK_BYTES = 1 << 30  # scores held at once while assigning: rows x lists x 4 bytes


class Coarse:
    """Faiss on the CPU: what every index did before (and does without a GPU)."""

    name = "cpu"

    def assign(self, quantizer: Any, x: np.ndarray) -> np.ndarray:
        """The nearest centroid of each row of ``x`` in ``quantizer``'s metric."""
        _, found = quantizer.search(np.ascontiguousarray(x, dtype=np.float32), 1)
        return np.ascontiguousarray(found.ravel(), dtype=np.int64)

    def kmeans(self, x: np.ndarray, k: int, *, niter: int, seed: int, spherical: bool) -> Any:
        """``k`` centroids of ``x`` (float32 ``(k, d)``); spherical: unit-norm centroids
        and inner-product assignment, as Faiss trains an inner-product IVF."""
        km = _faiss.Kmeans(x.shape[1], k, niter=niter, seed=seed, spherical=spherical)
        km.train(np.ascontiguousarray(x, dtype=np.float32))
        return np.ascontiguousarray(km.centroids, dtype=np.float32)

    def train_pq(self, pq: Any, x: np.ndarray, *, niter: int, seed: int) -> None:
        """The product quantizer's codebooks (Faiss's own training)."""
        pq.cp.niter, pq.cp.seed = niter, seed
        pq.train(np.ascontiguousarray(x, dtype=np.float32))

    def encode(self, ivf: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Each row's list and PQ code for the IVF-PQ ``ivf``, or None to leave both to
        Faiss's ``add_with_ids`` (what the CPU does)."""
        return None


CPU = Coarse()


class TorchCoarse(Coarse):
    """The same work as matrix products on a torch device (any device; CUDA is the point).

    The quantizer's centroids are copied to the device once per quantizer (a 16,384-list
    quantizer is 50 MB) and reused for every batch until the quantizer changes.

    On CUDA, placement (:meth:`encode`, :meth:`assign`) runs on a stream of its own. The
    caller is the stage's writer thread, while an encoder thread queues a whole chunk of
    forward passes (~20 batches, ~1.6 s) on the device's default stream; on that stream
    the writer's copy of the lists back waits for all of them. Measured on an H100
    (docs/benchmarks-history.md, "Measured on an H100 again", 120K articles): the
    writer's busy time is 9% lower on its own stream and the stage takes as long, since
    the writer does not bound it; the stream is kept for the headroom it leaves a writer
    fed by two GPUs. ``side_stream=False`` places on the default stream, for the
    benchmark's A/B.
    """

    def __init__(self, device: str, *, side_stream: bool = True) -> None:
        self.device = device
        self.name = device if device != "cpu" else "torch-cpu"
        self.side_stream = side_stream
        self._stream: Any = None
        self._key: tuple[int, int, bytes] | None = None
        self._centroids: Any = None
        self._books_key: tuple[int, int, bytes] | None = None
        self._books: Any = None

    def _on_device(self, quantizer: Any) -> tuple[Any, bool]:
        import torch

        flat = _faiss.downcast_index(quantizer)
        n, d = int(flat.ntotal), int(flat.d)
        view = _faiss.rev_swig_ptr(flat.get_xb(), n * d).reshape(n, d)
        key = (int(flat.this), n, view[0].tobytes() + view[-1].tobytes())
        if key != self._key:
            self._centroids = torch.from_numpy(view.copy()).to(self.device)
            self._key = key
        return self._centroids, flat.metric_type == _faiss.METRIC_INNER_PRODUCT

    def _codebooks(self, pq: Any) -> Any:
        """The PQ's centroids on the device, ``(M, ksub, dsub)``, copied once per PQ."""
        import torch

        m, k, dsub = int(pq.M), int(pq.ksub), int(pq.dsub)
        flat = _faiss.vector_to_array(pq.centroids)
        key = (int(pq.this), m * k * dsub, flat[:dsub].tobytes() + flat[-dsub:].tobytes())
        if key != self._books_key:
            self._books = torch.from_numpy(flat.reshape(m, k, dsub).copy()).to(self.device)
            self._books_key = key
        return self._books

    def _placing(self) -> AbstractContextManager[Any]:
        """Where placement work is queued: its own CUDA stream (see the class), else the
        current one. Everything it caches on the device is made inside this too, so the
        cached tensors belong to the stream that uses them."""
        if not (self.side_stream and self.device.startswith("cuda")):
            return nullcontext()
        import torch

        if self._stream is None:
            self._stream = torch.cuda.Stream(device=self.device)  # type: ignore[no-untyped-call]
        return torch.cuda.stream(self._stream)

    def encode(self, ivf: Any, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Lists and 8-bit PQ codes in one trip to the device (residuals where ``ivf``
        encodes them): Faiss's PQ encoding is the writer's largest CPU cost after list
        placement (8 us a 768-d vector on 2 cores, PQ96), and on the vector stage's
        machine the CPU is the reader processes'."""
        import torch

        if not isinstance(ivf, _faiss.IndexIVFPQ) or int(ivf.pq.nbits) != 8:
            return None
        m, dsub = int(ivf.pq.M), int(ivf.pq.dsub)
        with self._placing(), torch.inference_mode():
            centroids, inner = self._on_device(ivf.quantizer)
            books = self._codebooks(ivf.pq)
            rows = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(self.device)
            lists = _nearest(rows, centroids, inner)
            if ivf.by_residual:
                rows = rows - centroids[lists]
            sub = rows.reshape(len(x), m, dsub).transpose(0, 1).contiguous()
            codes = _nearest(sub, books, False).transpose(0, 1).to(torch.uint8)
            return (
                np.ascontiguousarray(lists.cpu().numpy(), dtype=np.int64),
                np.ascontiguousarray(codes.cpu().numpy()),
            )

    def assign(self, quantizer: Any, x: np.ndarray) -> np.ndarray:
        import torch

        if len(x) == 0:
            return np.zeros(0, dtype=np.int64)
        with self._placing(), torch.inference_mode():
            centroids, inner = self._on_device(quantizer)
            rows = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).to(self.device)
            found = _nearest(rows, centroids, inner)
            return np.ascontiguousarray(found.cpu().numpy(), dtype=np.int64)

    def kmeans(self, x: np.ndarray, k: int, *, niter: int, seed: int, spherical: bool) -> Any:
        """Lloyd's k-means from ``k`` distinct random rows; an emptied cluster restarts at
        a random row (Faiss splits a big one instead: either keeps every list in use)."""
        rows = np.ascontiguousarray(x, dtype=np.float32)[None]
        return self._lloyd(rows, k, niter=niter, seed=seed, spherical=spherical)[0]

    def train_pq(self, pq: Any, x: np.ndarray, *, niter: int, seed: int) -> None:
        """Each sub-quantizer's 256 centroids, all sub-spaces in one batched k-means
        (L2, as Faiss trains a PQ); Faiss took 22 s for PQ96 on 2 cores."""
        m, k, dsub = int(pq.M), int(pq.ksub), int(pq.dsub)
        rows = np.ascontiguousarray(x, dtype=np.float32).reshape(len(x), m, dsub)
        centroids = self._lloyd(rows.transpose(1, 0, 2), k, niter=niter, seed=seed)
        _faiss.copy_array_to_vector(np.ascontiguousarray(centroids).ravel(), pq.centroids)

    def _lloyd(
        self, x: np.ndarray, k: int, *, niter: int, seed: int, spherical: bool = False
    ) -> np.ndarray:
        """k-means in ``m`` independent spaces at once: ``x`` is ``(m, n, d)``, the result
        ``(m, k, d)``. Spherical: inner-product assignment and unit-norm centroids."""
        import torch

        m, n, d = x.shape
        if n < k:
            raise ValueError(f"k-means needs at least {k} points, got {n}")
        gen = torch.Generator().manual_seed(seed)
        with torch.inference_mode():
            rows = torch.from_numpy(np.ascontiguousarray(x)).to(self.device)
            first = torch.randperm(n, generator=gen)[:k].to(self.device)
            centroids = rows[:, first].clone()
            if spherical:
                centroids = torch.nn.functional.normalize(centroids, dim=2)
            offsets = (torch.arange(m, device=self.device) * k).unsqueeze(1)
            for _ in range(niter):
                nearest = _nearest(rows, centroids, spherical)
                flat = (nearest + offsets).ravel()
                sums = torch.zeros(m * k, d, device=self.device).index_add_(
                    0, flat, rows.reshape(m * n, d)
                )
                counts = torch.bincount(flat, minlength=m * k).to(rows.dtype)
                centroids = (sums / counts.clamp(min=1).unsqueeze(1)).reshape(m, k, d)
                empty = (counts == 0).nonzero().ravel()
                if len(empty):
                    pick = torch.randint(n, (len(empty),), generator=gen).to(self.device)
                    centroids.view(m * k, d)[empty] = rows.reshape(m * n, d)[
                        (empty // k) * n + pick
                    ]
                if spherical:
                    centroids = torch.nn.functional.normalize(centroids, dim=2)
            return np.ascontiguousarray(centroids.cpu().numpy(), dtype=np.float32)


def _nearest(rows: Any, centroids: Any, inner: bool) -> Any:
    """Index of the best centroid per row: argmax of inner products, or argmin of L2
    distances. ``rows`` ``(..., n, d)`` and ``centroids`` ``(..., k, d)`` batch alike;
    scores are made a slice of rows at a time (:data:`CHUNK_BYTES`)."""
    import torch

    batch = rows.shape[0] if rows.dim() == 3 else 1
    step = max(1, CHUNK_BYTES // (4 * batch * max(1, centroids.shape[-2])))
    norms = None if inner else (centroids * centroids).sum(dim=-1).unsqueeze(-2)
    out = []
    for lo in range(0, rows.shape[-2], step):
        scores = rows[..., lo : lo + step, :] @ centroids.transpose(-1, -2)
        if inner:
            out.append(scores.argmax(dim=-1))
        else:  # |x - c|^2 = |x|^2 - 2 x.c + |c|^2; |x|^2 does not change the argmin
            out.append((norms - 2 * scores).argmin(dim=-1))
    return torch.cat(out, dim=-1)


def ivf_of(index: Any) -> Any | None:
    """``index`` as an IVF index when it is one itself (not wrapped), else None."""
    concrete = _faiss.downcast_index(index)
    return concrete if isinstance(concrete, _faiss.IndexIVF) else None


def add_with_ids(index: Any, x: np.ndarray, ids: np.ndarray, coarse: Coarse = CPU) -> None:
    """``index.add_with_ids``, with each vector's list chosen by ``coarse``.

    An IVF-PQ with 8-bit codes gets its lists and codes from ``coarse`` too and Faiss
    only appends them (``add_sa_codes``); any other index gets its lists from
    ``coarse`` and Faiss's ``add_core`` does the rest (codes, residuals against the
    chosen centroid where the index uses them) exactly as ``add_with_ids`` would.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    ivf = ivf_of(index) if coarse is not CPU else None
    if ivf is None or len(x) == 0:
        index.add_with_ids(x, ids)
        return
    encoded = coarse.encode(ivf, x)
    if encoded is not None:  # lists and codes made on the device: Faiss only appends
        lists, codes = encoded
        prefix = lists.astype("<i8").view(np.uint8).reshape(len(x), 8)[:, : ivf.coarse_code_size()]
        ivf.add_sa_codes(np.ascontiguousarray(np.hstack([prefix, codes])), ids)
        return
    lists = coarse.assign(ivf.quantizer, x)
    ivf.add_core(len(x), _faiss.swig_ptr(x), _faiss.swig_ptr(ids), _faiss.swig_ptr(lists))


def train(index: Any, sample: np.ndarray, coarse: Coarse = CPU) -> None:
    """``index.train(sample)``, with the k-means done by ``coarse``.

    The coarse quantizer gets ``nlist`` centroids (Faiss's settings: 10 iterations,
    spherical for inner product). An IVF-PQ's codebooks are trained by ``coarse`` too
    (on the residuals when the index encodes residuals, 25 iterations on at most 256
    points per centroid, as Faiss does); any other encoder is left to Faiss, which
    skips a quantizer that already holds its centroids.
    """
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    ivf = ivf_of(index) if coarse is not CPU else None
    if ivf is None:
        index.train(sample)
        return
    quantizer = ivf.quantizer
    if quantizer.ntotal == 0:
        spherical = bool(ivf.metric_type == _faiss.METRIC_INNER_PRODUCT or ivf.cp.spherical)
        niter, seed = int(ivf.cp.niter), int(ivf.cp.seed)
        quantizer.add(coarse.kmeans(sample, ivf.nlist, niter=niter, seed=seed, spherical=spherical))
    if not isinstance(ivf, _faiss.IndexIVFPQ) or ivf.pq.nbits != 8:
        index.train(sample)
        return
    x = sample[: int(ivf.pq.cp.max_points_per_centroid) * int(ivf.pq.ksub)]
    if ivf.by_residual:
        centroids = quantizer.reconstruct_n(0, quantizer.ntotal)
        x = x - centroids[coarse.assign(quantizer, x)]
    coarse.train_pq(ivf.pq, x, niter=int(ivf.pq.cp.niter), seed=int(ivf.pq.cp.seed))
    if ivf.by_residual:
        ivf.precompute_table()
    ivf.is_trained = True
