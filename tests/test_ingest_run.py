"""The one ingest entry point: a script, ``eval`` and the CLI run the same stages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.synth import article_xml, pubmed_file
from ingest.clock import StageClock
from ingest.incoming import InputFile
from ingest.run import Corpus, IngestOptions, ingest
from ingest.summary import IngestSummary
from ingest.writer_rows import messages
from medsearch.beir import BeirDoc, beir_doc_to_article
from medsearch.errors import UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress


@pytest.fixture
def paths(tmp_path: Path) -> Paths:
    return Paths(tmp_path / "home")


def test_files_go_in_without_the_cli_and_the_report_counts_them(
    paths: Paths, tmp_path: Path
) -> None:
    pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [article_xml(1, "Interleukin-6 in sepsis", "IL-6."), article_xml(2, "Metformin", "M.")],
    )
    progress = NullProgress()
    clock = StageClock(IngestSummary())
    report = ingest(
        paths,
        IngestOptions(files=(tmp_path / "pubmed26n0001.xml",), encode=False, jobs=0),
        progress=progress,
        clock=clock,
    )
    assert (report.articles, report.summary.added, report.stopped) == (2, 2, None)
    assert report.summary is clock.summary
    assert set(clock.summary.stages) == {"prepare", "ingest", "citations"}


def test_options_that_need_a_download_are_refused_before_the_home_is_touched(
    paths: Paths,
) -> None:
    with pytest.raises(UsageError, match="go with --download"):
        ingest(paths, IngestOptions(files=(Path("x.xml"),), limit=2))
    with pytest.raises(UsageError, match="give PubMed files"):
        ingest(paths, IngestOptions())
    assert not paths.home.exists()


def test_a_corpus_is_applied_once_then_reused(paths: Paths, tmp_path: Path) -> None:
    source = tmp_path / "corpus.jsonl"
    source.write_text(json.dumps({"_id": "d1"}) + "\n")
    articles = [
        beir_doc_to_article(BeirDoc(f"d{n}", f"document {n}", "text"), n) for n in (1, 2, 3)
    ]
    corpus = Corpus(InputFile(source, source.stat().st_size, "abc"), lambda: messages(articles, 2))
    options = IngestOptions(corpus=corpus, encode=False, jobs=0, holder="eval")

    first = ingest(paths, options)
    again = ingest(paths, options)

    assert (first.reused, first.articles, first.summary.added) == (False, 3, 3)
    assert (again.reused, again.articles, again.summary.added) == (True, 3, 0)
    assert not paths.citations.exists()  # a corpus that is not PubMed has no references
