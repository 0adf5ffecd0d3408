"""Files the parsers have finished are written together: one transaction, one commit.

On many cores the single writer is ingest's ceiling and each tantivy commit stalls it,
so consecutive files that are already parsed whole share a unit (at most UNIT_FILES).
A file still being parsed starts a unit of its own, so a parse failure never takes
another file with it. These tests hold the writer back (its progress hook waits for the
parser processes) so the parsers finish ahead, as they do on 16 cores.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from conftest import wait_until

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import UNIT_FILES, Ingestor
from ingest.summary import IngestSummary
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths
from medsearch.progress import NullProgress
from medsearch.store import Store

FIRST = 1500  # two of the pool's batches: the parsers of the next files finish meanwhile


class ParsersAhead(NullProgress):
    """Before each batch is written, wait until every parser process has finished."""

    def __init__(self, interrupt_at_file: int | None = None) -> None:
        super().__init__()
        self.files = 0
        self.interrupt_at_file = interrupt_at_file

    def advance(self, key: str, amount: int = 1) -> None:
        if key == "articles":
            wait_until(lambda: not mp.active_children())
        elif key == "files":
            self.files += amount
            if self.files == self.interrupt_at_file:
                raise KeyboardInterrupt


def files(folder: Path, count: int, bad: int | None = None) -> list[Path]:
    """A first file of FIRST articles, then ``count - 1`` of 3; file ``bad`` malformed."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for f in range(count):
        path = folder / f"pubmed26n{f + 1:04d}.xml"
        if f == bad:
            path.write_bytes(b"<PubmedArticleSet><PubmedArticle><Med")
        else:
            n = FIRST if f == 0 else 3
            pubmed_file(
                path,
                [
                    article_xml(f * 10_000 + i + 1, f"Statin trial {f}-{i}", "LDL.")
                    for i in range(n)
                ],
            )
        out.append(path)
    return out


def ingest(paths: Paths, inputs: list[Path], progress: NullProgress) -> IngestSummary:
    with Ingestor(paths, jobs=2, progress=progress) as ing:
        return ing.run(inputs)


def indexed(paths: Paths) -> int:
    index = LexicalIndex.open(paths.lexical_index, create=False)
    try:
        return index.count()
    finally:
        index.close()


def test_files_parsed_ahead_are_written_in_one_commit(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    summary = ingest(paths, files(tmp_path / "in", UNIT_FILES), ParsersAhead())
    assert summary.ok and summary.ingested == UNIT_FILES
    assert summary.commits == 1
    with Store(paths.store) as store:
        assert [e.status for e in store.files.entries()] == ["done"] * UNIT_FILES
        assert store.count() == FIRST + 3 * (UNIT_FILES - 1)
    assert indexed(paths) == FIRST + 3 * (UNIT_FILES - 1)


def test_a_unit_holds_at_most_unit_files(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    summary = ingest(paths, files(tmp_path / "in", UNIT_FILES + 2), ParsersAhead())
    assert summary.ok and summary.ingested == UNIT_FILES + 2
    assert summary.commits == 2


def test_a_file_that_fails_to_parse_is_a_unit_of_its_own(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    inputs = files(tmp_path / "in", 4, bad=2)
    progress = ParsersAhead()
    summary = ingest(paths, inputs, progress)
    assert progress.files == 4  # the files bar counts the failed file too, as it always did
    assert [f for f, _ in summary.failures] == [str(inputs[2])]
    assert summary.ingested == 3
    assert summary.commits == 2  # files 1-2, then file 4 (file 3 rolled back alone)
    with Store(paths.store) as store:
        assert [e.status for e in store.files.entries()] == ["done", "done", "failed", "done"]
        assert store.count() == FIRST + 3 + 3
    assert indexed(paths) == FIRST + 3 + 3


@pytest.mark.thorough  # several seconds; .ci/run runs it
def test_ctrl_c_inside_a_unit_keeps_none_of_it_and_the_rerun_writes_it_all(
    tmp_path: Path,
) -> None:
    paths = Paths(tmp_path / "home")
    inputs = files(tmp_path / "in", UNIT_FILES)
    with pytest.raises(KeyboardInterrupt):
        ingest(paths, inputs, ParsersAhead(interrupt_at_file=2))  # the unit's 2nd file
    with Store(paths.store) as store:
        assert store.files.entries() == [] and store.count() == 0
    assert indexed(paths) == 0
    resumed = ingest(paths, inputs, NullProgress())
    assert resumed.ok and resumed.ingested == UNIT_FILES
    clean = Paths(tmp_path / "clean")
    ingest(clean, inputs, NullProgress())
    with Store(paths.store) as a, Store(clean.store) as b:
        assert a.count() == b.count() == FIRST + 3 * (UNIT_FILES - 1)
    assert indexed(paths) == indexed(clean)
