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


def cites_xml(pmid: int, cited: list[int]) -> str:
    """An article on heart failure with a reference list of ``cited`` PMIDs."""
    refs = "".join(
        f'<Reference><Citation>ref {c}</Citation><ArticleIdList><ArticleId IdType="pubmed">{c}'
        "</ArticleId></ArticleIdList></Reference>"
        for c in cited
    )
    xml = article_xml(pmid, f"Article {pmid} on heart failure", "Heart failure.")
    return xml.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")


def test_a_pmid_past_the_citation_graphs_range_keeps_its_record_and_breaks_nothing(
    tmp_path: Path,
) -> None:
    """A PMID between 2^32 and MAX_PMID is valid: the record is stored and found, its
    references are left out of the graph with one warning, and search, cited-by and a
    second ingest all work (it once broke the whole data home with an OverflowError)."""
    big = 5_000_000_000
    source = pubmed_file(
        tmp_path / "big.xml",
        [cites_xml(1, [10, big]), cites_xml(big, [1, 10]), cites_xml(10, [])],
    )
    text = source.read_text()  # and a reference "PMID" of 5,000 digits: int() raised on it
    huge = '<Reference><ArticleIdList><ArticleId IdType="pubmed">' + "9" * 5000
    source.write_text(
        text.replace(
            "<ReferenceList>", f"<ReferenceList>{huge}</ArticleId></ArticleIdList></Reference>", 1
        )
    )
    home = tmp_path / "home"
    code, out, err = cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")
    assert code == 0, err
    assert (
        "warning: big.xml: kept 1 record without its references: the citation graph holds"
        f" PMIDs up to {2**32 - 2}"
    ) in out
    code, out, err = cli(home, "search", "heart", "--count")
    assert (code, out.strip()) == (0, "3"), err
    code, out, err = cli(home, "citedby", "10", "--json")
    assert code == 0, err
    assert '"pmid": 1' in out and str(big) not in out
    code, out, err = cli(home, "show", str(big), "--json")
    assert code == 0 and f'"pmid": {big}' in out


def test_a_home_holding_edges_of_a_pmid_past_the_graphs_range_recovers(tmp_path: Path) -> None:
    """A data home an older version wrote, with ``article_refs`` rows for such a PMID
    (as citing article and in the changes since the last build): every reader skips
    them, and the next ingest builds the graph."""
    home = tmp_path / "home"
    source = pubmed_file(tmp_path / "a.xml", [cites_xml(1, [10]), cites_xml(10, [])])
    assert cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")[0] == 0
    big = 5_000_000_000
    with Store(Paths(home).store) as store, store.transaction():
        store.conn.execute(
            "INSERT INTO article_refs(pmid, edges) VALUES (?, ?)",
            (big, (10).to_bytes(4, "little")),
        )
        store.conn.execute("INSERT INTO refs_changed(pmid, edges) VALUES (?, NULL)", (big,))
    code, out, err = cli(home, "citedby", "10", "--json")
    assert code == 0, err
    assert '"pmid": 1' in out and str(big) not in out
    code, out, err = cli(home, "search", "heart", "--count")
    assert (code, out.strip()) == (0, "2"), err
    again = pubmed_file(tmp_path / "b.xml", [cites_xml(2, [10])])
    code, out, err = cli(home, "ingest", str(again), "--no-encode", "--jobs", "0")
    assert code == 0, err
    code, out, err = cli(home, "citedby", "10", "--json")
    assert code == 0 and '"pmid": 2' in out and '"pmid": 1' in out, err
