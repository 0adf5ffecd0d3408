"""A long query's cost is bounded: its commonest words stop ranking past a budget.

tantivy walks every posting of every ranked word, so a pasted paragraph costs what all
its words' postings cost. Past ``WordBudget.min_words`` a run of side-by-side words keeps
its rarest words while their postings fit ``postings`` x the documents, and ranks
exactly as those words alone would; short queries, phrases, truncations and explicit
ORs are never cut. Real tantivy indexes, whole and sharded, and the real Searcher.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical import shards as lsh
from medsearch.index.lexical.index import LexicalIndex, LexicalResult
from medsearch.index.lexical.query import (
    RANKED_FIELDS,
    UNTAGGED_EXTRAS,
    QueryBuilder,
    Ranking,
    WordBudget,
)
from medsearch.query.nodes import Or
from medsearch.query.parser import parse_plain, parse_query
from medsearch.records import AbstractSection, Article
from medsearch.retrieval.query_text import LONG_QUERY, dropped_note

DOCS = 40
COMMON = ("cohort", "patients", "outcome", "therapy", "risk", "trial")  # in every abstract
EVERY_WORD = Ranking(budget=None)


def article(pmid: int) -> Article:
    rare = " warfarin" if pmid % 20 == 0 else " dabigatran" if pmid % 20 == 1 else ""
    words = " ".join(COMMON[: 2 + pmid % 5])  # every abstract has the first two, some more
    return Article(pmid=pmid, abstract=(AbstractSection(f"{' '.join(COMMON)} {words}{rare}"),))


@pytest.fixture(params=["whole", "sharded"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> LexicalIndex:
    made = (
        LexicalIndex.open(tmp_path / "whole")
        if request.param == "whole"
        else lsh.ShardedLexicalIndex.create(tmp_path / "sharded", 3)
    )
    made.upsert([article(p) for p in range(1, DOCS + 1)])
    made.commit("pubmed26n0001.xml")
    yield made
    made.close()


def ranking(result: LexicalResult) -> list[tuple[int, float]]:
    return [(h.pmid, round(h.score, 5)) for h in result.hits]


LONG = "warfarin dabigatran " + " ".join(COMMON)


def test_a_long_run_of_words_ranks_on_its_rarest_words(index: LexicalIndex) -> None:
    # costs (postings in the ranked fields): the two drugs 2 each, every common word 40;
    # the budget is 2 x 40 documents, and the first four words are always kept
    result = index.search(LONG, k=DOCS, snippets=0, syntax=False)
    assert result.dropped == ("outcome", "therapy", "risk", "trial")
    kept = index.search(
        "warfarin dabigatran cohort patients", k=DOCS, snippets=0, syntax=False, ranking=EVERY_WORD
    )
    assert ranking(result) == ranking(kept)  # exactly as the kept words alone
    assert result.hits[0].pmid in (20, 21, 40)  # an article with a drug word leads


def test_every_word_still_highlights(index: LexicalIndex) -> None:
    result = index.search(LONG, k=5, snippets=0, syntax=False)
    assert {"trial", "risk"} <= set(result.terms)


def test_a_budget_that_fits_every_word_changes_nothing(index: LexicalIndex) -> None:
    roomy = Ranking(budget=WordBudget(postings=8.0))  # 8 x 40 > 2 + 2 + 6 x 40
    result = index.search(LONG, k=DOCS, snippets=0, syntax=False, ranking=roomy)
    every = index.search(LONG, k=DOCS, snippets=0, syntax=False, ranking=EVERY_WORD)
    assert result.dropped == ()
    assert ranking(result) == ranking(every)


def test_a_pasted_paper_keeps_at_most_max_words_of_its_rarest_words(
    index: LexicalIndex,
) -> None:
    capped = Ranking(budget=WordBudget(postings=100.0, max_words=6))  # postings fit
    result = index.search(LONG, k=DOCS, snippets=0, syntax=False, ranking=capped)
    assert result.dropped == ("risk", "trial")  # the dearest two, ties by position


def test_short_queries_are_never_cut_however_common(index: LexicalIndex) -> None:
    tight = Ranking(budget=WordBudget(postings=0.01))
    result = index.search("cohort patients outcome therapy", k=5, snippets=0, ranking=tight)
    assert result.dropped == ()


def test_phrases_truncations_explicit_or_and_not_are_never_cut(index: LexicalIndex) -> None:
    tight = Ranking(budget=WordBudget(min_words=1, postings=0.01))
    phrase = index.search('warfarin "cohort patients" "outcome therapy"', k=5, ranking=tight)
    assert phrase.dropped == ()
    prefix = index.search("warfarin cohor* patien* outc*", k=5, ranking=tight)
    assert prefix.dropped == ()
    alternatives = index.search(
        "warfarin OR cohort OR patients OR outcome OR therapy OR risk", k=DOCS, ranking=tight
    )
    assert alternatives.dropped == ()
    assert alternatives.total == DOCS  # every alternative still matches
    # words side by side in a set query are ANDed (PubMed), so each excluded word is an OR
    excluded = index.search(
        "warfarin NOT (dabigatran OR cohort OR patients OR outcome OR therapy)", k=5
    )
    assert excluded.dropped == () and excluded.total == 0  # every excluded word excludes


def test_side_by_side_words_are_marked_as_such_by_the_parser() -> None:
    assert isinstance(node := parse_query("a b c").node, Or) and node.words
    assert isinstance(node := parse_plain("a b c").node, Or) and node.words
    assert isinstance(node := parse_query("a OR b OR c").node, Or) and not node.words


def test_the_searcher_says_which_words_it_left_out(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    pubmed_file(
        corpus / "pubmed26n0001.xml",
        [
            article_xml(a.pmid, f"Study {a.pmid}", a.abstract_text)
            for a in map(article, range(1, 41))
        ],
    )
    home = str(tmp_path / "home")
    runner = CliRunner()
    assert runner.invoke(main, ["--home", home, "ingest", str(corpus)]).exit_code == 0
    got = runner.invoke(main, ["--home", home, "search", LONG, "--json"])
    assert got.exit_code == 0, got.output
    notes = " ".join(json.loads(got.output)["notes"])
    assert "4 common word(s) left out" in notes and "outcome, therapy, risk, trial" in notes


def test_every_shard_leaves_out_the_same_words(tmp_path: Path) -> None:
    # "heparin" fills shard 1 (PMID mod 3 == 1) and is absent from shard 0: weighed by
    # its own statistics shard 1 would drop it (and rank on "therapy", which scores
    # differently: "heparin" is there twice); all shards follow one decision instead
    docs = [
        Article(
            pmid=p,
            abstract=(
                AbstractSection(" ".join(COMMON) + (" heparin heparin" if p % 3 == 1 else "")),
            ),
        )
        for p in range(1, DOCS + 1)
    ]
    sharded = lsh.ShardedLexicalIndex.create(tmp_path / "sharded", 3)
    sharded.upsert(docs)
    sharded.commit("pubmed26n0001.xml")
    query = " ".join(COMMON) + " heparin"  # in shard 1 as dear as the rest, and last
    result = sharded.search(query, k=DOCS, snippets=0, syntax=False)
    assert "heparin" not in result.dropped and len(result.dropped) == 3
    kept = " ".join(w for w in query.split() if w not in result.dropped)
    alone = sharded.search(kept, k=DOCS, snippets=0, syntax=False, ranking=EVERY_WORD)
    assert ranking(result) == ranking(alone)
    sharded.close()


def test_the_note_names_each_left_out_word_once() -> None:
    note = dropped_note(["use", "cells", "use"], dense_reads_all=True)
    assert note.startswith(LONG_QUERY)
    assert "2 common word(s)" in note and "(use, cells)" in note and "dense side is not" in note
    assert "dense side" not in dropped_note(["use"], dense_reads_all=False)


def test_a_word_typed_n_times_counts_n_times_in_one_walk(index: LexicalIndex) -> None:
    once = {h.pmid: h.score for h in index.search("warfarin", k=DOCS, snippets=0).hits}
    thrice = index.search("warfarin Warfarin warfarin", k=DOCS, snippets=0)
    assert {h.pmid: h.score for h in thrice.hits} == pytest.approx(
        {pmid: 3 * score for pmid, score in once.items()}, rel=1e-5
    )
    pasted = index.search(" ".join(["cohort"] * 300), k=DOCS, snippets=0, syntax=False)
    assert pasted.dropped == () and len(pasted.hits) == DOCS  # one word, however often
    built = QueryBuilder(ls.build_schema(), ls.analyzers()).build(
        parse_plain("warfarin warfarin Warfarin cohort").node
    )
    # one term query a field (PubMed's All Fields: the ranked ones and the rest)
    assert repr(built).count('"warfarin"') == len(RANKED_FIELDS) + len(UNTAGGED_EXTRAS)


def test_words_without_tokens_are_not_reported_as_left_out(index: LexicalIndex) -> None:
    result = index.search("%%% ^^^ ### @@@ &&& warfarin", k=5, snippets=0, syntax=False)
    assert result.dropped == () and result.hits
