"""Coarse quantisation on a torch device: the same lists and codes as Faiss on the CPU.

The vector stage hands :class:`TorchCoarse` its CUDA device; every test here runs it on
the CPU device, which takes the same code path (matrix products, argmax, scatter), so
the logic is checked without a GPU. The GPU speed is measured by
``python -m benchmarks.encode gpu``.
"""

from __future__ import annotations

import time
from pathlib import Path

import faiss
import numpy as np
import pytest

from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.sentence_index import SentenceCollection

DIM = 32
TORCH = cq.TorchCoarse("cpu")


def clustered(n: int, seed: int = 0, centres: int = 40) -> np.ndarray:
    rng = np.random.default_rng(seed)
    middle = rng.normal(size=(centres, DIM))
    x = middle[rng.integers(0, centres, n)] + 0.4 * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def lists_of(index: faiss.Index) -> dict[int, list[tuple[int, bytes]]]:
    """Every list's (id, code) entries, sorted: two indexes agree when these do."""
    ivf = faiss.extract_index_ivf(index)
    out = {}
    for lst in range(ivf.nlist):
        n = ivf.invlists.list_size(lst)
        if n:
            ids = faiss.rev_swig_ptr(ivf.invlists.get_ids(lst), n)
            codes = faiss.rev_swig_ptr(ivf.invlists.get_codes(lst), n * ivf.code_size)
            rows = codes.reshape(n, ivf.code_size)
            out[lst] = sorted((int(i), rows[j].tobytes()) for j, i in enumerate(ids))
    return out


@pytest.mark.parametrize("metric", [faiss.METRIC_INNER_PRODUCT, faiss.METRIC_L2])
def test_every_vector_goes_to_the_list_faiss_would_choose(metric: int) -> None:
    x = clustered(3_000, seed=1)
    quantizer = faiss.IndexFlat(DIM, metric)
    quantizer.add(clustered(64, seed=2))
    assert TORCH.assign(quantizer, x).tolist() == cq.CPU.assign(quantizer, x).tolist()
    assert TORCH.assign(quantizer, x[:0]).shape == (0,)


def test_a_changed_quantizer_is_copied_again_not_served_from_the_cache() -> None:
    x = clustered(500, seed=3)
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(clustered(16, seed=4))
    before = TORCH.assign(quantizer, x)
    quantizer.reset()
    quantizer.add(clustered(16, seed=5))
    assert TORCH.assign(quantizer, x).tolist() == cq.CPU.assign(quantizer, x).tolist()
    assert TORCH.assign(quantizer, x).tolist() != before.tolist()


@pytest.mark.parametrize("spherical", [True, False])
def test_kmeans_clusters_as_well_as_faiss_and_repeats_for_a_seed(spherical: bool) -> None:
    x = clustered(4_000, seed=6)
    ours = TORCH.kmeans(x, 40, niter=10, seed=1, spherical=spherical)
    theirs = cq.CPU.kmeans(x, 40, niter=10, seed=1, spherical=spherical)
    assert ours.shape == (40, DIM) and ours.dtype == np.float32

    def fit(centroids: np.ndarray) -> float:  # mean similarity to the nearest centroid
        return float((x @ centroids.T).max(axis=1).mean())

    assert fit(ours) >= 0.97 * fit(theirs)
    if spherical:
        np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    again = TORCH.kmeans(x, 40, niter=10, seed=1, spherical=spherical)
    np.testing.assert_array_equal(ours, again)
    with pytest.raises(ValueError, match="at least 40 points"):
        TORCH.kmeans(x[:39], 40, niter=2, seed=1, spherical=spherical)


@pytest.mark.parametrize("by_residual", [True, False])
def test_adding_through_torch_stores_the_same_lists_and_codes(by_residual: bool) -> None:
    x = clustered(3_000, seed=7)
    trained = faiss.index_factory(DIM, "IVF32,PQ8", faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(trained))
    ivf.by_residual, ivf.do_polysemous_training = by_residual, False
    trained.train(x)
    ids = np.arange(10_000, 13_000, dtype=np.int64)
    ours, theirs = faiss.clone_index(trained), faiss.clone_index(trained)
    cq.add_with_ids(ours, x, ids, TORCH)
    cq.add_with_ids(theirs, x, ids, cq.CPU)
    assert ours.ntotal == theirs.ntotal == 3_000
    assert lists_of(ours) == lists_of(theirs)


