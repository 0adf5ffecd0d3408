"""Vector collections: Faiss checked against NumPy brute force, and the storage contract.

The oracle is exact inner product over the float16-rounded vectors (what the collection
stores), computed with NumPy.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import faiss
import numpy as np
import pytest

from medsearch.errors import (
    IndexMismatchError,
    MedsearchError,
    NotFoundError,
    UsageError,
    VectorsMissingError,
)
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.layout import (
    MAX_NLIST,
    MIN_NLIST,
    choose_factory,
    nlist_for,
    pq_subquantizers,
)

DIM = 32


@pytest.fixture(autouse=True)
def one_faiss_thread() -> Iterator[None]:
    """Tiny indexes train faster on one thread than with OpenMP spinning on a busy box."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(1)
    yield
    faiss.omp_set_num_threads(before)


def clustered(n: int, dim: int = DIM, centres: int = 20, seed: int = 0) -> np.ndarray:
    """Vectors around a few centres, like real embeddings (not uniform noise)."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(centres, dim)).astype(np.float32)
    x = c[rng.integers(0, centres, n)] + 0.3 * rng.normal(size=(n, dim)).astype(np.float32)
    return x.astype(np.float16).astype(np.float32)  # what the collection stores


def brute_force(
    ids: np.ndarray, x: np.ndarray, q: np.ndarray, k: int
) -> list[list[tuple[int, float]]]:
    scores = q @ x.T
    out = []
    for row in scores:
        order = np.lexsort((ids, -row))[:k]
        out.append([(int(ids[j]), float(row[j])) for j in order])
    return out


def same_ranking(got: list[list[tuple[int, float]]], want: list[list[tuple[int, float]]]) -> None:
    assert [[i for i, _ in r] for r in got] == [[i for i, _ in r] for r in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose([s for _, s in g], [s for _, s in w], rtol=1e-4)


def new(tmp_path: Path, name: str = "v", dim: int = DIM) -> VectorCollection:
    return VectorCollection.open(tmp_path / name, dim=dim, profile="test", create=True)


def test_flat_search_equals_numpy_brute_force(tmp_path: Path) -> None:
    x = clustered(2000)
    ids = np.arange(2000, dtype=np.int64) * 7 + 100_000  # ids unrelated to positions
    q = clustered(5, seed=1)
    with new(tmp_path) as col:
        col.add(ids, x)
        got = col.search(q, 10)
        assert col.manifest.kind == "flat"
    same_ranking(got, brute_force(ids, x, q, 10))


def near(x: np.ndarray, n: int, seed: int = 7) -> np.ndarray:
    """Queries close to (but not equal to) stored vectors, as real queries are."""
    rng = np.random.default_rng(seed)
    picks = x[rng.integers(0, len(x), n)]
    noise = 0.3 * rng.normal(size=picks.shape).astype(np.float32)
    out: np.ndarray = picks + noise
    return out


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_ivfpq_with_rescoring_keeps_recall(tmp_path: Path) -> None:
    x = clustered(4_000, centres=40)
    ids = np.arange(len(x), dtype=np.int64) + 1
    q = near(x, 30)
    with new(tmp_path) as col:
        col.add(ids, x)
        col.rebuild(factory="IVF16,PQ8")
        assert col.manifest.kind == "ivfpq" and col.manifest.nprobe
        got = col.search(q, 10)
        col.exact_filter_max = 0  # filtered search through the IVF index's IDSelector
        allowed = ids[ids % 4 == 0]
        filtered = col.search(q, 10, allowed_ids=allowed)
    want = brute_force(ids, x, q, 10)
    recall = np.mean(
        [len({i for i, _ in g} & {i for i, _ in w}) / 10 for g, w in zip(got, want, strict=True)]
    )
    assert recall >= 0.9
    assert all(len(r) == 10 and all(i % 4 == 0 for i, _ in r) for r in filtered)
    # re-scored scores are exact inner products, not PQ approximations
    exact = dict(want[0])
    for i, s in got[0]:
        if i in exact:
            assert s == pytest.approx(exact[i], rel=1e-4)


def test_add_replaces_and_remove_forgets(tmp_path: Path) -> None:
    x = clustered(100)
    with new(tmp_path) as col:
        col.add(np.arange(100), x)
        col.commit()
        col.add([5], x[[60]])  # id 5 now holds vector 60
        assert len(col) == 100
        np.testing.assert_array_equal(col.get([5])[0], x[60])
        scores = dict(col.search(x[60], 100)[0])
        assert scores[5] == scores[60] == pytest.approx(float(x[60] @ x[60]), rel=1e-4)
        assert col.remove([60, 12345]) == 1
        assert col.contains([5, 60, 12345]).tolist() == [True, False, False]
        assert len(col) == 99
        col.commit()
        assert col.manifest.live == 99 and col.manifest.count == 101


def test_tombstones_are_never_returned(tmp_path: Path) -> None:
    x = clustered(300)
    ids = np.arange(300)
    removed = np.arange(0, 300, 3)
    with new(tmp_path) as col:
        col.add(ids, x)
        col.commit()
        col.remove(removed)
        col.add(ids[1:50:3], x[1:50:3])  # replacements leave dead slots too
        for label in ("before commit", "after commit"):
            hits = col.search(x[:20], 300)
            for row in hits:
                found = [i for i, _ in row]
                assert not set(found) & set(removed.tolist()), label
                assert len(found) == len(set(found)) == 200, label
            col.commit()


def test_duplicate_ids_in_one_batch_keep_the_last(tmp_path: Path) -> None:
    x = clustered(3)
    with new(tmp_path) as col:
        col.add([7, 8, 7], x)
        assert len(col) == 2
        np.testing.assert_array_equal(col.get([7])[0], x[2])


def test_allowed_ids_restricts_exactly_and_via_selector(tmp_path: Path) -> None:
    x = clustered(3000)
    ids = np.arange(3000, dtype=np.int64) + 10
    q = clustered(3, seed=9)
    allowed = ids[::5]
    want = brute_force(allowed, x[::5], q, 10)
    with new(tmp_path) as col:
        col.add(ids, x)
        same_ranking(col.search(q, 10, allowed_ids=allowed), want)
        col.exact_filter_max = 10  # force the Faiss IDSelector path
        got = col.search(q, 10, allowed_ids=np.concatenate([allowed, [999_999]]))
        same_ranking(got, want)
        assert col.search(q, 10, allowed_ids=[999_999]) == [[], [], []]


def test_get_unknown_id_raises_not_found(tmp_path: Path) -> None:
    with new(tmp_path) as col:
        col.add([1], clustered(1))
        with pytest.raises(NotFoundError, match="42"):
            col.get([1, 42])


def test_persistence_and_reopen(tmp_path: Path) -> None:
    x = clustered(500)
    ids = np.arange(500) * 3
    with new(tmp_path) as col:
        col.add(ids, x)
        col.remove([0])
        col.commit()
        before = col.search(x[:4], 5)
    with VectorCollection.open(tmp_path / "v", dim=DIM, profile="test") as col:
        assert len(col) == 499
        assert col.search(x[:4], 5) == before
        np.testing.assert_array_equal(col.get([3, 6]), x[[1, 2]])
    manifest = json.loads((tmp_path / "v" / "manifest.json").read_text())
    assert manifest["profile"] == "test" and manifest["live"] == 499
    assert manifest["kind"] == "flat" and manifest["factory"] == "IDMap,Flat"


def test_crash_before_commit_recovers_last_commit(tmp_path: Path) -> None:
    x = clustered(200)
    col = new(tmp_path)
    col.add(np.arange(100), x[:100])
    col.commit()
    committed = col.search(x[:3], 5)
    # an interrupted batch: appended rows, a replacement, a removal, never committed
    col.add(np.arange(50, 200), x[50:200][::-1])
    col.remove([1, 2])
    for fh in col._fh.values():
        fh.flush()
    del col  # no commit, no close: the process "dies"
    (tmp_path / "v" / "index.99.faiss.tmp").write_bytes(b"half")  # a torn write
    with VectorCollection.open(tmp_path / "v") as col:
        assert len(col) == 100
        assert col.search(x[:3], 5) == committed
        np.testing.assert_array_equal(col.get([60]), x[[60]])
        assert not col.contains([150])[0]
    assert (tmp_path / "v" / "vectors.f16").stat().st_size == 100 * DIM * 2
    assert not (tmp_path / "v" / "index.99.faiss.tmp").exists()


def test_rebuild_compacts_dead_rows(tmp_path: Path) -> None:
    x = clustered(400)
    with new(tmp_path) as col:
        col.add(np.arange(400), x)
        col.remove(np.arange(0, 400, 2))
        col.add([1], x[[0]])
        col.rebuild()
        assert col.manifest.count == col.manifest.live == 200
        np.testing.assert_array_equal(col.get([1, 3]), x[[0, 3]])
    files = {p.name for p in (tmp_path / "v").iterdir()}
    assert files == {
        "manifest.json",
        f"vectors.{col.manifest.generation}.f16",
        f"ids.{col.manifest.generation}.i64",
        col.manifest.index_file,
        col.manifest.lookup_file,
    }
    live = np.array([1, *range(3, 400, 2)])
    vectors = np.concatenate([x[[0]], x[3:400:2]])
    with VectorCollection.open(tmp_path / "v") as again:
        same_ranking(again.search(x[:5], 10), brute_force(live, vectors, x[:5], 10))


@pytest.mark.thorough
def test_growing_past_the_flat_threshold_switches_to_ivfpq(tmp_path: Path) -> None:
    x = clustered(6_000, centres=40)
    with new(tmp_path) as col:
        col.flat_max = 3_000
        col.add(np.arange(2_000), x[:2_000])
        col.commit()
        assert col.manifest.kind == "flat"
        col.add(np.arange(2_000, 6_000), x[2_000:])
        q = near(x, 10)
        want = {i for r in brute_force(np.arange(6_000), x, q, 10) for i, _ in r}
        got = {i for r in col.search(q, 10) for i, _ in r}  # searchable before commit
        # recall proper is measured in the IVF-PQ test above and in benchmarks/vectors.py
        assert len(got & want) >= 0.8 * len(want)
        col.commit()
        assert col.manifest.kind == "ivfpq"
        assert col.manifest.factory == "IVF128,PQ8" and col.manifest.trained_on == 6_000
        written = col.search(q, 10)
    # A search process maps the codes instead of loading them (GBs at PubMed scale).
    with VectorCollection.open(tmp_path / "v", readonly=True) as reader:
        assert reader._ivf is not None and reader._index is None
        lists = faiss.extract_index_ivf(reader._ivf.indexes()[0]).invlists
        assert type(faiss.downcast_InvertedLists(lists)).__name__ == "OnDiskInvertedLists"
        assert reader.search(q, 10) == written


@pytest.mark.thorough
def test_an_ivf_collection_grows_in_parts_and_a_rebuild_makes_one(tmp_path: Path) -> None:
    """Past the exact size, a commit writes its new codes as a part: the writer never
    loads the ~8 GB of codes 40.9M articles have (ivf_parts.py)."""
    x = clustered(5_000, centres=40)
    with new(tmp_path) as col:
        col.flat_max = 3_000
        col.add(np.arange(4_000), x[:4_000])
        col.commit()
        assert col.manifest.kind == "ivfpq" and len(col.manifest.segments) == 1
        first = col.manifest.segments[0]
        col.add(np.arange(4_000, 4_500), x[4_000:4_500])
        col.commit()
        assert col.manifest.segments[0] == first  # untouched
        assert [s[3] for s in col.manifest.segments] == [4_000, 500]
        col.remove([10, 11])
        col.add([12], -x[12:13])  # replaced: its old code is a tombstone
        col.commit()
        assert col.manifest.dead_file and col.manifest.segments[0] == first
    live = np.setdiff1d(np.arange(4_500), [10, 11])
    stored = x[live].copy()
    stored[live == 12] = -x[12]
    q = near(x[:4_500], 20)
    truth = {i for r in brute_force(live, stored, q, 10) for i, _ in r}
    with VectorCollection.open(tmp_path / "v", readonly=True) as reader:
        got = reader.search(q, 10)  # PQ candidates from both parts, re-scored exactly
        assert len({i for r in got for i, _ in r} & truth) >= 0.9 * len(truth)
        assert all(i not in (10, 11) for r in reader.search(x[10:12], 50) for i, _ in r)
        assert reader.get([12]).tolist() == pytest.approx(-x[12:13], abs=1e-3)
    with VectorCollection.open(tmp_path / "v") as col:
        col.flat_max = 3_000
        col.rebuild()  # compacted and rebuilt from the stored vectors: one part again
        assert len(col.manifest.segments) == 1 and col.manifest.dead_file is None
        got = col.search(q, 10)
        assert len({i for r in got for i, _ in r} & truth) >= 0.9 * len(truth)
        assert len(col) == 4_498
    assert sorted(p.name for p in (tmp_path / "v").glob("seg.*")) == [col.manifest.segments[0][0]]


def test_exclusions_are_built_once_per_state_and_new_removals_count_at_once(
    tmp_path: Path,
) -> None:
    """At PubMed scale the tombstones number millions: their union and selector are
    built once per (rows, removals) state, never per query, and never go stale."""
    x = clustered(5_000, centres=40)
    with new(tmp_path) as col:
        col.flat_max = 3_000
        col.add(np.arange(4_000), x[:4_000])
        col.commit()
        col.remove([10, 11])
        col.commit()
        assert col.manifest.dead_file and col._ivf is not None

        def best(i: int) -> list[int]:  # inner product: not always the vector itself
            return [j for j, _ in col.search(x[i : i + 1], 50)[0]]

        first, other = best(20)[:2]
        assert not {10, 11} & set(best(10))
        state = col._ivf.exclusions(col._dead_slots(), col._rows)
        best(30)
        assert col._ivf.exclusions(col._dead_slots(), col._rows)[1] is state[1]
        col.remove([first])  # uncommitted: a new state, excluded from the next search
        assert first not in best(20) and not {10, 11} & set(best(10))
        col.add([other], -x[other : other + 1])  # replaced: its old code goes at once
        assert other not in best(20)


@pytest.mark.thorough
def test_a_rebuild_encodes_straight_into_parts_of_bounded_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At 40.9M articles a rebuild (a retrain at 8x growth, a new factory) would hold
    ~8 GB of codes at once; it writes a part whenever one is full instead."""
    from medsearch.index.vectors import faiss_index as vector_faiss

    monkeypatch.setattr(vector_faiss, "ADD_BATCH", 500)
    x = clustered(4_200, centres=40)
    with new(tmp_path) as col:
        col.flat_max, col.part_entries = 3_000, 1_500
        col.add(np.arange(4_200), x)
        col.remove([7])
        col.rebuild()
        segments = col.manifest.segments
        assert [s[3] for s in segments] == [1_500, 1_500, 1_199]
        assert [s[1] for s in segments[1:]] == [s[2] for s in segments[:-1]]  # contiguous
        assert segments[-1][2] == 4_199  # compacted: 4,199 slots
    q = near(x, 10)
    truth = {
        i
        for r in brute_force(np.delete(np.arange(4_200), 7), np.delete(x, 7, 0), q, 10)
        for i, _ in r
    }
    with VectorCollection.open(tmp_path / "v", readonly=True) as reader:
        got = {i for r in reader.search(q, 10) for i, _ in r}
    assert len(got & truth) >= 0.9 * len(truth) and 7 not in got


