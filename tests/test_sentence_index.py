"""Sentence vectors as compressed codes: no float copy, exact scores by re-encoding text."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import faiss
import numpy as np
import pytest
from tiny_models import (
    TinyModels,
    build_tiny_models,
    ingest_and_encode,
    vectors_stage,
    write_tiny_config,
)

from benchmarks.synth import article_xml, pubmed_file
from medsearch.errors import VectorsMissingError
from medsearch.index.vectors import coarse as cq
from medsearch.index.vectors import ivf_parts as ip
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.ivf_parts import Part
from medsearch.index.vectors.layout import read_committed, read_manifest
from medsearch.index.vectors.sentence_index import (
    SENTENCE_FORMAT,
    OldLayoutError,
    SentenceCollection,
)
from medsearch.index.vectors.sentence_migrate import open_sentences
from medsearch.paths import Paths
from medsearch.retrieval import neighbours
from medsearch.retrieval.searcher import Searcher, open_searcher
from medsearch.sentences import article_sentences
from medsearch.store import Store

DIM = 32


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, DIM))
    x = centres[rng.integers(0, 20, n)] + 0.5 * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Compressed from 300 sentences on, with a sample of 2,000: tests stay fast."""
    with monkeypatch.context() as m:
        m.setattr(SentenceCollection, "flat_max", 300)
        m.setattr(SentenceCollection, "sample_max", 2_000)
        yield