@pytest.mark.thorough  # several seconds; .ci/run runs it
def test_pq_codes_made_on_the_device_are_faiss_codes_at_sentence_width() -> None:
    """768-d vectors, PQ96 (8-dimensional sub-vectors), as the sentence collection."""
    rng = np.random.default_rng(17)
    x = rng.normal(size=(4_000, 768)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    index = faiss.index_factory(768, "IVF16,PQ96", faiss.METRIC_INNER_PRODUCT)
    ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
    ivf.by_residual, ivf.do_polysemous_training = False, False
    ivf.cp.niter = ivf.pq.cp.niter = 4
    index.train(x)
    encoded = TORCH.encode(ivf, x[:1000])
    assert encoded is not None
    lists, codes = encoded
    assert codes.shape == (1000, 96) and codes.dtype == np.uint8
    assert lists.tolist() == cq.CPU.assign(ivf.quantizer, x[:1000]).tolist()
    # Float rounding may flip a near-tie between two centroids of a sub-space, nothing more.
    assert (codes == ivf.pq.compute_codes(x[:1000])).mean() >= 0.999
    assert cq.CPU.encode(ivf, x) is None  # Faiss encodes for itself on the CPU
    flat = faiss.index_factory(768, "IVF16,Flat", faiss.METRIC_INNER_PRODUCT)
    flat.train(x)
    assert TORCH.encode(faiss.extract_index_ivf(flat), x) is None  # not a PQ: Faiss's job


def test_training_through_torch_leaves_faiss_only_the_pq() -> None:
    x = clustered(3_000, seed=8)
    index = faiss.index_factory(DIM, "IVF32,PQ8", faiss.METRIC_INNER_PRODUCT)
    cq.train(index, x, TORCH)  # torch trains the lists and the codebooks
    ivf = faiss.extract_index_ivf(index)
    assert index.is_trained and ivf.quantizer.ntotal == 32
    cq.add_with_ids(index, x, np.arange(3_000), TORCH)
    ivf.nprobe = 4
    _, found = index.search(x[:50], 5)
    assert (found == np.arange(50)[:, None]).any(axis=1).mean() >= 0.9


def sentence_recall(path: Path, coarse: cq.Coarse, x: np.ndarray) -> float:
    """Grow a sentence collection past exact (trained) and 8x further (retrained, codes
    moved) with ``coarse``; the share of sentences among their own top-30 candidates."""
    ids = np.array([(500 + i // 5) * 1000 + i % 5 for i in range(len(x))], dtype=np.int64)
    with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
        col.coarse = coarse
        col.add(ids[:400], x[:400])
        col.commit()  # exact -> IVF-PQ: lists and codebooks trained by ``coarse``
        first = col.manifest
        col.add(ids[400:], x[400:])  # placed by ``coarse``
        col.commit()  # 15x its training size: retrained, every code moved
        assert first.kind == "ivfpq" and col.manifest.trained_on == len(x)
        assert col.manifest.factory != first.factory
    with SentenceCollection.open(path) as reader:  # a reader needs no torch
        found = [ids[i] in [s for s, _ in reader.search(x[i], 30)[0]] for i in range(0, 6_000, 7)]
    return float(np.mean(found))


@pytest.mark.thorough
def test_a_sentence_collection_trains_places_and_retrains_on_the_torch_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SentenceCollection, "flat_max", 300)
    monkeypatch.setattr(SentenceCollection, "sample_max", 2_000)
    x = clustered(6_000, seed=9, centres=20)
    on_torch = sentence_recall(tmp_path / "torch", TORCH, x)
    on_faiss = sentence_recall(tmp_path / "faiss", cq.CPU, x)
    assert on_torch >= on_faiss - 0.05 and on_torch > 0.45  # PQ4 codes of 32-d: coarse


@pytest.mark.thorough
def test_an_article_collection_builds_its_parts_on_the_torch_device(tmp_path: Path) -> None:
    x = clustered(6_000, seed=10)
    with VectorCollection.open(tmp_path / "v", dim=DIM, profile="t", create=True) as col:
        col.coarse = TORCH
        col.flat_max = 3_000
        col.add(np.arange(6_000), x)
        col.commit()  # trained and filled through torch
        assert col.manifest.kind == "ivfpq"
        col.add(np.arange(6_000, 6_500), clustered(500, seed=11))  # a new part, torch-placed
        col.commit()
        assert len(col.manifest.segments) == 2
    with VectorCollection.open(tmp_path / "v", readonly=True) as reader:
        hits = reader.search(x[:100], 5)
        assert np.mean([any(i == q for i, _ in row) for q, row in enumerate(hits)]) >= 0.95


@pytest.mark.thorough
@pytest.mark.parametrize("by_residual", [True, False])
def test_pq_codebooks_trained_on_torch_reconstruct_as_well_as_faiss(by_residual: bool) -> None:
    x = clustered(6_000, seed=12)

    def error(coarse: cq.Coarse) -> float:
        index = faiss.index_factory(DIM, "IVF16,PQ8", faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
        ivf.by_residual, ivf.do_polysemous_training = by_residual, False
        cq.train(index, x, coarse)
        cq.add_with_ids(index, x, np.arange(6_000), coarse)
        back = faiss.extract_index_ivf(index).reconstruct_n(0, 6_000)  # needs a direct map
        return float(np.mean(np.sum((back - x) ** 2, axis=1)))

    assert error(TORCH) <= 1.1 * error(cq.CPU)


@pytest.mark.gpu
def test_on_a_gpu_the_lists_and_codebooks_match_the_cpu_device() -> None:
    """Run with ``pytest -m gpu``: the vector stage's real device gives the same lists."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    gpu = cq.TorchCoarse("cuda:0")
    x = clustered(20_000, seed=13)
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(gpu.kmeans(x, 256, niter=10, seed=1, spherical=True))
    assert (gpu.assign(quantizer, x) == cq.CPU.assign(quantizer, x)).mean() >= 0.999
    trained = faiss.index_factory(DIM, "IVF64,PQ8", faiss.METRIC_INNER_PRODUCT)
    cq.train(trained, x, gpu)
    cq.add_with_ids(trained, x, np.arange(20_000), gpu)
    faiss.extract_index_ivf(trained).nprobe = 8
    _, found = trained.search(x[:200], 5)
    assert (found == np.arange(200)[:, None]).any(axis=1).mean() >= 0.9


@pytest.mark.gpu
def test_on_a_gpu_placement_does_not_wait_for_the_encoders_queued_batches() -> None:
    """The writer places a chunk while an encoder thread has a second's worth of forward
    passes queued on the device's default stream: its lists come back before those
    passes end, and are the lists of the old, shared-stream way."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    x = clustered(50_000, seed=14)
    quantizer = faiss.IndexFlatIP(DIM)
    quantizer.add(clustered(256, seed=15))
    own, shared = cq.TorchCoarse("cuda:0"), cq.TorchCoarse("cuda:0", side_stream=False)
    expected = shared.assign(quantizer, x)
    own.assign(quantizer, x)  # its stream and cached centroids made, as after a first chunk
    a = torch.randn(8_192, 8_192, device="cuda:0")

    def queue_forward_passes(seconds: float) -> None:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            a @ a
        end.record()
        end.synchronize()
        per_product = start.elapsed_time(end) / 10_000  # seconds
        for _ in range(int(seconds / per_product)):
            a @ a

    queue_forward_passes(0.01)  # measures one product's time
    queue_forward_passes(1.0)
    t0 = time.perf_counter()
    lists = own.assign(quantizer, x)
    placed = time.perf_counter() - t0
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    queued_left = time.perf_counter() - t1
    assert lists.tolist() == expected.tolist()
    assert placed < 0.25 and queued_left > 0.3, (placed, queued_left)
