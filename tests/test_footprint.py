"""What a data home takes per article and what all of PubMed would need (`stats`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.footprint import PUBMED, Part, Scale, human, project, total, weighted_articles


def test_article_parts_scale_with_citations() -> None:
    corpus = Scale(citations=1000, with_abstract=1000, sentences=0)
    target = Scale(citations=40_000, with_abstract=40_000, sentences=0)
    [store] = project([Part("store", 1_400_000, "article")], corpus, target)
    assert store.per_article == 1400
    assert store.projected == 56_000_000


def test_sentence_parts_scale_with_sentences_not_articles() -> None:
    corpus = Scale(citations=1000, with_abstract=1000, sentences=8600)
    [sentences] = project([Part("sentence vectors", 8_600_000, "sentence")], corpus, PUBMED)
    assert sentences.per_sentence == 1000
    assert sentences.per_article == 8600
    assert sentences.projected == 1000 * PUBMED.sentences


def test_citations_without_an_abstract_are_weighed_by_their_size() -> None:
    # An all-abstract corpus (SciFact) measured 1 KB per citation; a citation without an
    # abstract is half that size, and the target is half with, half without.
    corpus = Scale(citations=100, with_abstract=100, sentences=0)
    target = Scale(citations=1000, with_abstract=500, sentences=0)
    [part] = project([Part("store", 100_000, "article", without_abstract=0.5)], corpus, target)
    assert part.projected == 500 * 1000 + 500 * 500
    # ... and the same numbers measured on a corpus with that mix already project alike.
    mixed = Scale(citations=100, with_abstract=50, sentences=0)
    [same] = project([Part("store", 75_000, "article", without_abstract=0.5)], mixed, target)
    assert same.projected == part.projected


def test_weighted_articles_counts_abstractless_citations_at_their_weight() -> None:
    assert weighted_articles(Scale(10, 4, 0), 0.25) == 4 + 6 * 0.25
    assert weighted_articles(Scale(10, 10, 0), 0.25) == 10


def test_fixed_parts_do_not_scale_and_empty_parts_stay_empty() -> None:
    corpus = Scale(citations=10, with_abstract=10, sentences=0)
    models, sentences = project(
        [Part("other", 5_000, "fixed"), Part("sentence vectors", 0, "sentence")], corpus
    )
    assert models.projected == 5_000
    assert sentences.projected == 0
    assert total([models, sentences]) == (5_000, 5_000)


def test_a_part_with_nothing_to_scale_from_makes_the_total_unknown() -> None:
    empty = Scale(citations=0, with_abstract=0, sentences=0)
    [store] = project([Part("store", 4096, "article")], empty)
    assert store.projected is None and store.per_article is None
    assert total([store]) == (4096, None)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "-"),
        (0, "0 B"),
        (999, "999 B"),
        (1380, "1.4 KB"),
        (57e9, "57.0 GB"),
        (610e9, "610 GB"),
    ],
)
def test_sizes_read_as_disks_are_sold(n: float | None, text: str) -> None:
    assert human(n) == text


def test_stats_shows_each_part_and_the_pubmed_projection(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    records = [
        article_xml(i, f"Article {i}", f"Abstract text number {i}. " * 20) for i in range(1, 40)
    ]
    records += [article_xml(i, f"Title only {i}", "") for i in range(40, 60)]
    pubmed_file(inputs / "pubmed26n0001.xml", records)
    home = tmp_path / "home"
    runner = CliRunner()
    result = runner.invoke(main, ["--home", str(home), "ingest", str(inputs), "--no-encode"])
    assert result.exit_code == 0, result.output

    result = runner.invoke(main, ["--home", str(home), "stats", "--json"])
    assert result.exit_code == 0, result.output
    footprint = json.loads(result.stdout)["footprint"]
    parts = {p["part"]: p for p in footprint["parts"]}
    assert set(parts) >= {"store", "lexical index", "article vectors", "sentence vectors", "other"}
    store = parts["store"]
    assert store["bytes"] > 0
    assert store["bytes_per_article"] == pytest.approx(store["bytes"] / 59, abs=0.1)
    assert store["projected_bytes"] > store["bytes"] * 100_000
    assert 0.4 < footprint["with_abstract_share"] < 0.9
    assert 0 < footprint["without_abstract_size_ratio"] < 1
    assert parts["sentence vectors"]["projected_bytes"] == 0  # none built: none projected
    assert footprint["projected_total_bytes"] == sum(p["projected_bytes"] for p in parts.values())

    # 59 articles: the store has no compression dictionary yet, and stats says so
    assert footprint["representative"] is False
    result = runner.invoke(main, ["--home", str(home), "stats"])
    assert result.exit_code == 0, result.output
    assert "all of PubMed" in result.stdout and "lexical index" in result.stdout
    assert "projection is high" in " ".join(result.stdout.split())


def test_stats_on_an_empty_home_says_what_it_can() -> None:
    result = CliRunner().invoke(main, ["stats", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["footprint"]["bytes_per_article"] is None
