"""Inputs within every stated limit but built to take the memory: the readers cap what
they hold and fail with one line that names the file and the limit.

Each test uses an input just past a limit (or the limit lowered for the test), so the
suite stays cheap; the thorough test runs a real-size input in its own process and
measures its peak memory.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.mesh import write_descriptors
from benchmarks.synth import article_xml, pubmed_file
from ingest import citations, writer_rows
from ingest.mesh_xml import MAX_RECORD_CHARS, MAX_RECORD_ROWS
from ingest.pubmed_xml import parse_file
from medsearch import references
from medsearch.cli import main
from tests.conftest import FIXTURES

REPO = Path(__file__).resolve().parent.parent


def cli(home: Path, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def one_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "internal error" not in lines[0], err
    return lines[0]


# The command's own peak (VmHWM, which exec resets), written at its exit: the child's
# ru_maxrss would also count what this test process held when it forked it, since Linux
# keeps the larger across exec, and a long test session grows past 1 GB.
MEASURED = """
import atexit, os

def _peak() -> None:
    with open("/proc/self/status") as status, open(os.environ["MEDSEARCH_TEST_PEAK"], "w") as out:
        out.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))

atexit.register(_peak)
from medsearch.cli import main
main()
"""


def run_measured(args: list[str], tmp_path: Path) -> tuple[int, str, float]:
    """``medsearch args`` in its own process: exit status, stderr, its peak RSS in MB."""
    peak = tmp_path / "peak"
    env = {
        **os.environ,
        # no empty entry: an empty PYTHONPATH entry is the current folder
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "MEDSEARCH_TEST_PEAK": str(peak),
    }
    with (tmp_path / "err").open("w+") as err:
        proc = subprocess.run(
            [sys.executable, "-c", MEASURED, *args],
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=env,
            check=False,
        )
        err.seek(0)
        return proc.returncode, err.read(), int(peak.read_text()) / 1024


# -- ingest: batches end at a byte size, not only at 1,000 records ----------------------


def test_ingest_batches_end_at_a_byte_size_whatever_the_records_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer_rows, "BATCH_BYTES", 40_000)
    source = pubmed_file(
        tmp_path / "big.xml",
        [article_xml(n, f"Record {n}", "word " * 3_000) for n in range(1, 11)],
    )
    messages = writer_rows.messages(parse_file(source), 1000)
    batches = [payload for kind, payload in messages if kind == "articles"]
    assert sum(len(b) for b in batches) == 10
    assert len(batches) >= 3  # ~15 KB of JSON a record: 3 a batch, not all 10 in one
    assert all(sum(len(row[4]) for row in b.rows) < 40_000 + 16_000 for b in batches)


# -- citation import: lines and values capped ---------------------------------------------


def test_a_citation_value_longer_than_a_pmid_is_one_line_naming_the_file(tmp_path: Path) -> None:
    for name, value in (("twenty.csv", "1" * 20), ("huge.csv", "9" * 5_000)):
        csv = tmp_path / name
        csv.write_text(f"citing,referenced\n1,10\n{value},5\n")
        code, _, err = cli(tmp_path / "home", "ingest", "--citations", str(csv), "--no-encode")
        assert code == 1
        assert one_error(err).startswith(
            f"medsearch: error: {csv}: a value longer than a PMID (16 digits at most)"
        )


def test_a_citation_line_past_the_cap_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(citations, "BLOCK_BYTES", 64)
    csv = tmp_path / "long.csv"
    csv.write_bytes(b"citing,referenced\n1,10\n2," + b"3" * 60 + b" " * 10_000 + b"\n")
    code, _, err = cli(tmp_path / "home", "ingest", "--citations", str(csv), "--no-encode")
    assert code == 1
    assert one_error(err) == f"medsearch: error: {csv}: a line longer than 4,096 bytes"


def test_citation_rows_outside_the_graph_are_counted_not_silently_dropped(tmp_path: Path) -> None:
    csv = tmp_path / "outside.csv"
    csv.write_text("citing,referenced\n1,10\n5000000000,5\n0,3\n")
    code, out, err = cli(tmp_path / "home", "ingest", "--citations", str(csv), "--no-encode")
    assert code == 0, err
    assert "2 rows naming PMID 0 or one past 4,294,967,294 left out" in out


# -- MeSH: records capped in rows and characters ----------------------------------------------


def test_a_mesh_record_past_the_caps_fails_the_file_and_keeps_the_installed_mesh(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert cli(home, "mesh", "import", str(FIXTURES / "mesh" / "desc2025.xml"))[0] == 0
    many = tmp_path / "desc2026.xml"
    write_descriptors(
        many, [("D000001", "Many", ["A01"], [f"t{i}" for i in range(MAX_RECORD_ROWS)])]
    )
    code, _, err = cli(home, "mesh", "import", str(many))
    assert code == 1
    line = one_error(err)
    assert line.startswith(f"medsearch: error: {many}: MeSH record D000001 has 10,0")
    assert line.endswith(
        f"terms, tree numbers and qualifiers; the limit is {MAX_RECORD_ROWS:,} at line 4"
    )
    long = tmp_path / "desc2027.xml.gz"
    write_descriptors(tmp_path / "long.xml", [("D000002", "x" * MAX_RECORD_CHARS, ["A01"], [])])
    long.write_bytes(gzip.compress((tmp_path / "long.xml").read_bytes()))
    code, _, err = cli(home, "mesh", "import", str(long))
    assert code == 1 and f"the limit is {MAX_RECORD_CHARS:,}" in one_error(err)
    code, out, _ = cli(home, "stats", "--json")
    assert '"mesh": "MeSH 2025"' in out


def test_an_empty_descriptor_file_does_not_replace_the_installed_mesh(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert cli(home, "mesh", "import", str(FIXTURES / "mesh" / "desc2025.xml"))[0] == 0
    empty = tmp_path / "desc2026.xml"
    write_descriptors(empty, [])
    code, _, err = cli(home, "mesh", "import", str(empty))
    assert code == 2
    assert one_error(err) == (
        f"medsearch: error: {empty}: holds no descriptor records; the installed MeSH is left"
        " as it was"
    )
    assert '"mesh": "MeSH 2025"' in cli(home, "stats", "--json")[1]


# -- check: BibTeX, RIS and MEDLINE readers capped ---------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "problem"),
    [
        (
            "long.bib",
            "@article{a, title = {" + "w " * 60_000 + "}}",
            "a field (title) longer than 100,000 characters",
        ),
        ("long.ris", "TY  - JOUR\nTI  - " + "w" * 100_001 + "\nER  - \n", "a line longer than"),
        (
            "long.nbib",
            "PMID- 1\nTI  - start\n" + "      more words\n" * 10_000,
            "a field longer than 100,000 characters",
        ),
        ("many.bib", "@misc{k, title={t}}\n" * 20_001, "more than 20,000 entries"),
        ("many.txt", "12345\n" * 20_001, "more than 20,000 entries"),
    ],
    ids=["bibtex-title", "ris-line", "nbib-field", "bibtex-entries", "pmid-list"],
)
def test_check_refuses_a_reference_list_past_the_caps_in_one_line(
    tmp_path: Path, name: str, text: str, problem: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    code, _, err = cli(tmp_path / "home", "check", str(path))
    assert code == 2
    line = one_error(err)
    assert line.startswith(f"medsearch: error: {path}: {problem}"), line


def test_check_reads_standard_input_only_up_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(references, "MAX_BYTES", 1_000)
    code, _, err = cli(tmp_path / "home", "check", "-", stdin="12345\n" * 200)
    assert code == 2
    assert (
        one_error(err)
        == "medsearch: error: -: larger than 0 MiB; not read (is it a reference list?)"
    )


def test_the_bibtex_reader_keeps_reading_values_as_before() -> None:
    found = references.read_bibtex(
        '@article{k1, title = "A {B} {"}c title", year = 2020, doi = {10.1000/x}}\n'
        "@book(k2, title = {Nested {braces} (here)}, pmid = 123)\n"
        '@article{k3, title = "a" # {b} # c, year=2001}'
    )
    assert [(r.label, r.title, r.year, r.doi, r.pmid) for r in found] == [
        ("k1", 'A B "c title', 2020, "10.1000/x", None),
        ("k2", "Nested braces (here)", None, None, 123),
        ("k3", "abc", 2001, None, None),
    ]


@pytest.mark.thorough  # a 50 MB title and a 50 MB RIS line, each in its own process
def test_check_on_50_mb_fields_stays_small_and_quick(tmp_path: Path) -> None:
    bib = tmp_path / "title.bib"
    bib.write_text("@article{a, title = {" + "word " * 10_000_000 + "}}\n")
    ris = tmp_path / "line.ris"
    ris.write_text("TY  - JOUR\nTI  - " + "x" * 50_000_000 + "\nER  - \n")
    for path in (bib, ris):
        code, err, peak_mb = run_measured(
            ["--home", str(tmp_path / "home"), "check", str(path)], tmp_path
        )
        assert code == 2 and str(path) in one_error(err)
        assert peak_mb < 500, peak_mb
