"""``medsearch translate --from ovid``: an Ovid MEDLINE strategy written in PubMed's
syntax for the user to check; what has no PubMed form is left as typed with a note."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from medsearch.cli import main
from medsearch.errors import QuerySyntaxError
from medsearch.query import parse_query
from medsearch.query.ovid_translate import translate_ovid
from tests.test_query_strategies import history_of

CORPUS = Path(__file__).resolve().parent / "data" / "strategies" / "strategies.jsonl"

OVID = """1. exp Child/
2. *Lymphatic Metastasis/
3. (heart adj3 failure).ti.
4. (lewy* adj2 bod*).mp.
5. child$.tw.
6. wom?n.ti,ab.
7. or/1-3
8. 4 not (5 and 6)
9. Dementia/dt
10. exp *Secondary Prevention/ or exp *Primary Prevention/
11. randomized controlled trial.pt.
12. (statin or statins).ti,ab.
13 Animals/ (2530681)
14. R 121919.mp. [mp=title, original title, abstract]
"""


def test_each_ovid_form_gets_its_pubmed_form_or_a_note() -> None:
    done = translate_ovid(OVID)
    assert done.lines == (
        '#1 "Child"[mh]',
        '#2 "Lymphatic Metastasis"[majr:noexp]',
        '#3 "heart failure"[ti:~3]',
        "#4 (lewy* adj2 bod*)[tw]",
        "#5 child*[tw]",
        "#6 wom?n[tiab]",
        "#7 #1 OR #2 OR #3",
        "#8 #4 NOT (#5 AND #6)",
        "#9 Dementia/dt",
        '#10 "Secondary Prevention"[majr] OR "Primary Prevention"[majr]',
        "#11 randomized controlled trial[pt]",
        "#12 (statin OR statins)[tiab]",
        '#13 "Animals"[mh:noexp]',
        "#14 R 121919[tw]",
    )
    assert [note.split(":")[0] for note in done.notes] == ["#4", "#6", "#9", "#14"]


def test_translated_corpus_strategies_mostly_run_and_never_crash() -> None:
    """The 20 Ovid strategies of the corpus, translated: each line parses with the lines
    before it as its history, or is refused with a position: those with a note, the lines
    that combine them, and short stems (`run$` -> `run*`)."""
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    ran = total = 0
    for row in (r for r in rows if r["syntax"] == "ovid"):
        text = "\n".join((f"{n}. " if n else "") + t for n, t in row["lines"])
        seen: dict[int, str] = {}
        for line in translate_ovid(text).lines:
            number, _, query = line.partition(" ")
            total += 1
            try:
                seen[int(number[1:])] = parse_query(query, history=history_of(seen)).text
                ran += 1
            except QuerySyntaxError as error:
                # a position, in the line ("at N") or, for "#N", under the caret alone
                assert error.position is not None
                assert re.search(r"at \d+", error.problem) or error.problem.startswith(
                    "no search #"
                )
    assert ran / total > 0.85, (ran, total)  # 655 of 756 lines; the rest noted or refused


def test_the_command_reads_a_file_or_stdin_and_notes_on_stderr() -> None:
    result = CliRunner().invoke(main, ["translate", "--from", "ovid"], input="1. wom?n.ti,ab.\n")
    assert result.exit_code == 0
    assert result.stdout == "#1 wom?n[tiab]\n"
    assert result.stderr.startswith("note: #1: Ovid's ?/# wildcard has no PubMed form")