@pytest.fixture
def parts_of_1000(small_limits: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts stop merging at 1,000 codes (16M in use): merges and purges at test size."""
    monkeypatch.setattr(SentenceCollection, "part_entries", 1_000)


def sids(n: int, first_pmid: int = 500) -> np.ndarray:
    """Sentence ids of ``n`` sentences, five per article: pmid * 1000 + position."""
    return np.array([(first_pmid + i // 5) * 1000 + i % 5 for i in range(n)], dtype=np.int64)


def top_ids(col: SentenceCollection, query: np.ndarray, k: int = 30) -> list[int]:
    """The PQ candidates (top 2% here): estimates, which re-scoring then makes exact."""
    return [i for i, _ in col.search(query, k)[0]]


def test_small_collections_stay_exact(tmp_path: Path) -> None:
    x = vectors(200)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        col.add(sids(200), x)
        col.commit()
        assert col.exact and col.manifest.kind == "flat"
        got = col.search(x[7], 5)[0]
    truth = np.argsort(-(x @ x[7]), kind="stable")[:5]
    assert [i for i, _ in got] == sids(200)[truth].tolist()
    np.testing.assert_allclose([s for _, s in got], (x @ x[7])[truth], rtol=2e-3)


def test_round_trip_add_search_delete_reopen(tmp_path: Path, small_limits: None) -> None:
    x, ids = vectors(1_500), sids(1_500)
    path = tmp_path / "s"
    with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
        col.add(ids[:1_000], x[:1_000])
        col.commit()
        assert not col.exact and col.manifest.factory.startswith("IVF")
        col.add(ids[1_000:], x[1_000:])
        col.remove(ids[:5])  # one article deleted (DeleteCitation)
        col.add(ids[10:11], -x[10:11])  # one sentence re-encoded after an update
        assert col.search(x[2], 50)[0][0][0] != ids[2]  # uncommitted removal already hidden
        col.commit()
    names = {p.name for p in path.iterdir()}
    assert not any(n.endswith(".f16") and n != "sample.f16" for n in names)  # no vector copy
    with SentenceCollection.open(path) as col:  # a reader: lists memory-mapped
        assert len(col) == 1_495
        assert col.contains(ids[:6]).tolist() == [False] * 5 + [True]
        assert ids[1_200] in top_ids(col, x[1_200])  # among the candidates
        assert ids[10] not in [i for i, _ in col.search(x[10], 20)[0]]  # the old vector
        assert ids[10] in top_ids(col, -x[10])
        assert all(i not in ids[:5] for i, _ in col.search(x[:5], 50)[0])
        with pytest.raises(Exception, match="not stored"):
            col.get(ids[6:7])


def test_sample_stays_bounded_and_growth_retrains_without_the_vectors(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, ids = vectors(6_000, seed=3), sids(6_000)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        col.add(ids[:400], x[:400])
        col.commit()
        first = col.manifest
        col.add(ids[400:], x[400:])
        col.commit()  # 15x the size it was trained on: quantizer retrained, codes moved
        grown = col.manifest
        assert (tmp_path / "s" / "sample.f16").stat().st_size == 2_000 * DIM * 2
        assert grown.sample_rows == 2_000 and grown.sample_seen == 6_000
        assert grown.trained_on == 6_000 and first.trained_on == 400
        assert grown.factory != first.factory  # more lists
        assert ids[123] in top_ids(col, x[123])  # an early code, moved intact
        assert ids[5_999] in top_ids(col, x[5_999])


def uneven_topics(n: int, seed: int = 3) -> np.ndarray:
    """Unit vectors in 40 topics of very different spread, as real sentences are."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(40, DIM))
    spread = rng.uniform(0.2, 1.5, size=40)
    which = rng.integers(0, 40, n)
    x = centres[which] + spread[which, None] * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def quantizer_of(col: SentenceCollection) -> faiss.Index:
    parts = col._ivf
    assert parts is not None
    return faiss.extract_index_ivf(parts.index(parts.parts[0])).quantizer


def centroid_norms(col: SentenceCollection) -> np.ndarray:
    quantizer = quantizer_of(col)
    return np.linalg.norm(quantizer.reconstruct_n(0, quantizer.ntotal), axis=1)


def neighbours_in_first_list(col: SentenceCollection, x: np.ndarray) -> float:
    """Share of each query's true top 10 that sits in the first list the query visits."""
    quantizer = quantizer_of(col)
    queries = x[::60]
    truth = np.argsort(-(queries @ x.T), axis=1)[:, :10]
    _, lists = quantizer.search(x, 1)
    _, first = quantizer.search(queries, 1)
    return float(np.mean(lists[truth, 0] == first))


def test_growth_retrains_the_lists_as_the_first_training_did(
    tmp_path: Path, small_limits: None
) -> None:
    """Spherical k-means: unit centroids ranked by inner product, as Faiss trains an
    inner-product IVF. L2 centroids are shorter the looser their topic, so ranking lists
    by inner product with them sends a loose topic's queries away from its sentences."""
    x, ids = uneven_topics(6_000), sids(6_000)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        col.add(ids[:400], x[:400])
        col.commit()
        np.testing.assert_allclose(centroid_norms(col), 1.0, atol=1e-4)  # Faiss's training
        col.add(ids[400:], x[400:])
        col.commit()
        assert col.manifest.factory == "IVF32,PQ4"  # grown: retrained with more lists
        np.testing.assert_allclose(centroid_norms(col), 1.0, atol=1e-4)
        assert neighbours_in_first_list(col, x) >= 0.85  # L2 k-means gives 0.80 here
        assert not col.lists_stale()


def old_growth_retrain(m: pytest.MonkeyPatch) -> None:
    """Lists trained as the growth retrain of earlier versions did: plain L2 k-means."""
    kmeans = cq.CPU.kmeans

    def l2_kmeans(x: np.ndarray, k: int, **kw: Any) -> np.ndarray:
        return kmeans(x, k, **{**kw, "spherical": False})

    m.setattr(cq.CPU, "kmeans", l2_kmeans)


def grown_the_old_way(
    path: Path, x: np.ndarray, ids: np.ndarray, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A collection trained on its first 400 sentences, then grown 15x under the old retrain."""
    with monkeypatch.context() as m:
        old_growth_retrain(m)
        with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
            col.add(ids[:400], x[:400])
            col.commit()
            col.add(ids[400:], x[400:])
            col.commit()
            assert centroid_norms(col).min() < 0.9


def test_lists_an_earlier_version_trained_with_l2_are_retrained_at_the_next_commit(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, ids = uneven_topics(6_000), sids(6_000)
    path = tmp_path / "s"
    grown_the_old_way(path, x, ids, monkeypatch)
    with SentenceCollection.open(path) as reader:
        assert reader.search(x[123], 30)[0]  # still searchable as it is
    with SentenceCollection.open(path, create=True) as col:
        assert col.lists_stale()
        before = col.manifest.generation
        col.commit()  # nothing new to write: retrained all the same
        assert col.manifest.generation == before + 1 and not col.lists_stale()
        np.testing.assert_allclose(centroid_norms(col), 1.0, atol=1e-4)
        assert neighbours_in_first_list(col, x) >= 0.85
        assert len(col) == 6_000 and col.manifest.trained_on == 6_000
        assert ids[123] in top_ids(col, x[123])  # codes moved, not re-encoded
        col.commit()
        assert col.manifest.generation == before + 1  # and only once


def test_stale_lists_past_the_cpu_limit_wait_for_a_gpu(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Placing every code again is hours on a CPU at PubMed scale: past the limit a CPU
    commit leaves the lists alone; the encoding GPU's placement retrains them."""
    from medsearch.index.vectors import sentence_index

    x, ids = uneven_topics(6_000), sids(6_000)
    path = tmp_path / "s"
    grown_the_old_way(path, x, ids, monkeypatch)
    monkeypatch.setattr(sentence_index, "STALE_RETRAIN_CPU_MAX", 5_999)
    with SentenceCollection.open(path, create=True) as col:
        before = col.manifest.generation
        assert col.lists_stale() and not col.retrains_stale_lists()
        col.commit()
        assert col.manifest.generation == before and col.lists_stale()
        col.coarse = cq.TorchCoarse("cpu")  # a GPU's placement, run on the CPU here
        assert col.retrains_stale_lists()
        col.commit()
        assert not col.lists_stale()
        np.testing.assert_allclose(centroid_norms(col), 1.0, atol=1e-4)
        assert ids[123] in top_ids(col, x[123])


def test_probes_follow_the_lists_up_to_a_cap() -> None:
    """The probes a query needs stopped growing with the lists (``python -m
    benchmarks.sentence_index scale``): PubMed's 16,384 lists are scanned 256 at a time,
    not 1/32 of them; small collections 128 at a time."""
    from medsearch.index.vectors.sentence_faiss import sentence_nprobe

    assert [sentence_nprobe(n) for n in (256, 4_096, 8_192, 16_384, 65_536)] == [
        128,
        128,
        256,
        256,
        256,
    ]


def test_a_collection_trained_under_an_older_probe_rule_searches_by_the_current_one(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medsearch.index.vectors import sentence_faiss

    x, ids = uneven_topics(6_000), sids(6_000)
    path = tmp_path / "s"
    with monkeypatch.context() as m:  # a rule of one probe when it was trained
        m.setattr(sentence_faiss, "sentence_nprobe", lambda nlist: 1)
        with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
            col.add(ids, x)
            col.commit()
            assert col.manifest.nprobe == 1
    with SentenceCollection.open(path, readonly=True) as reader:
        now = sentence_faiss.sentence_nprobe(int(reader.manifest.factory.split(",")[0][3:]))
        queries = x[::500]
        assert reader.search(queries, 30) == reader.search(queries, 30, nprobe=now)
        assert reader.search(queries, 30) != reader.search(queries, 30, nprobe=1)


def test_sample_replacements_held_back_and_sorted_leave_the_same_sample(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Algorithm R's replacements wait in memory and go to the file in slot order; a slot
    replaced twice keeps the later row, exactly as writing each one as it comes."""
    import medsearch.index.vectors.sentence_index as si

    x, ids = vectors(9_000, seed=4), sids(9_000)

    def sample_after(buffer_rows: int, name: str) -> bytes:
        monkeypatch.setattr(si, "REPLACE_BUFFER_ROWS", buffer_rows)
        with SentenceCollection.open(tmp_path / name, dim=DIM, profile="t", create=True) as col:
            for start in range(0, 9_000, 300):  # many replacements per slot over the run
                col.add(ids[start : start + 300], x[start : start + 300])
                if start == 4_500:
                    col.commit()
            col.commit()
        return (tmp_path / name / "sample.f16").read_bytes()

    as_they_come = sample_after(1, "each")  # every add writes its replacements at once
    held_back = sample_after(1_000_000, "held")  # only the commits write them
    assert held_back == as_they_come
    assert len(held_back) == 2_000 * DIM * 2


def test_old_layout_is_refused_for_search_and_converted_by_ingest(tmp_path: Path) -> None:
    x, ids = vectors(400), sids(400)
    path = tmp_path / "sentences"
    with VectorCollection.open(path, dim=DIM, profile="t", create=True) as old:  # format 1
        old.add(ids, x)
        old.remove(ids[:2])
        old.commit()
    with pytest.raises(OldLayoutError, match=r"old layout .* run `medsearch ingest` once"):
        SentenceCollection.open(path)
    with open_sentences(path, dim=DIM, profile="t") as col:
        assert len(col) == 398 and col.manifest.layout == "codes"
        assert next(i for i, _ in col.search(x[50], 3)[0]) == ids[50]
    assert not (path / "vectors.f16").exists()
    assert json.loads((path / "manifest.json").read_text())["format_version"] == SENTENCE_FORMAT


# -- parts: what a commit writes once the collection is compressed -------------------


def part_files(path: Path) -> dict[str, int]:
    """Each part file and its inode: a part rewritten gets a new file."""
    return {p.name: p.stat().st_ino for p in path.glob("seg.*.faiss")}


def committed(path: Path, x: np.ndarray, ids: np.ndarray, *ends: int) -> list[Part]:
    """A collection at ``path`` built with one commit per range: [0, e1), [e1, e2), ..."""
    with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
        lo = 0
        for hi in ends:
            col.add(ids[lo:hi], x[lo:hi])
            col.commit()
            lo = hi
        return col.parts


def test_a_commit_writes_only_the_new_codes_and_older_parts_stay_untouched(
    tmp_path: Path, small_limits: None
) -> None:
    x, ids = vectors(2_400, seed=5), sids(2_400)
    path = tmp_path / "s"
    committed(path, x, ids, 2_000)  # past the flat limit: the first part, 2,000 codes
    before = part_files(path)
    with SentenceCollection.open(path) as col:
        col.add(ids[2_000:2_050], x[2_000:2_050])
        col.commit()
        assert [p.entries for p in col.parts] == [2_000, 50]
        assert {f: before[f] for f in before} == {f: part_files(path)[f] for f in before}
        # The writer never loaded the first part: only the 50 new codes were in memory.
        assert col.search(x[2_010], 5)[0][0][0] == ids[2_010]
    with SentenceCollection.open(path, readonly=True) as reader:  # parts stacked
        assert len(reader) == 2_050 and ids[15] in top_ids(reader, x[15])
        assert ids[2_049] in top_ids(reader, x[2_049])


def test_parts_merge_like_a_binary_counter_up_to_their_size_limit(
    tmp_path: Path, parts_of_1000: None
) -> None:
    x, ids = vectors(4_000, seed=6), sids(4_000)
    path = tmp_path / "s"
    with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
        col.add(ids[:400], x[:400])
        col.commit()
        for lo in range(400, 4_000, 100):  # 36 commits of 100 sentences
            col.add(ids[lo : lo + 100], x[lo : lo + 100])
            col.commit()
            sizes = [p.entries for p in col.parts]
            assert all(n <= 1_000 for n in sizes[1:])
            small = [n for n in sizes if n < 800]  # the binary counter's tail
            assert len(small) <= 4, sizes
        parts = col.parts
    assert sum(p.entries for p in parts) == 4_000
    assert [p.lo for p in parts[1:]] == [p.hi for p in parts[:-1]]  # contiguous slots
    assert len(parts) <= 4_000 // 1_000 + 4
    with SentenceCollection.open(path, readonly=True) as reader:
        for i in (0, 399, 1_234, 3_999):  # PQ4 codes here: 100 candidates (2.5%)
            assert ids[i] in top_ids(reader, x[i], k=100)


def test_stacked_parts_search_exactly_like_one_index_of_the_same_codes(
    tmp_path: Path, small_limits: None
) -> None:
    x, ids = vectors(1_600, seed=7), sids(1_600)
    path = tmp_path / "s"
    committed(path, x, ids, 1_000, 1_200, 1_400, 1_600)
    with SentenceCollection.open(path, readonly=True) as reader:
        assert [p.entries for p in reader.parts] == [1_000, 400, 200]
        stack = reader._ivf
        assert stack is not None
        indexes = [stack.index(p) for p in reader.parts]
        # Only the first part carries the coarse centroids (50 MB each at PubMed scale).
        centroids = [faiss.extract_index_ivf(i).quantizer.ntotal for i in indexes]
        assert centroids[0] > 0 and centroids[1:] == [0, 0]
        merged = ip.empty_like(indexes[0])
        ip.gather(indexes, merged, reassign=False)
        queries = x[::97]
        want_s, want_slots = merged.search(queries, 20)
        got = reader.search(queries, 20, nprobe=merged.nprobe)
    for row, s, c in zip(got, want_s, want_slots, strict=True):
        np.testing.assert_allclose([v for _, v in row], s, rtol=1e-6)
        # PQ scores tie often (4-byte codes here); ties may come in any order.
        assert by_score(row) == by_score(zip(reader._ids_at(c).tolist(), s.tolist(), strict=True))


def by_score(pairs: Iterable[tuple[int, float]]) -> dict[float, set[int]]:
    """Ids grouped by score rounded to float32 noise, except the last (cut) group."""
    groups: dict[float, set[int]] = {}
    for i, v in pairs:
        groups.setdefault(round(v, 4), set()).add(i)
    groups.pop(min(groups))
    return groups


def test_a_long_scan_uses_every_core_and_finds_the_same(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medsearch.index.vectors import faiss_index as vector_faiss

    x, ids = vectors(1_600, seed=12), sids(1_600)
    committed(tmp_path / "s", x, ids, 1_000, 1_600)
    with SentenceCollection.open(tmp_path / "s") as col:
        col.remove(ids[:10])
        one_thread = col.search(x[:20], 40)
        monkeypatch.setattr(vector_faiss, "PARALLEL_SCAN", 10)  # every query is "long"
        split = [col.search(q, 40)[0] for q in x[:20]]
    assert split == one_thread


def test_removals_in_committed_parts_are_tombstones_until_the_part_is_rewritten(
    tmp_path: Path, parts_of_1000: None
) -> None:
    x, ids = vectors(2_000, seed=8), sids(2_000)
    path = tmp_path / "s"
    first = committed(path, x, ids, 1_000, 2_000)[0]
    with SentenceCollection.open(path) as col:
        col.remove(ids[:100])  # 10% of the first part: tombstones
        col.add(ids[500:501], -x[500:501])  # a replaced sentence: its old code is dead too
        col.commit()
        assert col.parts[0] == first and col.manifest.dead_file
        assert len(np.load(path / col.manifest.dead_file)) == 101
    with SentenceCollection.open(path, readonly=True) as reader:
        found = [i for i, _ in reader.search(x[:100], 50)[0]]
        assert not set(found) & set(ids[:100].tolist())
        assert ids[500] not in [i for i, _ in reader.search(x[500], 50)[0]]
        assert ids[500] in top_ids(reader, -x[500])
    with SentenceCollection.open(path) as col:
        col.remove(ids[100:300])  # now 30% of the first part: it is rewritten without them
        col.commit()
        assert col.parts[0].file != first.file and col.parts[0].entries == 699
        assert col.manifest.dead_file is None  # the rewrite dropped every tombstone
        assert len(col) == 1_700  # the replaced sentence lives on in the newest part


def test_a_crash_before_the_manifest_leaves_the_last_commit_and_no_stray_parts(
    tmp_path: Path, small_limits: None
) -> None:
    x, ids = vectors(1_000, seed=9), sids(1_000)
    path = tmp_path / "s"
    first = committed(path, x, ids, 800)
    (path / "seg.9.1.faiss").write_bytes(b"half a part")  # written, manifest never was
    (path / "dead.9.npy").write_bytes(b"")
    with SentenceCollection.open(path) as col:
        assert col.parts == first and len(col) == 800
        col.add(ids[800:], x[800:])
        col.commit()
    assert not (path / "dead.9.npy").exists()
    assert sorted(part_files(path)) == sorted(p.file for p in SentenceCollection.open(path).parts)


def test_a_reader_opening_during_a_commit_reads_the_new_commit(
    tmp_path: Path, small_limits: None
) -> None:
    """A search opens the manifest, then its files; a writer's commit in between deletes
    the parts it merged. The reader then opens the newer commit, not an error."""
    x, ids = vectors(1_200, seed=13), sids(1_200)
    path = tmp_path / "s"
    committed(path, x, ids, 800, 1_000)
    seen = read_manifest(path)
    assert seen is not None
    with SentenceCollection.open(path) as col:
        col.add(ids[1_000:], x[1_000:])
        col.commit()  # its 200 and the last part's 200 merge into a new file
    assert not all((path / str(part[0])).exists() for part in seen.segments)
    reader = read_committed(path, seen, lambda m: SentenceCollection(path, m))
    assert len(reader) == 1_200 and reader.manifest.generation > seen.generation
    (path / reader.parts[0].file).unlink()  # the last commit's own file: still an error
    with pytest.raises(VectorsMissingError, match="is missing"):
        SentenceCollection.open(path, readonly=True)


def test_a_format_2_collection_is_read_as_one_part_and_extended_in_parts(
    tmp_path: Path, small_limits: None
) -> None:
    x, ids = vectors(1_200, seed=10), sids(1_200)
    path = tmp_path / "s"
    only = committed(path, x, ids, 800)[0].file
    manifest = json.loads((path / "manifest.json").read_text())  # as format 2 wrote it
    (path / only).rename(path / "index.1.faiss")
    manifest.update(format_version=2, index_file="index.1.faiss", segments=[], dead_file=None)
    (path / "manifest.json").write_text(json.dumps(manifest))
    with SentenceCollection.open(path, readonly=True) as reader:
        assert len(reader) == 800 and ids[3] in top_ids(reader, x[3])
    with SentenceCollection.open(path) as col:
        col.add(ids[800:], x[800:])
        col.commit()
        assert [p.entries for p in col.parts] == [800, 400]
        assert col.parts[0].file == "index.1.faiss"
    with SentenceCollection.open(path, readonly=True) as reader:
        assert reader.manifest.format_version == SENTENCE_FORMAT
        assert ids[1_100] in top_ids(reader, x[1_100]) and ids[3] in top_ids(reader, x[3])


def test_the_lookup_is_merged_chunk_by_chunk_into_the_same_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit never sorts the whole id -> slot table: chunks of 64 entries here."""
    from medsearch.index.vectors import store as vector_store

    monkeypatch.setattr(vector_store, "LOOKUP_CHUNK", 64)
    rng = np.random.default_rng(11)
    x = vectors(300, seed=11)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        for round_ in range(4):
            ids = rng.choice(5_000, size=150, replace=False) * 1000  # new and existing
            col.add(ids, x[:150] if round_ % 2 else x[150:])
            col.remove(rng.choice(5_000, size=40, replace=False) * 1000)
            want_ids, want_slots = col._live_lookup()  # the whole-table reference
            got = tmp_path / f"got{round_}.npy"
            assert col._write_lookup(got) == len(want_ids)
            table = np.load(got)
            np.testing.assert_array_equal(table[0], want_ids)
            np.testing.assert_array_equal(table[1], want_slots)
            col.commit()
            assert len(col) == len(want_ids)
        col.remove(col._live_lookup()[0])  # everything: an empty table
        assert col._write_lookup(tmp_path / "empty.npy") == 0


# -- through the Searcher: real ingest, tiny real BERT, compressed sentences ----------

WORDS = [
    "cytokine",
    "tocilizumab",
    "metformin",
    "glucose",
    "insulin",
    "statin",
    "cholesterol",
    "amyloid",
    "plaque",
    "neuron",
    "sepsis",
    "antibiotic",
    "mortality",
    "tumour",
    "mutation",
    "screening",
    "receptor",
    "kinase",
    "therapy",
    "trial",
]


def corpus(root: Path, articles: int = 120) -> Path:
    rng = np.random.default_rng(0)
    out = []
    for i in range(articles):
        sentences = [
            " ".join(rng.choice(WORDS, size=6)).capitalize() + "." for _ in range(3 + i % 3)
        ]
        out.append(article_xml(2000 + i, f"Study {i}", " ".join(sentences)))
    folder = root / "xml"
    folder.mkdir()
    pubmed_file(folder / "pubmed26n0001.xml", out)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def searcher(tmp_path: Path, tiny: TinyModels, small_limits: None) -> Iterator[Searcher]:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [corpus(tmp_path)])
    s = open_searcher(paths, device="cpu", load=True)
    yield s
    s.close()


@pytest.mark.thorough  # several seconds; .ci/run runs it
def test_sentence_search_rescores_compressed_candidates_exactly(searcher: Searcher) -> None:
    dense = searcher.dense
    assert dense is not None and dense.sentences is not None
    assert not dense.sentences.exact  # ~480 sentences: past the (test) flat limit
    dense.sentence_candidates = len(dense.sentences)  # every sentence is a candidate
    text = "tocilizumab lowers cytokine mortality"
    result = neighbours.sentences(searcher, text, k=5)
    # The oracle: every stored sentence encoded afresh, exact inner product, top 5.
    records = searcher.store.get_many(range(2000, 2120))
    all_sents = [s for a in records.values() for s in article_sentences(a)]
    scores = dense.encoder.encode_sentences([s.text for s in all_sents]) @ dense.encode_query(
        text
    ).reshape(-1)
    order = np.lexsort(([s.sentence_id for s in all_sents], -scores))[:5]
    expected = [all_sents[i] for i in order]
    got = [h.sentence for h in result.hits if h.sentence is not None]
    assert [g.sentence_id for g in got] == [s.sentence_id for s in expected]
    assert [g.text for g in got] == [s.text for s in expected]
    np.testing.assert_allclose([h.score for h in result.hits], scores[order], rtol=1e-4)
    first = got[0]
    pmid, position = divmod(first.sentence_id, 1000)
    sents = article_sentences(records[pmid])
    before = sents[position - 1].text if position else ""
    assert first.before == before


@pytest.mark.thorough
def test_default_candidates_miss_nothing_better_than_the_sentence_itself(
    searcher: Searcher,
) -> None:
    assert searcher.dense is not None
    records = searcher.store.get_many([2050])
    target = article_sentences(records[2050])[1]
    query = searcher.dense.encode_query(target.text).reshape(-1)
    itself = float(searcher.dense.encoder.encode_sentences([target.text])[0] @ query)
    hits = neighbours.sentences(searcher, target.text, k=3).hits
    assert len(hits) == 3 and hits[0].score >= itself - 1e-4
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_data_home_with_old_sentence_vectors_says_so_then_ingest_converts_it(
    tmp_path: Path, tiny: TinyModels
) -> None:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [corpus(tmp_path, articles=12)])
    directory = paths.vector_dir("sentences")
    with SentenceCollection.open(directory) as new:
        count = len(new)
    # Rewrite it as an older medsearch left it: a float16 copy of every vector.
    records = Store(paths.store, readonly=True)
    sents = [s for a in records.get_many(range(2000, 2012)).values() for s in article_sentences(a)]
    records.close()
    shutil.rmtree(directory)
    searcher = open_searcher(paths, device="cpu", load=True)
    assert searcher.dense is not None
    vecs = searcher.dense.encoder.encode_sentences([s.text for s in sents])
    searcher.close()
    with VectorCollection.open(directory, dim=vecs.shape[1], profile="tiny", create=True) as old:
        old.add([s.sentence_id for s in sents], vecs)
        old.commit()
    assert len(sents) == count

    searcher = open_searcher(paths, device="cpu", load=True)
    with pytest.raises(OldLayoutError, match="run `medsearch ingest` once"):
        neighbours.sentences(searcher, sents[0].text)
    assert searcher.search("cytokine", k=3, mode="dense").hits  # articles still work
    searcher.close()

    ingest_and_encode(paths, [])  # what `medsearch ingest` does with no new files
    searcher = open_searcher(paths, device="cpu", load=True)
    hit = neighbours.sentences(searcher, sents[4].text, k=1).hits[0]
    query = searcher.dense.encode_query(sents[4].text) if searcher.dense else None
    searcher.close()
    assert query is not None
    scores = vecs @ query.reshape(-1)  # the exact oracle over the same vectors
    by_id = {s.sentence_id: float(v) for s, v in zip(sents, scores, strict=True)}
    # The tiny random BERT gives near-ties (32.0 vs 31.99995): compare scores, not ids.
    assert hit.score == pytest.approx(float(scores.max()), rel=1e-3)
    assert by_id[hit.sentence.sentence_id] == pytest.approx(hit.score, rel=1e-3)
    assert not (directory / "vectors.f16").exists()


@pytest.mark.thorough
def test_a_cpu_rescores_fewer_candidates_unless_configured(
    searcher: Searcher, tmp_path: Path, tiny: TinyModels
) -> None:
    """Re-encoding the candidate sentences is one GPU batch but seconds on a CPU, so a
    CPU re-scores fewer unless the config says otherwise."""
    from medsearch.retrieval.dense import SENTENCE_CANDIDATES, SENTENCE_CANDIDATES_CPU

    assert searcher.dense is not None
    assert searcher.dense.sentence_candidates == SENTENCE_CANDIDATES_CPU < SENTENCE_CANDIDATES
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny, search="sentence_candidates = 250")
    with open_searcher(paths, device="cpu", load=True) as configured:
        assert configured.dense is not None
        assert configured.dense.sentence_candidates == 250


@pytest.mark.thorough
def test_stats_counts_the_parts_and_projects_pubmed_in_its_compressed_layout(
    searcher: Searcher, tmp_path: Path
) -> None:
    """A small home's vectors are exact or carry a whole training sample: projecting
    their bytes per vector to PubMed would ask for terabytes that ingest never writes."""
    from ingest.space import per_citation
    from medsearch.footprint import PUBMED
    from medsearch.index.vectors.layout import SAMPLE_MAX, bytes_at_scale
    from medsearch.status import corpus_status

    info = corpus_status(Paths(tmp_path / "home"))
    sentences = info["sentences_vectors"]
    assert sentences["kind"] == "ivfpq" and sentences["parts"] >= 1
    parts = {p["part"]: p for p in info["footprint"]["parts"]}
    dim = int(sentences_dim(tmp_path))
    measured = parts["sentence vectors"]["bytes_per_sentence"] * PUBMED.sentences
    want = round(bytes_at_scale("sentences", dim) * PUBMED.sentences) + SAMPLE_MAX * 2 * dim
    assert parts["sentence vectors"]["projected_bytes"] == want < measured
    articles = parts["article vectors"]
    assert info["articles_vectors"]["kind"] == "flat"  # 120 articles: exact for now
    assert articles["projected_bytes"] == round(bytes_at_scale("articles", dim) * PUBMED.citations)
    # ... and a download's disk check plans with the same PubMed-scale figures.
    per = per_citation(info["footprint"], searcher.store.count())
    assert per.sentence_vectors == pytest.approx(want / PUBMED.citations)
    assert per.article_vectors == pytest.approx(bytes_at_scale("articles", dim))


def sentences_dim(tmp_path: Path) -> int:
    return json.loads(
        (Paths(tmp_path / "home").vector_dir("sentences") / "manifest.json").read_text()
    )["dim"]


def home_with_stale_lists(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> Paths:
    """An encoded home whose sentence lists the old growth retrain (L2 k-means) trained."""
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [corpus(tmp_path)])  # ~480 sentences: compressed here
    with monkeypatch.context() as m:
        old_growth_retrain(m)
        with SentenceCollection.open(paths.vector_dir("sentences")) as col:
            col.rebuild()
            assert col.lists_stale()
    return paths


def next_ingest_notes(paths: Paths) -> list[str]:
    """The summary notes of the next `medsearch ingest` on the CPU, with nothing new."""
    from ingest.pipeline import Ingestor

    with Ingestor(paths, jobs=0) as ing:
        notes, encoded = vectors_stage(paths, ing.store)
    assert encoded == 0
    return notes


@pytest.mark.thorough
def test_an_ingest_retrains_lists_an_earlier_version_trained_with_l2_and_says_so(
    tmp_path: Path, tiny: TinyModels, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = home_with_stale_lists(tmp_path, tiny, monkeypatch)
    notes = next_ingest_notes(paths)
    assert any("retrained the sentence index's lists" in note for note in notes)
    with SentenceCollection.open(paths.vector_dir("sentences"), readonly=True) as col:
        assert not col.exact and len(col) > 300
        np.testing.assert_allclose(centroid_norms(col), 1.0, atol=1e-4)
    s = open_searcher(paths, device="cpu", load=True)
    try:
        assert neighbours.sentences(s, "tocilizumab lowers cytokine mortality", k=3).hits
    finally:
        s.close()


def test_an_ingest_on_a_cpu_leaves_large_stale_lists_and_says_how_to_retrain(
    tmp_path: Path, tiny: TinyModels, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medsearch.index.vectors import sentence_index

    paths = home_with_stale_lists(tmp_path, tiny, monkeypatch)
    monkeypatch.setattr(sentence_index, "STALE_RETRAIN_CPU_MAX", 100)
    notes = next_ingest_notes(paths)
    assert any("medsearch ingest --device cuda" in note for note in notes)
    with SentenceCollection.open(paths.vector_dir("sentences"), create=True) as col:
        assert col.lists_stale()  # left as it was, still searchable
