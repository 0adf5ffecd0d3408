"""What the commands print, and how they end, on a small home of real PubMed records."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, shared_data
from tiny_models import (  # noqa: F401  (session fixtures)
    TinyModels,
    tiny_models_fixture,
    write_tiny_config,
)

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.rerank import marks
from medsearch.sentences import article_sentences
from medsearch.store import Store

CLI = "from medsearch.cli import main; main()"
PIPE_CLOSED = 141  # what a shell reports for a process SIGPIPE ended: 128 + 13
MANY_ROWS = (
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)"
    " SELECT i FROM n"
)


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def real_records() -> list[Path]:
    """Six real PubMed records (Biopython's test files), one file each."""
    return sorted(shared_data("pubmed", "biopython-1.88").glob("pubmed*.xml"))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lexical home of real records, shared by the tests that only read it."""
    home = tmp_path_factory.mktemp("output") / "home"
    code, _, err = cli(home, "ingest", *map(str, real_records()), "--no-encode", "--jobs", "0")
    assert code == 0, err
    return home


def stored(home: Path) -> list[Article]:
    with Store(Paths(home).store, readonly=True) as store:
        return [a for batch in store.iter_articles() for a in batch]


def stored_pmids(home: Path) -> list[int]:
    return sorted(a.pmid for a in stored(home))


def medsearch(home: Path, *args: str, **popen: object) -> subprocess.Popen[bytes]:
    """The real command in a process of its own (this checkout's code)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        [sys.executable, "-c", CLI, "--home", str(home), *args], env=env, **popen
    )


# -- a reader that goes away (`| head -1`) ------------------------------------------------


def test_a_reader_that_stops_early_ends_the_command_quietly(home: Path) -> None:
    """`medsearch sql ... | head -1`: the command stops when the reader does, with the
    status a shell gives a process SIGPIPE ended (141), and prints nothing more."""
    proc = medsearch(home, "sql", "--nl", MANY_ROWS, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert json.loads(proc.stdout.readline()) == {"i": 1}
    proc.stdout.close()  # `head -1` exits; 2.2 MB of rows are still to be written
    assert proc.wait(timeout=60) == PIPE_CLOSED
    assert proc.stderr.read() == b""


@pytest.mark.parametrize(
    "args",
    [
        ("search", "spermatozoa"),
        ("search", "spermatozoa", "--json"),
        ("show", "PMID"),
        ("export", "PMID", "-o", "-", "--format", "ris"),
        ("stats",),
        ("sql", "--nl", "SELECT pmid, title FROM articles"),
        ("--help",),
    ],
    ids=lambda args: " ".join(args),
)
def test_every_command_meets_a_closed_pipe_the_same_way(
    home: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    """Standard output is a pipe whose reader has already gone: whichever command is
    printing (rich text, JSON, SQL rows, an export) ends with 141 and no message, not
    a traceback, an "internal error" or Python's "Exception ignored" at exit."""
    pmid = str(stored_pmids(home)[0])
    read, write = os.pipe()
    os.close(read)
    try:
        command = [pmid if a == "PMID" else a for a in args]
        proc = medsearch(home, *command, stdout=write, stderr=subprocess.PIPE, cwd=tmp_path)
    finally:
        os.close(write)
    _, err = proc.communicate(timeout=60)
    assert (proc.returncode, err.decode()) == (PIPE_CLOSED, "")


def test_export_to_dash_writes_standard_output(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pmid = stored_pmids(home)[0]
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(home, "export", str(pmid), "-o", "-", "--format", "ris")
    assert code == 0, err
    assert out.startswith("TY  - JOUR") and f"AN  - {pmid}" in out
    assert not (tmp_path / "-").exists()


# -- marks ----------------------------------------------------------------------------------


def test_a_mark_for_a_pmid_not_in_the_store_is_refused_and_nothing_is_recorded(
    home: Path,
) -> None:
    """Marks train the reranker on this corpus: a PMID it lacks is a typo or another
    corpus's. One missing PMID among several refuses them all, naming each missing one,
    so the same command runs again once the list is fixed."""
    log = Paths(home).signals_file
    before = list(marks.read(log))
    present = stored_pmids(home)[0]
    code, out, err = cli(home, "mark", "99999999", "--query", "statins")
    assert code == 1 and out == ""
    assert err == "medsearch: error: not in the store: PMID 99999999; no marks were recorded\n"
    code, _, err = cli(home, "mark", str(present), "99999999", "99999998", "--query", "statins")
    assert code == 1 and "PMID 99999999, 99999998;" in err
    assert list(marks.read(log)) == before

    code, out, err = cli(home, "mark", str(present), "--query", "statins", "--json")
    assert code == 0, err
    assert json.loads(out)["recorded"] == 1
    assert [(m.pmid, m.query) for m in marks.read(log)][len(before) :] == [(present, "statins")]


# -- sentences --------------------------------------------------------------------------------


def test_sentence_hits_are_printed_between_their_neighbours(
    tmp_path: Path, tiny_models: TinyModels
) -> None:
    """`sentences` promises each hit with its neighbours for context: the text output
    shows the sentence before and after each hit, as the abstract has them."""
    home = tmp_path / "home"
    write_tiny_config(Paths(home), tiny_models)
    code, _, err = cli(
        home, "ingest", *map(str, real_records()), "--models", "tiny", "--device", "cpu"
    )
    assert code == 0, err
    abstracts = {a.pmid: [s.text for s in article_sentences(a)] for a in stored(home)}
    query = "the plasmatic membrane of the sperm head"

    code, out, err = cli(home, "sentences", query, "-k", "5", "--json")
    assert code == 0, err
    hits = json.loads(out)["hits"]
    for hit in hits:  # the neighbours are the abstract's own
        sentences = abstracts[hit["pmid"]]
        n = sentences.index(hit["sentence"])
        before, after = sentences[n - 1] if n else "", "".join(sentences[n + 1 : n + 2])
        assert hit["context"] == {"before": before, "after": after}
    assert any(h["context"]["before"] and h["context"]["after"] for h in hits)

    code, out, err = cli(home, "sentences", query, "-k", "5")
    assert code == 0, err
    text = " ".join(out.split())  # rich wraps long sentences at 80 columns
    for hit in hits:
        parts = (hit["context"]["before"], "» " + hit["sentence"], hit["context"]["after"])
        shown = " ".join(" ".join(p.split()) for p in parts if p)
        assert shown in text, hit["pmid"]


def test_piped_output_is_not_wrapped_at_80_columns(home: Path) -> None:
    """Standard output that is not a terminal (CliRunner's, a pipe) gets one line per
    line printed: a hit's title whole, and its score beside the word ``score``."""
    code, out, _ = cli(home, "search", "cryopreservation spermatozoa ultrastructure motility")
    assert code == 0
    lines = out.splitlines()
    title = "Is cryopreservation a homogeneous process? Ultrastructure and motility of untreated"
    assert any(title in line and line.rstrip().endswith("(Cetti).") for line in lines)
    meta = next(line for line in lines if "PMID 11748933" in line)
    assert "Cryobiology" in meta and re.search(r"score \d+\.\d{3}", meta)
    assert max(len(line) for line in lines) > 80
