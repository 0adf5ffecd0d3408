"""Scattered rows of a memory-mapped file: same rows as plain indexing, announced to the
kernel first in page-merged ranges; float16 conversions identical to numpy's."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from medsearch.index.vectors import rows
from medsearch.index.vectors.rows import fits_float16, gather, scattered, to_float16, to_float32

DIM = 48  # 96-byte float16 rows: ~42 to a page, so nearby rows share pages


@pytest.fixture()
def table(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = np.random.default_rng(0).standard_normal((20_000, DIM)).astype(np.float16)
    path = tmp_path / "vectors.f16"
    data.tofile(path)
    return path, data


def _view(path: Path, dtype: type, width: int) -> np.ndarray:
    rows_ = path.stat().st_size // (np.dtype(dtype).itemsize * width)
    shape = (rows_, width) if width > 1 else (rows_,)
    return np.memmap(path, dtype=dtype, mode="r", shape=shape)


@pytest.mark.parametrize("prefetch", [True, False])
@pytest.mark.parametrize(
    "slots",
    [
        [3, 900, 901, 15_000, 19_999],  # scattered, with neighbours
        list(range(5000, 5100)),  # dense
        [19_999, 7, 7, 12_345, 0],  # unsorted, repeated
        [],
    ],
)
def test_gather_returns_exactly_the_rows_plain_indexing_returns(
    table: tuple[Path, np.ndarray],
    slots: list[int],
    prefetch: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(rows, "PREFETCH", prefetch and rows.PREFETCH)
    path, data = table
    index = np.asarray(slots, dtype=np.int64)
    got = gather(_view(path, np.float16, DIM), index, path)
    assert got.dtype == np.float16
    assert np.array_equal(got, data[index])


def test_gather_reads_one_dimensional_id_files(tmp_path: Path) -> None:
    ids = np.arange(10**6, 10**6 + 50_000, dtype="<i8") * 1000
    path = tmp_path / "ids.i64"
    ids.tofile(path)
    slots = np.array([1, 2, 40_000, 49_999])
    assert gather(_view(path, np.dtype("<i8").type, 1), slots, path).tolist() == ids[slots].tolist()


def test_only_sparse_reads_count_as_scattered() -> None:
    assert scattered(np.array([0, 1000]))
    assert not scattered(np.arange(100))
    assert not scattered(np.arange(0, 800, 8))  # one row in 8: read-ahead's job
    assert scattered(np.arange(0, 900, 9))
    assert not scattered(np.zeros(0, dtype=np.int64))


@pytest.mark.skipif(not rows.PREFETCH, reason="posix_fadvise is Linux's")
def test_scattered_rows_are_announced_once_each_in_page_merged_ranges(
    table: tuple[Path, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    path, data = table
    announced: list[tuple[int, int]] = []
    real = os.posix_fadvise

    def spy(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_WILLNEED
        announced.append((offset, length))
        real(fd, offset, length, advice)

    monkeypatch.setattr(os, "posix_fadvise", spy)
    width = 2 * DIM
    slots = np.array([19_000, 10, 11, 12 + mmap.PAGESIZE // width, 9_000, 10])
    assert np.array_equal(gather(_view(path, np.float16, DIM), slots, path), data[slots])
    # 10, 11 and a row less than a page past 12 merge; 9,000 and 19,000 stand alone.
    far = 12 + mmap.PAGESIZE // width
    assert announced == [
        (10 * width, (far + 1) * width - 10 * width),
        (9_000 * width, width),
        (19_000 * width, width),
    ]
    announced.clear()
    gather(_view(path, np.float16, DIM), np.arange(100, 200), path)
    assert announced == []  # dense: left to read-ahead


@pytest.mark.parametrize("with_torch", [True, False])
def test_float16_conversions_equal_numpys_bit_for_bit(
    with_torch: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if with_torch:
        import torch  # noqa: F401  (loaded: the fast path is taken)
    else:
        monkeypatch.setattr(rows, "_torch", lambda: None)
    x = np.random.default_rng(1).standard_normal((300, 64)).astype(np.float32)
    x[0, :6] = [65504.0, 65519.0, 6e-8, -0.0, 1 / 3, 2.0**-25]  # range, subnormal, ties
    half = to_float16(x)
    assert half.dtype == np.float16
    assert np.array_equal(half.view(np.uint16), x.astype(np.float16).view(np.uint16))
    back = to_float32(half)
    assert back.dtype == np.float32
    assert np.array_equal(back, half.astype(np.float32))
    readonly = half.copy()
    readonly.flags.writeable = False
    assert np.array_equal(to_float32(readonly), back)
    wide = x.astype(np.float64)
    assert np.array_equal(to_float16(wide), wide.astype(np.float16))


def test_what_float16_cannot_hold_is_refused() -> None:
    assert fits_float16(np.array([[0.5, -65504.0, 65504.0]], dtype=np.float32))
    assert fits_float16(np.zeros((0, 4), dtype=np.float32))
    for bad in (np.nan, np.inf, -np.inf, 70_000.0, -70_000.0):
        assert not fits_float16(np.array([[0.1, bad]], dtype=np.float32))


def test_the_index_package_does_not_import_torch_for_the_conversions() -> None:
    code = (
        "import sys, numpy as np\n"
        "from medsearch.index.vectors.rows import to_float16, to_float32\n"
        "to_float32(to_float16(np.ones((2, 3), np.float32)))\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.thorough
def test_a_search_of_memory_mapped_parts_announces_exactly_the_probed_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faiss

    from medsearch.index.vectors import faiss_index as vf
    from medsearch.index.vectors import ivf_parts

    rng = np.random.default_rng(3)
    x = rng.normal(size=(4000, 16)).astype(np.float32)
    index = faiss.index_factory(16, "IVF32,PQ4", faiss.METRIC_INNER_PRODUCT)
    index.train(x)
    index.add_with_ids(x, np.arange(4000, dtype=np.int64))
    vf.write_index(index, tmp_path / "part.faiss")
    part = ivf_parts.read_part(tmp_path / "part.faiss")
    announced: list[list[tuple[int, int]]] = []
    monkeypatch.setattr(ivf_parts, "will_need", lambda ranges: announced.append(list(ranges)))
    before = ivf_parts.search_parts([part], x[:3], 5, None, 4)
    lists = faiss.downcast_InvertedLists(faiss.extract_index_ivf(part).invlists)
    assert isinstance(lists, faiss.OnDiskInvertedLists)
    _, probed = faiss.extract_index_ivf(part).quantizer.search(x[:3], 4)
    wanted = sorted(
        rng
        for lst in np.unique(probed).tolist()
        if (n := lists.list_size(lst))
        for rng in (
            (int(lists.get_codes(lst)), n * lists.code_size),
            (int(lists.get_ids(lst)), n * 8),
        )
    )
    assert len(announced) == 1 and sorted(announced[0]) == wanted
    monkeypatch.undo()  # the real announcement changes nothing in the results
    after = ivf_parts.search_parts([part], x[:3], 5, None, 4)
    assert all(np.array_equal(a, b) for a, b in zip(before, after, strict=True))