def test_a_format_1_ivf_index_is_read_as_one_part_and_continues_in_parts(
    tmp_path: Path,
) -> None:
    x = clustered(4_600, centres=40)
    with new(tmp_path) as col:
        col.flat_max = 3_000
        col.add(np.arange(4_000), x[:4_000])
        col.commit()
        only = col.manifest.segments[0][0]
    path = tmp_path / "v"
    manifest = json.loads((path / "manifest.json").read_text())  # as format 1 wrote it
    (path / only).rename(path / "index.1.faiss")
    manifest.update(format_version=1, index_file="index.1.faiss", segments=[], dead_file=None)
    (path / "manifest.json").write_text(json.dumps(manifest))
    q = near(x[:4_600], 10)
    with VectorCollection.open(path, readonly=True) as reader:
        assert len(reader) == 4_000 and reader.search(q, 5)[0]
    with VectorCollection.open(path) as col:
        col.add(np.arange(4_000, 4_600), x[4_000:])
        col.commit()
        first = col.manifest.segments[0]
        assert (first[0], first[3]) == ("index.1.faiss", 4_000)
        assert col.manifest.format_version == 2 and len(col.manifest.segments) == 2
    truth = {i for r in brute_force(np.arange(4_600), x[:4_600], q, 10) for i, _ in r}
    with VectorCollection.open(path, readonly=True) as reader:
        got = {i for r in reader.search(q, 10) for i, _ in r}
    assert len(got & truth) >= 0.9 * len(truth)


