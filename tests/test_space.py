"""`ingest --download` checks the disk before it starts, and refuses in one clear line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from httpserver import serve

from benchmarks.synth import article_xml, pubmed_file
from ingest.download import RemoteFile, list_remote, listed_size
from ingest.space import (
    DOWNLOADED_FILES,
    HEADROOM,
    MEASURED,
    MIN_CORPUS,
    SPOOL_BYTES_PER_GZ_BYTE,
    SPOOLED_FILES,
    UNLISTED_FILE_BYTES,
    PerCitation,
    SpaceNeeded,
    check,
    disk_free,
    estimate,
    per_citation,
)
from medsearch.cli import main
from medsearch.errors import DiskSpaceError
from medsearch.footprint import GZ_BYTES_PER_CITATION, PUBMED

PER = PerCitation(store=1000, lexical=500, article_vectors=2000, sentence_vectors=3000)


def remote(name: str, size: int | None) -> RemoteFile:
    url = f"http://mirror.invalid/pubmed/baseline/{name}"
    return RemoteFile(name=name, url=url, md5_url=url + ".md5", size=size)


# -- the listing's size column ------------------------------------------------------------


@pytest.mark.parametrize(
    ("row", "size"),
    [
        ('<a href="f.xml.gz">f.xml.gz</a>      2025-12-10 14:23  35774912\n', 35_774_912),
        ('<a href="f.xml.gz">f.xml.gz</a>      2025-12-10 14:23   35M  \n', 35 << 20),
        ('<a href="f.xml.gz">f.xml.gz</a>      2025-12-10 14:23  1.5G\n', round(1.5 * (1 << 30))),
        ('<a href="f.xml.gz">f.xml.gz</a> <a href="g">g</a>\n', None),
        ('<a href="f.xml.gz">f.xml.gz</a>      2025-12-10 14:23  -\n', None),
    ],
)
def test_the_listing_size_column_is_read_in_every_apache_spelling(
    row: str, size: int | None
) -> None:
    assert listed_size(row, row.index(">") + 1) == size


def test_the_local_mirror_listing_gives_each_file_its_size(tmp_path: Path) -> None:
    folder = tmp_path / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    (folder / "pubmed26n0001.xml.gz").write_bytes(b"x" * 1234)
    with serve(tmp_path) as server:
        [listed] = list_remote("baseline", mirror=server.url + "pubmed/")
    assert listed.size == 1234


# -- the estimate -------------------------------------------------------------------------


def test_the_estimate_counts_citations_from_gzipped_bytes(tmp_path: Path) -> None:
    gz = round(10_000 * GZ_BYTES_PER_CITATION)
    needed = estimate([remote("a.xml.gz", gz)], tmp_path, PER)
    assert needed.citations == 10_000
    assert (needed.downloads, needed.store, needed.lexical) == (gz, 10_000_000, 5_000_000)
    assert needed.vectors == 10_000 * 5000
    assert needed.spool == round(gz * SPOOL_BYTES_PER_GZ_BYTE)  # parsed, waiting for the writer
    written = gz + 10_000_000 + 5_000_000 + 50_000_000 + needed.spool
    assert needed.total == round(written * (1 + HEADROOM))


def test_spools_count_the_largest_files_that_can_wait_at_once(tmp_path: Path) -> None:
    """Not the whole baseline: spools are removed as files are written."""
    files = [remote(f"f{i}.xml.gz", 1000 + i) for i in range(SPOOLED_FILES + 5)]
    needed = estimate(files, tmp_path, PER)
    largest = sum(1000 + i for i in range(5, SPOOLED_FILES + 5))
    assert needed.spool == round(largest * SPOOL_BYTES_PER_GZ_BYTE)


def test_downloads_deleted_as_they_are_ingested_need_room_for_a_window_only(
    tmp_path: Path,
) -> None:
    """With --delete-downloads each file goes once the store has it, and the download
    waits while a window of files waits for the ingest: the baseline's 51.8 GB are
    never on disk at once."""
    most = DOWNLOADED_FILES + 3  # and 3 downloading
    files = [remote(f"f{i}.xml.gz", 1000 + i) for i in range(most + 5)]
    kept = estimate(files, tmp_path, PER)
    window = estimate(files, tmp_path, PER, keep_downloads=False, connections=3)
    assert kept.downloads == sum(1000 + i for i in range(most + 5))
    assert window.downloads == sum(1000 + i for i in range(5, most + 5))
    assert (window.store, window.lexical, window.spool) == (kept.store, kept.lexical, kept.spool)


def test_without_encoding_no_vectors_are_counted(tmp_path: Path) -> None:
    assert estimate([remote("a.xml.gz", 10**6)], tmp_path, PER, encode=False).vectors == 0


def test_downloaded_and_ingested_files_cost_nothing_more(tmp_path: Path) -> None:
    (tmp_path / "a.xml.gz").write_bytes(b"done")
    (tmp_path / "b.xml.gz.part").write_bytes(b"x" * 400)
    files = [remote("a.xml.gz", 1000), remote("b.xml.gz", 1000), remote("c.xml.gz", None)]
    needed = estimate(files, tmp_path, PER, ingested=frozenset({"a.xml.gz"}))
    assert needed.downloads == 0 + 600 + UNLISTED_FILE_BYTES
    assert needed.citations == round((1000 + UNLISTED_FILE_BYTES) / GZ_BYTES_PER_CITATION)


def test_a_small_corpus_uses_the_measured_figures_a_larger_one_its_own() -> None:
    footprint = {
        "parts": [
            {"part": "store", "bytes_per_article": 900.0},
            {"part": "lexical index", "bytes_per_article": 400.0},
            {"part": "article vectors", "bytes_per_article": 0.0},
            {"part": "sentence vectors", "bytes_per_article": None},
        ]
    }
    assert per_citation(footprint, MIN_CORPUS - 1) == MEASURED
    own = per_citation(footprint, MIN_CORPUS)
    assert (own.store, own.lexical) == (900.0, 400.0)
    # a lexical-only corpus about to be encoded: vectors fall back to the measured figures
    assert own.article_vectors == MEASURED.article_vectors
    assert own.sentence_vectors == MEASURED.sentence_vectors


def test_a_small_corpus_plans_its_vectors_in_its_own_layout_and_dimension() -> None:
    """Vector parts are projected in their PubMed-scale layout, which holds at any size
    (a 384-d home needs half a 768-d one's vector bytes); a small store and index do not."""
    footprint = {
        "parts": [
            {"part": "store", "bytes_per_article": 2_600.0, "projected_bytes": 101 * 10**9},
            {"part": "lexical index", "bytes_per_article": 974.0},
            {"part": "article vectors", "projected_bytes": 36 * 10**9},
            {"part": "sentence vectors", "projected_bytes": 28 * 10**9},
        ]
    }
    small = per_citation(footprint, MIN_CORPUS - 1)
    assert (small.store, small.lexical) == (MEASURED.store, MEASURED.lexical)
    assert small.article_vectors == pytest.approx(36e9 / PUBMED.citations)
    assert small.sentence_vectors == pytest.approx(28e9 / PUBMED.citations)
    large = per_citation(footprint, MIN_CORPUS)
    assert large.store == pytest.approx(101e9 / PUBMED.citations)
    assert large.lexical == 974.0


# -- the check ----------------------------------------------------------------------------

NEEDED = SpaceNeeded(downloads=10**9, citations=800_000, store=10**9, lexical=0, vectors=0)


def test_it_fits_or_it_says_needed_free_and_where(tmp_path: Path) -> None:
    check(NEEDED, tmp_path, free_bytes=lambda _: NEEDED.total)
    with pytest.raises(DiskSpaceError) as raised:
        check(NEEDED, tmp_path, free_bytes=lambda _: NEEDED.total - 1)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{NEEDED.total:,} bytes" in message
    assert f"{NEEDED.total - 1:,} bytes" in message
    assert str(tmp_path) in message


def test_the_bytes_to_keep_free_come_on_top(tmp_path: Path) -> None:
    with pytest.raises(DiskSpaceError, match="keep_free_bytes"):
        check(NEEDED, tmp_path, keep_free=1, free_bytes=lambda _: NEEDED.total)


def test_free_space_is_read_from_the_nearest_existing_folder(tmp_path: Path) -> None:
    assert disk_free(tmp_path / "not" / "yet") > 0


# -- the command --------------------------------------------------------------------------


def baseline_site(root: Path) -> None:
    folder = root / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    name = "pubmed26n0001.xml.gz"
    pubmed_file(
        folder / name, [article_xml(i, f"Title {i}", "Text.") for i in range(1, 6)], gz=True
    )
    digest = hashlib.md5((folder / name).read_bytes()).hexdigest()
    (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")


def download(home: Path, url: str, *extra: str) -> tuple[int, str, str]:
    args = ["--home", str(home), "ingest", "--download", "baseline", "--mirror", url, *extra]
    result = CliRunner().invoke(main, [*args, "--no-encode", "--json"])
    return result.exit_code, result.stdout, result.stderr


def test_ingest_refuses_to_start_when_the_disk_cannot_hold_it(tmp_path: Path) -> None:
    baseline_site(tmp_path / "site")
    home = tmp_path / "home"
    home.mkdir()
    # Ask to keep more free than any disk has: the check fails without filling one.
    (home / "config.toml").write_text("[ingest]\nkeep_free_bytes = 1_000_000_000_000_000_000\n")
    with serve(tmp_path / "site") as server:
        code, out, err = download(home, server.url + "pubmed/")
        data_requests = server.requests_for("/pubmed/baseline/pubmed26n0001.xml.gz")
    assert code != 0
    [line] = err.strip().splitlines()
    assert "not enough disk" in line and "free under the data home" in line
    report = json.loads(out)  # --json: the refusal, and that nothing was done
    assert report["error"] == line.removeprefix("medsearch: error: ")
    assert (report["exit_status"], report["files"], report["added"]) == (code, 0, 0)
    assert str(home) in line
    assert not data_requests
    assert not (home / "downloads" / "baseline" / "pubmed26n0001.xml.gz").exists()
    assert not (home / "store.sqlite").exists()


def test_skip_space_check_starts_anyway(tmp_path: Path) -> None:
    baseline_site(tmp_path / "site")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[ingest]\nkeep_free_bytes = 1_000_000_000_000_000_000\n")
    with serve(tmp_path / "site") as server:
        code, out, err = download(home, server.url + "pubmed/", "--skip-space-check")
    assert code == 0, err
    assert json.loads(out)["added"] == 5


def test_a_bad_keep_free_setting_is_a_clear_error(tmp_path: Path) -> None:
    baseline_site(tmp_path / "site")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[ingest]\nkeep_free_bytes = "lots"\n')
    with serve(tmp_path / "site") as server:
        code, _, err = download(home, server.url + "pubmed/")
    assert code != 0
    assert "keep_free_bytes" in err
