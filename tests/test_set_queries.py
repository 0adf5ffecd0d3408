"""A set query keeps PubMed's set in every mode; plain words keep ranked retrieval.

A query with an operator, a field tag, a quoted phrase or a truncation asks for a set
(https://pubmed.ncbi.nlm.nih.gov/help/): in hybrid and dense modes every hit is in it,
nothing outside it appears, and ``total`` is its size. The expected sets here are
computed from the generated records themselves, not by our parser. Plain words rank the
whole corpus; their ``total`` is how many articles hold every word, and ranked hits
outside that set say so.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import TinyModels, build_tiny_models, ingest_and_encode, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.index.vectors.collection import VectorCollection
from medsearch.paths import Paths
from medsearch.retrieval import sets
from medsearch.retrieval.searcher import Searcher, open_searcher


@dataclass(frozen=True)
class Record:
    """What a generated article holds, to compute each query's set independently."""

    pmid: int
    title: str
    abstract: str
    first_author: str
    authors: tuple[str, ...]
    review: bool

    @property
    def words(self) -> set[str]:
        text = f"{self.title} {self.abstract}".lower()
        return set(text.replace(".", " ").replace(",", " ").split())


def make_records() -> list[Record]:
    out = []
    for i in range(48):
        title = ["cataract" if i % 3 == 0 else "retina", "outcomes", "in", "patients"]
        if i % 6 == 3:
            title.insert(0, "brca1")
        abstract = "risk of surgery was low" if i % 2 == 0 else "treatment response was high"
        abstract += f" in cohort {i}"  # no two vectors alike: dense orders have no ties
        if i % 5 == 0:
            abstract += ". heart failure followed"
        elif i % 5 == 1:
            abstract += ". failure of the heart was rare"
        first = "Zetterström" if i % 7 == 0 else "Smith"
        authors = (first, "Zetterström") if i % 5 == 2 else (first, "Jones")
        out.append(
            Record(
                pmid=3000 + i,
                title=" ".join(title),
                abstract=abstract,
                first_author=first,
                authors=authors,
                review=i % 4 == 0,
            )
        )
    return out


RECORDS = make_records()