def test_profile_and_dim_mismatch_are_clear_errors(tmp_path: Path) -> None:
    new(tmp_path).close()
    with pytest.raises(IndexMismatchError, match=r"'test'.*'medcpt'"):
        VectorCollection.open(tmp_path / "v", profile="medcpt")
    with pytest.raises(IndexMismatchError, match=r"32.*768"):
        VectorCollection.open(tmp_path / "v", dim=768)
    with pytest.raises(VectorsMissingError):
        VectorCollection.open(tmp_path / "absent")
    with new(tmp_path, "w") as col, pytest.raises(UsageError, match="shape"):
        col.add([1, 2], np.zeros((2, 5), np.float32))


def test_a_factory_waits_until_there_are_enough_vectors_to_train_it(tmp_path: Path) -> None:
    x = clustered(1_000)
    with new(tmp_path) as col:
        col.rebuild(factory="IVF16,PQ8")  # e.g. --index-factory on a fresh home
        col.add(np.arange(100), x[:100])
        col.commit()
        assert col.manifest.factory_override == "IVF16,PQ8"
        assert col.manifest.kind == "flat"  # 100 vectors cannot train 16 lists + PQ
        col.add(np.arange(100, 1_000), x[100:])
        col.commit()
        assert (col.manifest.kind, col.manifest.factory) == ("ivfpq", "IVF16,PQ8")
        col.rebuild(factory="auto")
        back = col.manifest
        assert back.kind == "flat" and back.factory_override is None


