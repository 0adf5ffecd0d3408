"""PMIDs that are not PMIDs, in real-format PubMed files, through the real `ingest`.

A PMID is a whole number from 1 to MAX_PMID written in ASCII digits; the bound is what
every key built from a PMID needs to fit a signed 64-bit integer (SQLite's INTEGER, and
the sentence ids ``pmid * 1000 + position``). A record whose PMID is anything else (0,
2^63, twenty digits, ``²``, Arabic-Indic digits, which ``int`` reads as another number)
is skipped and counted, in ``MedlineCitation`` and ``DeleteCitation`` alike; the rest of
its file, and every other file of the run, is kept, the file is recorded as done, and a
re-run has nothing left to do. The command line refuses the same texts by the same rule.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.errors import UsageError
from medsearch.paths import Paths
from medsearch.records import MAX_PMID
from medsearch.store import Store
from medsearch.tui.jobs import pmid_of

PLACEHOLDER = 777_777
HOSTILE = {
    "two_to_the_63": "9223372036854775808",
    "twenty_digits": "99999999999999999999",
    "zero": "0",
    "superscript_two": "²",
    "arabic_indic": "١٢٣",  # int() reads it as 123
}


def with_pmid(path: Path, bad: str) -> Path:
    """The file at ``path`` with its PLACEHOLDER PMID (article or deletion) reading ``bad``."""
    path.write_text(path.read_text().replace(f">{PLACEHOLDER}<", f">{bad}<"))
    return path


def hostile_files(folder: Path) -> dict[str, list[int]]:
    """One good file, then per hostile text a file with it as an article's PMID and one
    with it in a DeleteCitation beside a valid PMID; each file's good PMIDs."""
    folder.mkdir(parents=True, exist_ok=True)
    good = {"a_good.xml": [11, 12, 13]}
    pubmed_file(folder / "a_good.xml", [article_xml(p, f"Good record {p}") for p in (11, 12, 13)])
    for n, (name, bad) in enumerate(HOSTILE.items()):
        kept = [100 + 10 * n, 101 + 10 * n]
        articles = [
            article_xml(kept[0], f"Kept beside a bad PMID {kept[0]}"),
            article_xml(PLACEHOLDER, "Hostile record, not to be stored"),
            article_xml(kept[1], f"Kept beside a bad PMID {kept[1]}"),
        ]
        with_pmid(pubmed_file(folder / f"b_{name}.xml", articles), bad)
        good[f"b_{name}.xml"] = kept
        also = 200 + n
        deleting = pubmed_file(
            folder / f"c_delete_{name}.xml",
            [article_xml(also, f"Kept beside a bad deletion {also}")],
            deletions=[PLACEHOLDER, 12],
        )
        with_pmid(deleting, bad)
        good[f"c_delete_{name}.xml"] = [also]
    return good


def ingest_subprocess(home: Path, inputs: Path, tmpdir: Path) -> subprocess.CompletedProcess[str]:
    """`medsearch ingest` as a user runs it: its own process, parsers in child processes,
    its temporary files pointed at ``tmpdir`` so that the test sees any left there."""
    env = {**os.environ, "TMPDIR": str(tmpdir), "COLUMNS": "400"}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from medsearch.cli import main; main()",
            "--home",
            str(home),
            "ingest",
            str(inputs),
            "--no-encode",
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def tree(root: Path, skip: Path) -> set[str]:
    """Every path under ``root`` but those under ``skip``; files with size and mtime."""
    found = set()
    for path in root.rglob("*"):
        if path == skip or skip in path.parents:
            continue
        stat = path.stat()
        found.add(str(path) if path.is_dir() else f"{path} {stat.st_size} {stat.st_mtime_ns}")
    return found


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_absurd_pmids_are_skipped_and_reported_and_every_good_record_is_kept(
    tmp_path: Path,
) -> None:
    inputs = tmp_path / "inputs"
    good = hostile_files(inputs)
    home = tmp_path / "home"
    tmpdir = tmp_path / "process-tmp"
    tmpdir.mkdir()
    before = tree(tmp_path, home)

    run = ingest_subprocess(home, inputs, tmpdir)

    assert run.returncode == 0, run.stderr[-2000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    warnings = [line for line in run.stdout.splitlines() if line.startswith("warning:")]
    rule = f"a PMID is a positive whole number up to {MAX_PMID}"
    expected = [
        f"warning: {prefix}{name}.xml: skipped 1 record without a valid PMID ({bad!r}); {rule}"
        for prefix in ("b_", "c_delete_")
        for name, bad in HOSTILE.items()
    ]
    assert sorted(warnings) == sorted(expected)
    with Store(Paths(home).store, readonly=True) as store:
        stored = {a.pmid for batch in store.iter_articles() for a in batch}
        kept = {p for pmids in good.values() for p in pmids} - {12}  # 12: deleted
        assert stored == kept  # no 0, no 123 (the Arabic-Indic digits), nothing past MAX_PMID
        assert store.is_deleted(12)
        ledger = {e.name: e for e in store.files.entries()}
        assert {name: e.status for name, e in ledger.items()} == {n: "done" for n in good}
        assert {name: e.articles for name, e in ledger.items()} == {
            n: len(p) for n, p in good.items()
        }
    assert tree(tmp_path, home) == before  # nothing outside the home: inputs, TMPDIR

    again = ingest_subprocess(home, inputs, tmpdir)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"{len(good)} already done" in again.stdout and "warning:" not in again.stdout


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_command_line_refuses_what_ingest_skips_by_the_same_rule(tmp_path: Path) -> None:
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    pubmed_file(
        inputs / "edges.xml",
        [article_xml(MAX_PMID, "The largest PMID kept"), article_xml(MAX_PMID + 1, "One past")],
    )
    home = tmp_path / "home"
    code, out, err = cli(home, "ingest", str(inputs), "--no-encode", "--jobs", "0", "--json")
    assert code == 0, err

    code, out, _ = cli(home, "show", str(MAX_PMID), "--json")
    assert code == 0 and f'"pmid": {MAX_PMID}' in out
    for text in (str(MAX_PMID + 1), *HOSTILE.values()):
        code, _, err = cli(home, "show", text)
        assert code == 2, text
        assert err.strip().splitlines() == [
            f"medsearch: error: a PMID is a positive whole number up to {MAX_PMID}, not {text!r}"
        ]
    with Store(Paths(home).store, readonly=True) as store:
        assert store.count() == 1


@pytest.mark.parametrize("text", ["PMID ١٢٣", "²", "0", "99999999999999999999"])
def test_the_tuis_similar_mode_refuses_what_is_not_a_pmid(text: str) -> None:
    with pytest.raises(UsageError, match="Similar mode takes a PMID"):
        pmid_of(text)
    assert pmid_of(" PMID: 123 ") == 123