SET_QUERIES: list[tuple[str, Callable[[Record], bool]]] = [
    ("cataract NOT surgery", lambda r: "cataract" in r.words and "surgery" not in r.words),
    ("cataract[ti] AND review[pt]", lambda r: "cataract" in r.title and r.review),
    ("Zetterström C[1au]", lambda r: r.first_author == "Zetterström"),
    ('"heart failure"', lambda r: "heart failure" in r.abstract),
    ("catar*", lambda r: "cataract" in r.words),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    root = tmp_path_factory.mktemp("sets")
    tiny: TinyModels = build_tiny_models(root / "tiny")
    folder = root / "xml"
    folder.mkdir()
    articles = [
        article_xml(
            r.pmid,
            r.title,
            r.abstract,
            authors=tuple((name, "C") for name in r.authors),
            pub_types=("Journal Article", "Review") if r.review else ("Journal Article",),
        )
        for r in RECORDS
    ]
    pubmed_file(folder / "pubmed26n0001.xml", articles)
    paths = Paths(root / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [folder])
    return paths


@pytest.fixture(scope="module")
def searcher(home: Paths) -> Iterator[Searcher]:
    s = open_searcher(home, device="cpu", load=True)
    s.settings = replace(s.settings, rerank="none")
    yield s
    s.close()


def expected(predicate: Callable[[Record], bool]) -> set[int]:
    return {r.pmid for r in RECORDS if predicate(r)}


@pytest.mark.parametrize("mode", ["hybrid", "dense"])
@pytest.mark.parametrize(("query", "predicate"), SET_QUERIES, ids=[q for q, _ in SET_QUERIES])
def test_a_set_query_returns_its_set_and_counts_it_in_every_mode(
    searcher: Searcher, query: str, predicate: Callable[[Record], bool], mode: str
) -> None:
    want = expected(predicate)
    assert 0 < len(want) < len(RECORDS)  # a real restriction of the corpus
    lexical = searcher.search(query, mode="lexical", k=100)
    assert {h.pmid for h in lexical.hits} == want and lexical.total == len(want)
    head = searcher.search(query, mode=mode, k=3)
    assert head.total == len(want)
    assert {h.pmid for h in head.hits} <= want and len(head.hits) == min(3, len(want))
    whole = searcher.search(query, mode=mode, k=100)
    assert [h.pmid for h in whole.hits if h.pmid not in want] == []
    assert {h.pmid for h in whole.hits} == want and whole.total == len(want)
    assert all(h.all_words is None for h in whole.hits)


@pytest.mark.parametrize("mode", ["lexical", "hybrid", "dense"])
def test_an_empty_set_gives_no_hits_and_a_count_of_zero(searcher: Searcher, mode: str) -> None:
    assert expected(lambda r: "brca1" in r.title and r.review) == set()
    result = searcher.search("brca1[ti] AND review[pt]", mode=mode, k=10)
    assert result.hits == () and result.total == 0


def dense_order(home: Paths, searcher: Searcher, text: str, pmids: set[int]) -> list[int]:
    """The set's PMIDs by exact inner product with the query vector, read from disk."""
    assert searcher.dense is not None
    q = searcher.dense.encode_query(text)[0]
    ids = np.array(sorted(pmids), dtype=np.int64)
    with VectorCollection.open(home.vector_dir("articles")) as coll:
        scores = coll.get(ids) @ q
    return [int(ids[i]) for i in np.lexsort((ids, -scores))]


def test_dense_mode_orders_the_set_by_dense_score(home: Paths, searcher: Searcher) -> None:
    want = expected(lambda r: "cataract" in r.words and "surgery" not in r.words)
    result = searcher.search("cataract NOT surgery", mode="dense", k=100)
    assert [h.pmid for h in result.hits] == dense_order(home, searcher, "cataract", want)


@pytest.mark.parametrize("list_max", [0, 10_000], ids=["oversample", "listed"])
def test_a_set_past_the_lexical_candidates_is_searched_either_way_with_the_same_order(
    home: Paths, searcher: Searcher, monkeypatch: pytest.MonkeyPatch, list_max: int
) -> None:
    """The lexical side lists only 2 candidates, so the dense side must find the rest:
    by listing the set and restricting the vector search to it, or (threshold 0) by an
    oversampled search whose candidates the index checks against the set."""
    monkeypatch.setattr(sets, "SET_LIST_MAX", list_max)
    monkeypatch.setattr(searcher, "settings", replace(searcher.settings, lexical_candidates=2))
    asked: list[int] = []
    members = searcher.lexical.members

    def counted(pmids: list[int], *args: object) -> set[int]:
        asked.append(len(pmids))
        return members(pmids, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(searcher.lexical, "members", counted)
    want = expected(lambda r: "cataract" in r.words)
    assert sets.dense_method(len(want), 1_000) == ("oversample" if list_max == 0 else "listed")
    result = searcher.search("catar*", mode="dense", k=5)
    assert result.total == len(want)
    assert [h.pmid for h in result.hits] == dense_order(home, searcher, "catar", want)[:5]
    assert bool(asked) == (list_max == 0)  # only the oversample path checks membership
    hybrid = searcher.search("catar*", mode="hybrid", k=5)
    assert {h.pmid for h in hybrid.hits} <= want and hybrid.total == len(want)


def test_a_listed_set_is_every_member_once_with_filters_applied(searcher: Searcher) -> None:
    """What the dense side restricts itself to: the set's PMIDs read unscored from the
    index, the query's filters and the caller's both applied."""
    from medsearch.query.parser import parse_query

    want = expected(lambda r: "cataract" in r.words)
    listed = searcher.lexical.set_pmids(parse_query("catar*"), len(want))
    assert sorted(listed.tolist()) == sorted(want)
    none = searcher.lexical.set_pmids(parse_query("catar* AND 1800[dp]"), len(want))
    assert len(none) == 0


def test_plain_words_rank_the_corpus_and_count_the_articles_with_every_word(
    searcher: Searcher,
) -> None:
    both = expected(lambda r: {"cataract", "surgery"} <= r.words)
    either = expected(lambda r: bool({"cataract", "surgery"} & r.words))
    for mode in ("lexical", "hybrid", "dense"):
        result = searcher.search("cataract surgery", mode=mode, k=40)
        assert result.total == len(both), mode
        marks = {h.pmid: h.all_words for h in result.hits}
        assert {p for p, inside in marks.items() if inside} <= both
        assert {p for p, inside in marks.items() if not inside}.isdisjoint(both)
    ranked = searcher.search("cataract surgery", mode="lexical", k=40)
    assert {h.pmid for h in ranked.hits} == either  # ranked retrieval: any word ranks
    assert [h.all_words for h in ranked.hits[: len(both)]] == [True] * len(both)


def test_the_cli_shows_the_count_and_the_marker_in_text_and_json(home: Paths) -> None:
    def cli(*args: str) -> str:
        got = CliRunner().invoke(main, ["--home", str(home.home), "search", *args])
        assert got.exit_code == 0, got.output
        return got.stdout

    want = expected(lambda r: "cataract" in r.title and r.review)
    data = json.loads(cli("cataract[ti] AND review[pt]", "--json", "--device", "cpu"))
    assert data["total"] == len(want) and {h["pmid"] for h in data["hits"]} <= want
    assert data["counted"] == "set"  # a script can tell PubMed's count from the other
    both = expected(lambda r: {"cataract", "surgery"} <= r.words)
    plain = json.loads(cli("cataract surgery", "--json", "-k", "20", "--device", "cpu"))
    assert plain["total"] == len(both) and plain["counted"] == "all_words"
    assert {h["pmid"] for h in plain["hits"] if h["all_words"]} <= both
    text = cli("cataract surgery", "-k", "20", "--device", "cpu")
    assert f"{len(both):,} matching" in text and "not all words" in text
    assert cli("cataract[ti] AND review[pt]", "--count", "--device", "cpu").strip() == str(
        len(want)
    )
    dated = json.loads(cli("cataract[ti] AND review[pt]", "--sort", "date", "--json"))
    assert dated["total"] == len(want) and {h["pmid"] for h in dated["hits"]} <= want


def test_hybrid_exports_and_sorts_of_plain_words_cover_exactly_the_count(
    home: Paths, searcher: Searcher, tmp_path: Path
) -> None:
    """The dense side ranks in articles without the words; an export and a date sort
    must not take them (the search counted only the articles holding every word)."""
    both = expected(lambda r: {"cataract", "surgery"} <= r.words)
    ranked = searcher.search("cataract surgery", mode="hybrid", k=48)
    assert {h.pmid for h in ranked.hits} - both  # hits beyond the count exist in hybrid
    for mode in ("hybrid", "dense"):
        inside = searcher.search("cataract surgery", mode=mode, k=48, within_count=True)
        assert {h.pmid for h in inside.hits} == both and inside.total == len(both), mode
    out = tmp_path / "x.csv"
    args = ["search", "cataract surgery", "--export", "csv", "-o", str(out), "--device", "cpu"]
    got = CliRunner().invoke(main, ["--home", str(home.home), *args])
    assert got.exit_code == 0, got.output
    assert "articles counted (every word)" in got.stderr
    with out.open(encoding="utf-8") as handle:
        assert {int(row["pmid"]) for row in csv.DictReader(handle)} == both
    args = ["search", "cataract surgery", "--sort", "date", "--json", "--device", "cpu"]
    dated = json.loads(CliRunner().invoke(main, ["--home", str(home.home), *args]).stdout)
    assert dated["hits"] and {h["pmid"] for h in dated["hits"]} <= both


def test_one_call_searches_and_reranks_by_one_rule(searcher: Searcher) -> None:
    """``search_reranked`` (CLI, cite, eval) reranks exactly when ``wants_cross`` (the
    TUI's background rerank) says so: a planned cross-encoder, hits, not lexical alone."""
    query = "cataract NOT surgery"
    first = searcher.search(query, mode="hybrid", k=5, rerank="cross")
    assert searcher.wants_cross(first, "cross") and not searcher.wants_cross(first, "none")
    both = searcher.search_reranked(query, mode="hybrid", k=5, rerank="cross")
    assert both.rerankers == ("cross",) and both.total == first.total
    assert [h.pmid for h in both.hits] == [h.pmid for h in searcher.rerank(first).hits]
    assert {h.pmid for h in both.hits} <= expected(
        lambda r: "cataract" in r.words and "surgery" not in r.words
    )
    lexical = searcher.search_reranked(query, mode="lexical", k=5, rerank="cross")
    assert lexical.rerankers == () and not searcher.wants_cross(lexical, "cross")
    empty = searcher.search_reranked("brca1[ti] AND review[pt]", k=5, rerank="cross")
    assert empty.hits == () and empty.rerankers == ()


def test_the_dense_side_lists_small_sets_and_oversamples_large_shares() -> None:
    """Listing restricts the vectors to the set however rare it is; a set that is a large
    share of the corpus is met by a deepened whole-corpus search instead."""
    assert sets.dense_method(10, 40_900_000) == "listed"
    assert sets.dense_method(150_000, 10_000_000) == "listed"  # 1.5%
    assert sets.dense_method(200_000, 10_000_000) == "oversample"  # 2%
    assert sets.dense_method(300_000, 40_900_000) == "oversample"  # past the listing bound
    assert sets.dense_method(20_000, 1_000_000) == "oversample"
    assert sets.dense_method(500, 1_000) == "listed"  # a small corpus's share is a handful
