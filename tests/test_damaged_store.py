"""A damaged store is one line that says where, never a traceback.

Bytes flipped on disk inside one record's compressed blob break that record only:
`show`, `export` and `search` name its PMID and say how to check the rest, while the
other records still read. Bytes flipped in a b-tree page, or in a text column, make
`sql` say the store is damaged (not that the SQL is wrong), and the check it suggests,
``medsearch sql "PRAGMA integrity_check"``, runs and reports the damage.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ingested_home

from medsearch.cli import main
from medsearch.paths import Paths

CHECK = 'check the whole store with `medsearch sql "PRAGMA integrity_check"`'


@dataclass(frozen=True)
class Built:
    home: Path
    damaged: int
    """The PMID whose bytes each test damages (the third in PMID order)."""
    title: str
    intact: int


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    home, articles = ingested_home(tmp_path_factory)
    first, _, third = articles[:3]
    return Built(home, third.pmid, third.title, first.pmid)


@pytest.fixture
def home(built: Built, tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(built.home, copy)
    assert not Paths(copy).store.with_name("store.sqlite-wal").exists()  # all in the file
    return copy


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def flip(store: Path, found: bytes, at: slice) -> None:
    """Invert the bytes ``at`` of the one place ``found`` is in the store's file."""
    data = bytearray(store.read_bytes())
    start = data.find(found)
    assert start > 0 and data.find(found, start + 1) < 0, "not found once in the file"
    for i in range(start + (at.start or 0), start + at.stop):
        data[i] ^= 0xFF
    store.write_bytes(bytes(data))


def damage_record(home: Path, pmid: int) -> None:
    """Eight bytes in the middle of ``pmid``'s compressed record."""
    store = Paths(home).store
    with sqlite3.connect(store) as conn:
        (blob,) = conn.execute("SELECT data FROM records WHERE pmid = ?", (pmid,)).fetchone()
    conn.close()
    middle = len(blob) // 2
    flip(store, blob, slice(middle, middle + 8))


@pytest.mark.parametrize("command", ["show", "export", "search"])
def test_a_damaged_record_is_one_line_that_names_its_pmid(
    built: Built, home: Path, command: str
) -> None:
    damage_record(home, built.damaged)
    args = {
        "show": ["show", str(built.damaged)],
        "export": ["export", str(built.intact), str(built.damaged), "--format", "ris"],
        "search": [
            "search",
            max(re.findall(r"[A-Za-z]+", built.title), key=len),
            "--mode",
            "lexical",
        ],
    }[command]
    code, out, err = cli(home, *args)
    assert (code, out) == (1, "")
    assert err.startswith(
        f"medsearch: error: the stored record of PMID {built.damaged} is damaged ("
    )
    assert err.endswith(f"); {CHECK}\n")
    assert len(err.splitlines()) == 1


def test_the_records_around_a_damaged_one_still_read(built: Built, home: Path) -> None:
    damage_record(home, built.damaged)
    code, out, err = cli(home, "show", str(built.intact), "--json")
    assert (code, err) == (0, "")
    assert f'"pmid": {built.intact}' in out


def damage_tree(home: Path, table: str, damage: Callable[[bytearray, int, int], None]) -> None:
    """``damage(file, offset of the root page, page size)`` the b-tree of ``table``."""
    store = Paths(home).store
    with sqlite3.connect(store) as conn:
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
        (size,) = conn.execute("PRAGMA page_size").fetchone()
    conn.close()
    data = bytearray(store.read_bytes())
    damage(data, (root - 1) * size, size)
    store.write_bytes(bytes(data))


def unknown_root(data: bytearray, root: int, size: int) -> None:
    data[root] = 0x00  # a page type SQLite does not know: the whole tree is unreadable


def one_cell_more(data: bytearray, root: int, size: int) -> None:
    """The last leaf claims a cell it does not have: a pointer to nowhere."""
    leaf = root  # a table on one page; past one, the root is interior (type 5)
    if data[root] == 0x05:
        leaf = (int.from_bytes(data[root + 8 : root + 12], "big") - 1) * size
    cells = int.from_bytes(data[leaf + 3 : leaf + 5], "big")
    data[leaf + 3 : leaf + 5] = (cells + 1).to_bytes(2, "big")


def test_a_damaged_page_is_one_line_that_suggests_the_check(home: Path) -> None:
    damage_tree(home, "articles", unknown_root)
    code, out, err = cli(home, "sql", "SELECT title FROM articles")
    assert (code, out) == (1, "")
    assert err == (
        f"medsearch: error: the article store {Paths(home).store} is damaged (database disk"
        f" image is malformed); {CHECK}\n"
    )


def test_the_check_reports_the_damage_it_can_walk(home: Path) -> None:
    damage_tree(home, "articles", one_cell_more)
    code, out, err = cli(home, "sql", "--json", "PRAGMA integrity_check")
    assert (code, err) == (0, "")
    found = [row["integrity_check"] for row in json.loads(out)]
    assert found != ["ok"]
    assert "tree page" in found[0]


def test_damage_the_check_cannot_walk_says_to_restore(home: Path) -> None:
    damage_tree(home, "articles", unknown_root)
    code, _, err = cli(home, "sql", "PRAGMA integrity_check")
    assert code == 1
    assert err == (
        f"medsearch: error: the article store {Paths(home).store} is damaged (database disk"
        " image is malformed); SQLite's own check cannot walk it either; restore the file"
        " from a copy, or ingest again into a new data home\n"
    )


def test_text_that_is_not_utf8_is_damage_not_bad_sql(built: Built, home: Path) -> None:
    flip(Paths(home).store, built.title.encode(), slice(3, 4))  # the title in `articles`
    code, out, err = cli(
        home, "sql", "SELECT title FROM articles WHERE pmid = " + str(built.damaged)
    )
    assert (code, out.splitlines()) == (1, ["title"])  # the header, written before the row
    assert err.startswith(
        f"medsearch: error: the article store {Paths(home).store} is damaged (Could not"
        " decode to UTF-8 column 'title'"
    )
    assert err.endswith(f"; {CHECK}\n")