def test_untrainable_factory_is_a_clear_error(tmp_path: Path) -> None:
    with new(tmp_path) as col:
        col.add(np.arange(300), clustered(300))
        with pytest.raises(MedsearchError, match="cannot train"):
            col.rebuild(factory="PQ8x12")  # 4,096 centroids a sub-vector from 300 points


def test_index_choice_by_size() -> None:
    """Exact while small; past that IVF-PQ, its code one byte per at most four
    dimensions, its lists a power of two that grows with the collection and never has
    too few vectors to train each list (39 a list, Faiss's warning threshold)."""
    assert choose_factory(1_000, 768) == ("flat", "IDMap,Flat")
    kind, factory = choose_factory(40_000_000, 768)
    assert kind == "ivfpq"
    assert factory == f"IVF{nlist_for(40_000_000)},PQ{pq_subquantizers(768)}"
    for dim in (100, 384, 768, 1024):
        m = pq_subquantizers(dim)
        assert dim % m == 0 and m <= dim // 4 and m >= dim // 8
    sizes = [10**k for k in range(3, 9)] + [40_000_000]
    lists = [nlist_for(n) for n in sizes]
    assert lists == sorted(lists) and lists[0] == MIN_NLIST and lists[-1] <= MAX_NLIST
    for n, nlist in zip(sizes, lists, strict=True):
        assert nlist & (nlist - 1) == 0  # a power of two
        assert nlist == MIN_NLIST or nlist * 39 <= n


@pytest.mark.parametrize("size", [3, 700], ids=["sparse", "dense"])
def test_the_allowed_bitmap_has_exactly_the_allowed_bits_either_way(size: int) -> None:
    """Both ways of building a selector's bitmap (bit by bit for a sparse set, a bool
    array for a dense one) give Faiss the same bits."""
    from medsearch.index.vectors.faiss_index import allowed_bitmap

    rows = 1_000
    allowed = np.sort(np.random.default_rng(size).choice(rows, size, replace=False))
    bits = np.unpackbits(allowed_bitmap(allowed, rows), bitorder="little")
    assert np.flatnonzero(bits).tolist() == allowed.tolist()
