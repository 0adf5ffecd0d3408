"""Text someone else wrote (a record's title, a query, a reference list) written out
by medsearch: the Atom feed stays XML, CSV cells never run as spreadsheet formulas, a
backtick cannot break out of the PRISMA log's code span, and control characters reach
no terminal raw (issue 40)."""

from __future__ import annotations

import csv
import io
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

import medsearch.commands.history  # noqa: F401  (the module, for TABLE_LINES)
from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.export import to_csv
from medsearch.history.entries import Entry
from medsearch.history.prisma import csv_text, markdown_text
from medsearch.records import Article, Filters
from medsearch.safe_text import csv_cell, markdown_code, terminal_text, xml_text
from medsearch.watches.feed import write_feed
from medsearch.watches.model import Watch, WatchHit

HOSTILE_TITLE = "Gout\x1b]0;owned\x07 and \x08\x08 \ufffe\x00 flares\x9b2J"


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_the_atom_feed_stays_xml_whatever_a_title_holds(tmp_path: Path) -> None:
    watch = Watch("gout", "gout[ti] \x1b", "set", None, Filters(), None, False, "2026", None, 0)
    hit = WatchHit(1, "added", 1.0, "2026-01-01T00:00:00Z", False)
    path = write_feed(tmp_path, watch, [hit], {1: Article(pmid=1, title=HOSTILE_TITLE)}, "2026")
    root = ET.parse(path).getroot()  # expat refuses what XML 1.0 forbids
    ns = {"a": "http://www.w3.org/2005/Atom"}
    title = root.find("a:entry/a:title", ns)
    assert title is not None and title.text == xml_text(HOSTILE_TITLE)
    assert "\ufffe" not in title.text and "\x00" not in title.text and "\ufffd" in title.text


def test_csv_cells_never_start_a_formula() -> None:
    article = Article(pmid=1, title='=HYPERLINK("http://x","y")', journal="@SUM(1)")
    rows = list(csv.reader(io.StringIO(to_csv([article]))))
    assert rows[1][1] == '\'=HYPERLINK("http://x","y")' and rows[1][3] == "'@SUM(1)"
    typed = "=cmd|' /C calc'!A0"
    entry = Entry(
        number=1,
        at="2026-01-01T00:00:00+00:00",
        command="search",
        typed=typed,
        query="+1",
        mode=None,
    )
    log = list(csv.reader(io.StringIO(csv_text([entry]))))
    assert log[1][2] == "'+1" and log[1][3] == "'" + typed
    assert [csv_cell(t) for t in ("-2", "\tx", "plain", "")] == ["'-2", "'\tx", "plain", ""]


def test_a_backtick_in_a_query_stays_inside_the_prisma_logs_code_span() -> None:
    query = "gout`<img src=x onerror=alert(1)>` | ``b"
    entry = Entry(
        number=1,
        at="2026-01-01T00:00:00+00:00",
        command="search",
        typed=query,
        query=query,
        mode=None,
    )
    line = markdown_text([entry], version="0").splitlines()[-1]
    assert "| ``` gout`<img src=x onerror=alert(1)>` \\| ``b ``` |" in line
    assert markdown_code("a") == "`a`" and markdown_code("`a") == "`` `a ``"


def test_control_characters_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    assert terminal_text("a\x1b[2Jb\x07c\x08d\ne\tf\x9b") == "a^[[2Jb^Gc^Hd e\tf\\x9b"
    home = tmp_path / "home"
    source = pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout flares", "Gout.")])
    assert cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")[0] == 0
    assert cli(home, "search", "gout\x1b]0;owned\x07", "--count")[0] == 0
    code, out, _ = cli(home, "history")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "^[]0;owned^G" in out
    bib = tmp_path / "refs.bib"
    bib.write_text("@article{k\x1b[31m, title = {Unknown \x1b[2J title\x08}}\n")
    code, out, _ = cli(home, "check", str(bib))
    assert "\x1b" not in out and "\x08" not in out and "k^[[31m  Unknown ^[[2J title^H" in out


def test_export_to_an_existing_file_says_it_replaced_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout flares", "Gout.")])
    assert cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")[0] == 0
    target = tmp_path / "refs.bib"
    result = CliRunner().invoke(main, ["--home", str(home), "export", "1", "-o", str(target)])
    assert result.exit_code == 0 and result.stderr.strip() == f"wrote 1 record(s) to {target}"
    result = CliRunner().invoke(main, ["--home", str(home), "export", "1", "-o", str(target)])
    assert result.stderr.strip() == (
        f"wrote 1 record(s) to {target} (it replaced the file that was there)"
    )


def test_a_long_history_streams_a_line_per_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past TABLE_LINES (lowered here) the listing is printed as it is read: a table
    must hold every row to size its columns (200K lines took 69 s and 763 MB)."""
    monkeypatch.setattr(sys.modules["medsearch.commands.history"], "TABLE_LINES", 2)
    home = tmp_path / "home"
    source = pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout flares", "Gout.")])
    assert cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")[0] == 0
    for query in ("gout", "flares\x07", "nothing"):
        assert cli(home, "search", query, "--count")[0] == 0
    code, out, _ = cli(home, "history")
    assert code == 0
    lines = out.splitlines()
    assert [line.split("  ")[0] for line in lines] == ["#1", "#2", "#3"]
    assert lines[0].endswith("  gout  1") and lines[1].endswith("  flares^G  1")
    assert lines[2].endswith("  nothing  0")
