"""Failures that once ended in "internal error" (exit 70) and now end in one line that
says what to do (issue 40): tantivy's killed index writer, a zero-length store, a
deeply nested config file; and MEDSEARCH_DEBUG=0 does not ask for tracebacks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import debug_wanted, main
from medsearch.errors import StoreError
from medsearch.index.lexical.index import LexicalIndex


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


class KilledWriter:
    """What tantivy's IndexWriter answers once its indexing thread died (a full disk
    while flushing a segment cannot be made here without filling the machine's)."""

    def __getattr__(self, name: str) -> Any:
        def killed(*args: object) -> None:
            raise ValueError("An index writer was killed.. A worker thread encountered an error")

        return killed


def test_a_killed_index_writer_is_one_line_saying_what_to_do(tmp_path: Path) -> None:
    index = LexicalIndex.open(tmp_path / "lexical", write=True)
    index._writer = KilledWriter()
    with pytest.raises(StoreError) as caught:
        index.add_documents([(1, "{}")])
    assert str(caught.value) == (
        f"the lexical index's writer at {tmp_path / 'lexical'} stopped (An index writer was"
        " killed.. A worker thread encountered an error), most often because the disk is"
        " full; free space and run `medsearch ingest` again: the store keeps what it has and"
        " the index catches up"
    )
    index.rollback()  # nothing staged to drop: no second error
    assert index._writer is None


def test_a_zero_length_store_is_named_not_an_internal_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "store.sqlite").write_bytes(b"")
    for command in (["stats"], ["search", "x", "--count"]):
        code, _, err = cli(home, *command)
        assert code == 1, err
        assert err.strip() == (
            f"medsearch: error: the article store {home / 'store.sqlite'} is empty (0 bytes,"
            " no tables); run `medsearch ingest` to build it"
        )


def test_a_deeply_nested_config_is_a_config_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = pubmed_file(tmp_path / "a.xml", [article_xml(1, "Gout", "Gout.")])
    assert cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")[0] == 0
    (home / "config.toml").write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    code, _, err = cli(home, "search", "gout", "--count")
    assert code == 78
    assert err.strip() == (
        f"medsearch: error: {home / 'config.toml'} nests arrays or tables too deeply to read;"
        " a medsearch setting is a number, a string or a flat list"
    )


def test_medsearch_debug_0_means_off(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, wanted in (("0", False), ("", False), ("off", False), ("1", True), ("yes", True)):
        monkeypatch.setenv("MEDSEARCH_DEBUG", value)
        assert debug_wanted() is wanted, value
    monkeypatch.delenv("MEDSEARCH_DEBUG")
    assert debug_wanted() is False
