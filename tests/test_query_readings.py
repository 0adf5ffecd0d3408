"""How a typed strategy is read (issue 39 §1, "never silently"): each reading that
differs from the text typed is a note, and what PubMed would not run as typed is an
error that names the place and shows it with a caret, whatever the query's length.

Parsing is checked on the AST and the errors; the notes' way to the user (stderr under
``--count``, the ``notes`` list under ``--json``) through the real CLI on a small home of
real PubMed records.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from medsearch.cli import main
from medsearch.errors import QuerySyntaxError
from medsearch.query import Phrase, Tagged, YearRange, parse_query
from medsearch.query.normalize import straighten_quotes
from medsearch.query.readings import looks_like_strategy, shown_at
from medsearch.retrieval.query_text import read_query
from tests.conftest import shared_data


def problem(text: str) -> QuerySyntaxError:
    with pytest.raises(QuerySyntaxError) as caught:
        parse_query(text)
    assert caught.value.position is not None
    return caught.value


# -- a strategy is never read as plain words -------------------------------------------------


LONG = " OR ".join(f"term{i}[tiab]" for i in range(400))  # ~5,600 characters


@pytest.mark.parametrize(
    ("strategy", "where"),
    [
        (f"({LONG} OR AAA*[tiab])", "AAA*"),
        (f"({LONG}) AND (cancer[tiab]", "(cancer"),
        (f'({LONG}) AND "stray quote', '"stray'),
        (f"({LONG}) AND #18", "#18"),
    ],
    ids=["short truncation", "unbalanced parenthesis", "stray quote", "#18 with no history"],
)
def test_a_long_strategy_with_an_error_is_refused_at_its_place_not_read_as_words(
    strategy: str, where: str
) -> None:
    read = read_query(strategy, syntax=True)
    assert read.syntax and read.error is not None  # the searcher raises it: exit 2
    assert read.error.position == strategy.index(where)
    window, caret = read.error.shown.splitlines()
    assert len(window) < 90  # a window around the place, not 5,600 characters
    assert window[caret.index("^")] == where[0]


def test_only_prose_without_query_syntax_may_fall_back_to_plain_words() -> None:
    prose = "Metformin lowers glucose (as first-line therapy in type 2 diabetes [12]"
    assert not looks_like_strategy(prose)
    read = read_query(prose, syntax=True)
    assert not read.syntax and read.notes[0].startswith("read as plain words")
    for marked in ("AND x", "x[tiab]", '"x y"', "immun*", "#3", "“x”"):
        assert looks_like_strategy(f"{prose} {marked}")


def test_the_caret_window_stays_short_and_points_at_the_place() -> None:
    text = "a" * 5000 + ")" + "b" * 5000
    window, caret = shown_at(text, 5000).splitlines()
    assert window.startswith("  ...") and window.endswith("...")
    assert window[caret.index("^")] == ")"
    assert shown_at("x\ty", 2) == "  x y\n    ^"  # a tab shown as one space keeps the caret


# -- lower-case operators ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "word", "at"),
    [
        ("bile duct[tiab] or biliary[tiab]", "or", 16),
        ("cancer[tiab] or tumour[tiab]", "or", 13),
        ("NOT (Animals[Mesh] not (Animals[Mesh] and Humans[Mesh]))", "not", 19),
        ("(cancer or tumour) AND lung[tiab]", "or", 8),
    ],
)
def test_a_lower_case_operator_where_an_operator_stands_is_an_error(
    text: str, word: str, at: int
) -> None:
    error = problem(text)
    assert error.position == at
    assert error.problem.startswith(f"lower-case '{word}' at {at}: PubMed's operators are upper")


def test_a_lower_case_operator_word_inside_a_name_or_a_tagged_phrase() -> None:
    assert parse_query("Wit and Humor[mh]").node == Tagged("mh", Phrase("Wit and Humor", 0), 13)
    phrase = parse_query("heart and lung[tiab] AND x")
    assert phrase.node is not None
    assert _phrases(phrase.node) == [Phrase("heart and lung", 0)]  # a phrase, as PubMed reads it
    assert phrase.notes == (
        "lower-case 'and' at 6 searched as words of the tagged phrase they are in, as PubMed"
        " reads them; write AND/OR/NOT to combine",
    )
    assert parse_query("salt and pepper").notes == ()  # plain words: ranked, as typed


# -- quotes -----------------------------------------------------------------------------------


def test_curly_quotes_read_as_straight_ones_with_a_note() -> None:
    curly = parse_query("“Humans”[mh] AND ‘heart attack’[tiab]")
    straight = parse_query('"Humans"[mh] AND "heart attack"[tiab]')
    assert curly.node == straight.node and curly.filters == straight.filters
    assert curly.notes == ('curly quotes read as straight quotes " (at 0, 7, 17, 30)',)


def test_a_mixed_pair_closes_where_it_was_typed_and_does_not_re_pair_the_rest() -> None:
    parsed = parse_query('"Holy fire”[tiab] AND "skin"[tiab]')
    assert parsed.node is not None
    assert [leaf.text for leaf in _phrases(parsed.node)] == ["Holy fire", "skin"]


def test_an_apostrophe_is_not_a_quote() -> None:
    assert straighten_quotes("Crohn’s disease[tiab]") == ("Crohn’s disease[tiab]", ())
    assert parse_query("Crohn’s disease[tiab]").notes == ()


def test_an_unclosed_quote_is_an_error_with_a_caret() -> None:
    error = problem('cancer[tiab] AND "lung')
    assert (error.problem, error.position) == ("unclosed quote at 17", 17)
    assert str(error).splitlines()[1:] == ['  cancer[tiab] AND "lung', "                   ^"]


# -- truncation, #N, stray characters, tags -----------------------------------------------------


@pytest.mark.parametrize("stem", ["AAA*[tiab]", "CT*", "MRI*", "age*"])
def test_a_stem_under_four_characters_is_an_error_naming_the_word(stem: str) -> None:
    text = f"heart[tiab] AND {stem}"
    error = problem(text)
    assert error.position == 16
    assert error.problem.startswith(f"truncated word '{stem.split('[')[0]}' at 16: PubMed needs")


def test_a_history_reference_is_never_a_word() -> None:
    assert problem("x AND #18").problem.startswith("#18 at 6 refers to search 18 of the history")
    ref = "#" + "9" * 24

    def history(number: int) -> str:
        raise QuerySyntaxError(f"no search #{number} in the history (see: medsearch history)")

    with pytest.raises(QuerySyntaxError) as caught:
        parse_query(f"x AND {ref}", history=history)
    assert caught.value.problem.startswith(f"no search {ref} in the history")
    assert caught.value.position == 6


def test_a_stray_character_is_an_error() -> None:
    assert problem("cancer[tiab] AND : lung[tiab]").problem == "stray ':' at 17"
    assert problem("x AND lung : cancer").problem == "stray ':' at 11"
    lone_star = problem("diagnostic * [MeSH:noexp]")  # PubMed's Clinical Queries has this
    assert lone_star.problem.startswith("a '*' standing alone at 11: truncation takes the *")
    assert parse_query("Wit & Humor[mh]").node is not None  # part of a name


def test_a_second_tag_is_ignored_with_a_note() -> None:
    assert parse_query("cancer[ti][mh]").notes == (
        "field tag [mh] at 10 ignored: the words before it already have [ti]",
    )


def test_mesh_no_exp_spacing_is_noexp() -> None:
    spaced = parse_query("Cataract[mesh:no exp]").node
    assert spaced == parse_query("Cataract[mh:noexp]").node
    assert isinstance(spaced, Tagged) and spaced.noexp


def test_pubmeds_quoted_date_range_form_reads_as_the_range() -> None:
    typed = '("2015/01/01"[Date - Publication] : "2016/12/31"[Date - Publication])'
    assert parse_query(typed).filters == parse_query("2015/01/01:2016/12/31[dp]").filters
    node = parse_query(f"cancer[ti] OR {typed}").node
    assert node is not None and YearRange(2015, 2016, 15, 20150101, 20161231) in node.children  # type: ignore[union-attr]


# -- Ovid forms -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("exp Child/", "Ovid's `exp Child/` at 0: in PubMed write Child[mh] (exploded)"),
        ("exp Child [mesh]", "Ovid's `exp Child[mh]` at 0: in PubMed write Child[mh]"),
        ("Child/", "Ovid's heading form `Child/` at 0: in PubMed write Child[mh:noexp]"),
        (
            "*Lymphatic Metastasis[mesh:noexp]",
            "Ovid's major-topic star `*Lymphatic Metastasis[mh:noexp]` at 0: in PubMed write"
            ' "Lymphatic Metastasis"[majr:noexp]',
        ),
        ("cancer.ti,ab.", "Ovid's field suffix `.ti,ab.` at 0: in PubMed put [tiab] after"),
        ("heart adj3 failure", "Ovid's proximity `adj3` at 6: in PubMed write the words"),
        ("child$", "Ovid's truncation `child$` at 0: in PubMed write child*"),
        ("wom?n", "Ovid's wildcard `wom?n` at 0: PubMed has no one-letter wildcard"),
        ("1 or 2", "Ovid's line numbers `1 or 2` at 0: in PubMed write #1 OR #2"),
        ("or/1-5", "Ovid's line combination `or/1-5` at 0"),
        ("30 Animals/", "Ovid's heading form `Animals/` at 3"),
        ("R 121919 [mp=title, abstract]", "Ovid's field list [mp=title, ab...] at 9: not a"),
    ],
)
def test_ovid_forms_are_errors_naming_the_pubmed_form(text: str, says: str) -> None:
    assert problem(text).problem.startswith(says)


def test_pubmed_forms_that_look_ovid_are_left_alone() -> None:
    assert parse_query("1 OR 2[pmid]").node is not None  # PubMed's own list of PMIDs
    assert parse_query("type 1 or 2 diabetes").node is not None  # words, not Ovid's lines
    assert problem("10 not (10 and 11)").problem.startswith("Ovid's line numbers `10 and 11` at 8")
    assert parse_query("and/or[tiab]").node is not None
    assert parse_query("Cataract/surgery[mh]").node is not None


def _phrases(node: object) -> list[Phrase]:
    if isinstance(node, Phrase):
        return [node]
    if isinstance(node, Tagged):
        return _phrases(node.node)
    return [p for child in getattr(node, "children", ()) for p in _phrases(child)]


# -- the notes reach the user: stderr under --count, a list under --json ------------------------


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = shared_data("pubmed", "net-synergy-pubmedparser", "pubmed21n0001.xml.gz")
    home = tmp_path_factory.mktemp("readings") / "home"
    code, _, err = cli(home, "ingest", str(source), "--no-encode", "--jobs", "0")
    assert code == 0, err
    return home


def test_count_prints_the_notes_on_stderr_and_json_lists_them(home: Path) -> None:
    curly = "“Humans”[mh]"
    code, out, err = cli(home, "search", curly, "--count")
    assert code == 0 and int(out) > 0
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert 'note: curly quotes read as straight quotes " (at 0, 7)' in notes
    assert any("narrower headings are not included" in n for n in notes)  # the MeSH note too
    code, out, _ = cli(home, "search", curly, "--count", "--json")
    counted = json.loads(out)
    assert counted["count"] == int(cli(home, "search", '"Humans"[mh]', "--count")[1])
    assert 'curly quotes read as straight quotes " (at 0, 7)' in counted["notes"]


def test_a_long_strategy_with_an_error_exits_2_with_a_caret(home: Path) -> None:
    code, out, err = cli(home, "search", f"({LONG} OR CT*[tiab])", "--count")
    assert (code, out) == (2, "")
    line, window, caret = err.splitlines()
    assert line.startswith("medsearch: error: truncated word 'CT*' at ")
    assert window[caret.index("^") : caret.index("^") + 3] == "CT*"
