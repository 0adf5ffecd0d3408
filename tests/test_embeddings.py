"""Importing NCBI's precomputed MedCPT embeddings, from a folder or over HTTP.

Chunks are built here in NCBI's format (``embeds_chunk_N.npy`` + ``pmids_chunk_N.json``)
and served by a real HTTP server on 127.0.0.1 that honours Range requests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from ingest.embeddings import import_embeddings
from medsearch.errors import IndexMismatchError, MedsearchError
from medsearch.index.vectors.collection import VectorCollection
from tests.httpserver import LocalServer

DIM = 768
ROWS = 50


def no_sleep(seconds: float) -> None:
    """Backoff is tested by the download module; here it would only slow the tests."""


@pytest.fixture
def chunks(tmp_path: Path) -> dict[int, np.ndarray]:
    """Three chunks of 50 rows; PMIDs 1000.. with every 5th PMID written as a string."""
    folder = tmp_path / "ncbi"
    folder.mkdir()
    rng = np.random.default_rng(0)
    by_pmid: dict[int, np.ndarray] = {}
    for n in range(3):
        vectors = rng.normal(size=(ROWS, DIM)).astype(np.float32)
        pmids = [1000 + n * ROWS + i for i in range(ROWS)][::-1]  # not in row order
        np.save(folder / f"embeds_chunk_{n}.npy", vectors)
        listed = [str(p) if i % 5 == 0 else p for i, p in enumerate(pmids)]
        (folder / f"pmids_chunk_{n}.json").write_text(json.dumps(listed))
        by_pmid.update(zip(pmids, vectors, strict=True))
    return by_pmid


@pytest.fixture
def collection(tmp_path: Path) -> Iterator[VectorCollection]:
    col = VectorCollection.open(tmp_path / "vectors", dim=DIM, profile="medcpt", create=True)
    yield col
    col.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[LocalServer]:
    srv = LocalServer(tmp_path / "ncbi")
    yield srv
    srv.close()


def known_except(*missing: int) -> Callable[[np.ndarray], np.ndarray]:
    """The store's answer to "which of these PMIDs do you hold?"."""
    return lambda pmids: ~np.isin(pmids, missing)


def assert_vectors_under_pmids(col: VectorCollection, by_pmid: dict[int, np.ndarray]) -> None:
    pmids = np.array(sorted(by_pmid))
    expected = np.stack([by_pmid[p] for p in pmids]).astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(col.get(pmids), expected)


def test_local_import_keys_vectors_by_pmid_and_skips_unknown(
    tmp_path: Path, chunks: dict[int, np.ndarray], collection: VectorCollection
) -> None:
    stats = import_embeddings(
        str(tmp_path / "ncbi"),
        collection,
        known_pmids=known_except(1003, 1120),
        download_dir=tmp_path / "dl",
    )
    assert (stats.chunks, stats.rows, stats.imported, stats.unknown) == (3, 150, 148, 2)
    assert len(collection) == 148
    assert collection.contains([1003, 1120, 1004]).tolist() == [False, False, True]
    del chunks[1003], chunks[1120]
    assert_vectors_under_pmids(collection, chunks)
    # committed: a fresh open sees the same
    with VectorCollection.open(collection.path, profile="medcpt") as again:
        assert len(again) == 148

    again_stats = import_embeddings(
        str(tmp_path / "ncbi"), collection, known_pmids=known_except(), download_dir=tmp_path
    )
    assert (again_stats.skipped_chunks, again_stats.imported) == (3, 0)
    assert "0 vectors imported from 0 of 3 chunks" in str(again_stats)


def test_http_import_resumes_a_partial_download_and_skips_done_chunks(
    tmp_path: Path,
    chunks: dict[int, np.ndarray],
    collection: VectorCollection,
    server: LocalServer,
) -> None:
    download_dir = tmp_path / "dl"
    download_dir.mkdir()
    whole = (tmp_path / "ncbi" / "embeds_chunk_1.npy").read_bytes()
    (download_dir / "embeds_chunk_1.npy.part").write_bytes(whole[:40_000])  # a broken run
    server.cut_short("/embeds_chunk_2.npy", after=70_000)  # and a dropped connection
    seen: list[tuple[str, int, int]] = []

    stats = import_embeddings(
        server.url,
        collection,
        known_pmids=known_except(),
        download_dir=download_dir,
        progress=lambda name, done, total: seen.append((name, done, total)),
        sleep=no_sleep,
    )
    assert (stats.chunks, stats.imported) == (3, 150)
    assert_vectors_under_pmids(collection, chunks)
    ranges = [r.range for r in server.requests_for("/embeds_chunk_1.npy")]
    assert ranges == ["bytes=40000-"]
    retried = server.requests_for("/embeds_chunk_2.npy")
    assert [r.range for r in retried] == [None, "bytes=70000-"]
    assert ("embeds_chunk_0.npy", ROWS, ROWS) in seen
    assert list(download_dir.iterdir()) == []  # imported chunks are not kept

    server.requests.clear()
    again = import_embeddings(
        server.url, collection, known_pmids=known_except(), download_dir=download_dir
    )
    assert again.skipped_chunks == 3
    assert not [r for r in server.requests if r.path.endswith(".npy")]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda f: np.save(f / "embeds_chunk_1.npy", np.zeros((50, 384), np.float32)), "384"),
        (lambda f: (f / "pmids_chunk_1.json").write_text(json.dumps(list(range(49)))), "49"),
        (lambda f: (f / "embeds_chunk_1.npy").write_bytes(b"<html>oops</html>"), ".npy"),
        (lambda f: (f / "pmids_chunk_1.json").write_text('["12", "x"]'), "PMID list"),
    ],
    ids=["wrong-dim", "row-count", "not-npy", "bad-pmid"],
)
def test_malformed_chunks_are_named_in_the_error(
    tmp_path: Path,
    chunks: dict[int, np.ndarray],
    collection: VectorCollection,
    damage: Callable[[Path], object],
    message: str,
) -> None:
    damage(tmp_path / "ncbi")
    with pytest.raises(MedsearchError, match=rf"embeds_chunk_1\.npy.*{re.escape(message)}"):
        import_embeddings(
            str(tmp_path / "ncbi"),
            collection,
            known_pmids=known_except(),
            download_dir=tmp_path / "dl",
        )
    assert collection.contains([1000]).all()  # chunk 0 was imported and committed
    assert not collection.contains([1050]).any()


def test_only_a_medcpt_collection_accepts_ncbi_vectors(tmp_path: Path, chunks: object) -> None:
    with (
        VectorCollection.open(tmp_path / "v", dim=DIM, profile="minilm", create=True) as col,
        pytest.raises(IndexMismatchError, match="minilm"),
    ):
        import_embeddings(
            str(tmp_path / "ncbi"), col, known_pmids=known_except(), download_dir=tmp_path
        )
