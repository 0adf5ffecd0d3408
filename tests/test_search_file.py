"""``medsearch search --file``: a strategy of PubMed-style numbered lines, each counted
as PubMed's Advanced page counts it and recorded in the history, so ``#N`` works after."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.errors import UsageError
from medsearch.history.strategy import read_strategy
from medsearch.paths import Paths


def cli(paths: Paths, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_lines_are_numbered_by_their_labels_or_in_order() -> None:
    text = "#1 gout[ti]\n\n2. flares[ti]\n#3 AND #5\n#7 #1 OR #2\nwinter\n"
    lines = read_strategy(text)
    assert [(line.number, line.query) for line in lines] == [
        (1, "gout[ti]"),
        (2, "flares[ti]"),
        (3, "#3 AND #5"),  # a search, not a label: PubMed's lines begin with operators never
        (7, "#1 OR #2"),
        (8, "winter"),
    ]
    with pytest.raises(UsageError, match="#2 does not follow #7"):
        read_strategy("#7 gout\n#2 flares\n")


def test_a_strategy_file_prints_each_count_and_records_each_line(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "home")
    records = [
        article_xml(1, "Gout flares", ""),
        article_xml(2, "Gout in winter", ""),
        article_xml(3, "Flares of psoriasis", ""),
    ]
    with Ingestor(paths, jobs=0) as ingestor:
        ingestor.run([pubmed_file(tmp_path / "a.xml", records)])
    cli(paths, "search", "psoriasis", "--count")  # history #1: the file's numbers differ
    strategy = tmp_path / "strategy.txt"
    strategy.write_text("#1 gout[ti]\n#2 flares[ti]\n#3 #1 AND #2\n#1 OR #2\n", encoding="utf-8")
    code, out, err = cli(paths, "search", "--file", str(strategy))
    assert code == 0, err
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["Search", "History", "Results", "Query"]
    assert rows[1:] == [
        ["#1", "#2", "2", "gout[ti]"],
        ["#2", "#3", "2", "flares[ti]"],
        ["#3", "#4", "1", "#1", "AND", "#2"],
        ["#4", "#5", "3", "#1", "OR", "#2"],
    ]
    history = json.loads(cli(paths, "history", "--json")[1])["lines"]
    assert [line["query_typed"] for line in history[1:]] == [
        "gout[ti]",
        "flares[ti]",
        "#2 AND #3",
        "#2 OR #3",
    ]
    assert cli(paths, "search", "#4", "--count")[1].strip() == "1"  # #N works afterwards
    code, out, _ = cli(paths, "search", "--file", str(strategy), "--json")
    answer = json.loads(out)
    assert [line["count"] for line in answer["lines"]] == [2, 2, 1, 3]
    assert answer["lines"][2]["query_as_run"] == "gout[ti] AND flares[ti]"
    strategy.write_text("#1 gout[ti]\n#2 #1 AND #4\n", encoding="utf-8")
    code, _, err = cli(paths, "search", "--file", str(strategy))
    assert code == 2
    assert "strategy line 2 (#2): #4 is not an earlier line of the strategy file" in err
