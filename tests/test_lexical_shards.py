"""A large lexical index is split into shards by PMID and searched on every core.

Corpora here are tiny, so the split threshold is lowered; everything else is the real
path: real PubMed XML through ``medsearch ingest``, real tantivy shards, the same
``Searcher`` the CLI and TUI use.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.errors import QuerySyntaxError
from medsearch.index.lexical import shards as lsh
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths
from medsearch.query import parse_query
from medsearch.records import AbstractSection, Article, Filters, PubDate
from medsearch.retrieval.searcher import open_searcher

TOPICS = ("aspirin stroke", "statin myopathy", "metformin ageing", "sepsis lactate")


def article(pmid: int) -> Article:
    topic = TOPICS[pmid % len(TOPICS)]
    return Article(
        pmid=pmid,
        title=f"{topic.title()} study {pmid}",
        abstract=(AbstractSection(f"We studied {topic} in cohort {pmid % 7}."),),
        pub_date=PubDate(2000 + pmid % 20),
    )


@pytest.fixture
def pair(tmp_path: Path) -> tuple[LexicalIndex, LexicalIndex]:
    """The same 120 articles as one index and as three shards."""
    whole = LexicalIndex.open(tmp_path / "whole")
    sharded = lsh.ShardedLexicalIndex.create(tmp_path / "sharded", 3)
    docs = [article(p) for p in range(1, 121)]
    for index in (whole, sharded):
        index.upsert(docs)
        index.commit("pubmed26n0001.xml")
    yield whole, sharded
    whole.close()
    sharded.close()


def test_shards_find_every_match_the_whole_index_finds(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    whole, sharded = pair
    for query in ("aspirin", "statin myopathy", "sepsis OR metformin", "cohort 3"):
        one, many = whole.search(query, k=200), sharded.search(query, k=200)
        assert many.total == one.total > 0
        assert {h.pmid for h in many.hits} == {h.pmid for h in one.hits}
        keys = [(-h.score, h.pmid) for h in many.hits]
        assert keys == sorted(keys)  # merged best first, ties by PMID
        assert many.terms == one.terms
        for k in (1, 5, 17):  # each shard's top k hold the merged top k
            assert sharded.search(query, k=k).hits == many.hits[:k]
    sharded.texts = lambda pmids: {p: (article(p).title, article(p).abstract_text) for p in pmids}
    top = sharded.search("aspirin stroke", k=5, snippets=2)
    assert [bool(h.snippet) for h in top.hits] == [True, True, False, False, False]
    assert "<b>aspirin</b>" in top.hits[0].snippet.lower()
    assert sharded.count() == whole.count() == 120
    assert sharded.last_commit_payload() == "pubmed26n0001.xml"


def test_shards_check_a_set_querys_members_as_the_whole_index(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    """The membership check a dense search inside a large set makes on its candidates."""
    whole, sharded = pair
    for text in ('aspirin NOT "cohort 3"', "statin[ti]", '"sepsis lactate" AND 2005:2010[dp]'):
        query = parse_query(text)
        want = {h.pmid for h in whole.search(query, k=200).hits}
        assert want and len(want) < 120
        candidates = list(range(1, 121, 2))
        assert sharded.members(candidates, query) == whole.members(candidates, query)
        assert whole.members(candidates, query) == want & set(candidates)
        assert sharded.members([], query) == set()


def test_shards_list_a_set_query_unscored_in_pmid_order_as_the_whole_index(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    """The listing a search history line keeps of its set."""
    whole, sharded = pair
    for text in ('aspirin NOT "cohort 3"', "statin[ti] AND 2005:2012[dp]", "2019[dp]"):
        query = parse_query(text)
        want = sorted(h.pmid for h in whole.search(query, k=200).hits)
        assert want
        assert sorted(whole.set_pmids(query, len(want)).tolist()) == want
        assert sorted(sharded.set_pmids(query, len(want)).tolist()) == want
        assert sorted(sharded.set_pmids(query, len(want), Filters(year_from=2010)).tolist()) == [
            p for p in want if 2000 + p % 20 >= 2010
        ]


def test_shards_list_and_check_filtered_articles_as_the_whole_index(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    """What dense search restricted to a filter asks of the lexical side."""
    whole, sharded = pair
    for filters in (Filters(year_from=2005, year_to=2009), Filters(year_from=2018), Filters()):
        expected = {p for p in range(1, 121) if filters.accepts(article(p))}
        for index in (whole, sharded):
            listed, total = index.matching_pmids(filters, 120)
            assert listed is not None and sorted(listed.tolist()) == sorted(expected)
            assert total == len(expected)
            assert index.matching_pmids(filters, len(expected) - 1) == (None, len(expected))
            assert index.accepted([1, 6, 7, 55, 500], filters) == expected & {1, 6, 7, 55, 500}
    whole.delete([6])  # a deleted article is no longer listed, counted or accepted
    whole.commit("pubmed26n0002.xml")
    year = Filters(year_from=2006, year_to=2006)
    listed, total = whole.matching_pmids(year, 120)
    assert listed is not None and 6 not in listed.tolist() and total == len(listed)
    assert 6 not in whole.accepted([6], year)


def test_filter_only_listings_stay_newest_pmid_first(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    whole, sharded = pair
    one, many = whole.search("2005[dp]", k=50), sharded.search("2005[dp]", k=50)
    assert [h.pmid for h in many.hits] == [h.pmid for h in one.hits]
    assert [h.pmid for h in many.hits] == sorted((h.pmid for h in many.hits), reverse=True)


def test_updates_and_deletions_reach_the_shard_holding_the_pmid(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    _, sharded = pair
    revised = Article(pmid=7, title="Tranexamic acid bleeding", pub_date=PubDate(2024))
    sharded.upsert([revised])
    sharded.delete([8, 9])
    sharded.commit()
    assert [h.pmid for h in sharded.search("tranexamic").hits] == [7]
    assert 7 not in {h.pmid for h in sharded.search("statin", k=200).hits}
    assert sharded.count() == 118
    assert sharded.last_commit_payload() == "pubmed26n0001.xml"  # None keeps the payload


def test_a_malformed_query_is_one_clear_error(pair: tuple[LexicalIndex, LexicalIndex]) -> None:
    _, sharded = pair
    with pytest.raises(QuerySyntaxError):
        sharded.search("2020:2010[dp]")


def test_ingest_splits_the_index_once_the_corpus_passes_the_threshold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lsh, "SHARD_DOCS", 50)
    monkeypatch.setattr(lsh, "shard_count", lambda cores: 2)
    files = tmp_path / "in"
    files.mkdir()
    for n in range(3):
        pubmed_file(
            files / f"pubmed26n000{n + 1}.xml",
            [article_xml(100 * n + i, f"Aspirin trial {n} {i}", "Stroke.") for i in range(1, 31)],
        )
    home = tmp_path / "home"

    def ingest(*paths: Path) -> None:
        result = CliRunner().invoke(
            main, ["--home", str(home), "ingest", *map(str, paths), "--no-encode", "--json"]
        )
        assert result.exit_code == 0, result.stderr

    ingest(files / "pubmed26n0001.xml")
    lexical = Paths(home).lexical_index
    assert not lsh.is_sharded(lexical)  # 30 articles: one index
    ingest(files)  # the second file crosses 50: split; the third goes into the shards
    assert json.loads((lexical / lsh.SHARDS_FILE).read_text()) == {"shards": 2}
    assert not lexical.with_name("lexical.splitting").exists()
    pubmed_file(files / "pubmed26n0004.xml", [], deletions=[101, 202])
    ingest(files / "pubmed26n0004.xml")
    with open_searcher(Paths(home)) as searcher:
        result = searcher.search("aspirin", k=100, mode="lexical")
        assert result.total == 88
        assert {101, 202}.isdisjoint(h.pmid for h in result.hits)
        assert result.hits[0].snippet  # snippets come from the store for the merged head


def test_a_split_adds_without_staging_a_delete_per_article(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tantivy keeps each staged delete in memory until the commit, ~1.3 KB: a split of
    # 40.9M articles commits once, so upserting would hold ~50 GB
    def staged_deletes(*_: object) -> None:
        raise AssertionError("the split's shards are new: nothing to replace")

    path = tmp_path / "lexical"
    LexicalIndex.open(path).close()
    monkeypatch.setattr(LexicalIndex, "upsert_documents", staged_deletes)
    monkeypatch.setattr(LexicalIndex, "delete", staged_deletes)
    batches = [[article(p) for p in range(start, start + 40)] for start in (1, 41, 81)]
    lsh.split_from(path, batches, 3, "pubmed26n0001.xml")
    index = lsh.open_lexical(path, create=False)
    assert index.count() == 120
    assert index.last_commit_payload() == "pubmed26n0001.xml"
    assert index.search("aspirin", k=200).total == 30


def test_a_split_interrupted_by_a_crash_leaves_the_whole_index(tmp_path: Path) -> None:
    path = tmp_path / "lexical"
    whole = LexicalIndex.open(path)
    whole.upsert([article(p) for p in range(1, 11)])
    whole.commit("f1")
    whole.close()
    half = lsh.ShardedLexicalIndex.create(lsh.staging(path), 2)  # the crash came mid-build
    half.close()
    index = lsh.open_lexical(path, writer=True)
    assert not isinstance(index, lsh.ShardedLexicalIndex) and index.count() == 10
    index.close()
    assert not lsh.staging(path).exists()
    path.rename(path.with_name("lexical.whole"))  # ... or between the two renames
    index = lsh.open_lexical(path, writer=True)
    assert index.count() == 10
    index.close()


def test_a_full_disk_during_the_split_keeps_the_whole_index_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from ingest.pipeline import Ingestor
    from medsearch.errors import DiskFullError

    monkeypatch.setattr(lsh, "SHARD_DOCS", 10)
    monkeypatch.setattr(lsh, "shard_count", lambda cores: 2)
    source = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [article_xml(i, f"Aspirin {i}", "Stroke.") for i in range(1, 21)],
    )
    real = lsh.ShardedLexicalIndex.add

    def full(self: lsh.ShardedLexicalIndex, articles: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    paths = Paths(tmp_path / "home")
    monkeypatch.setattr(lsh.ShardedLexicalIndex, "add", full)
    with pytest.raises(DiskFullError, match="whole index is kept"), Ingestor(paths, jobs=0) as ing:
        ing.run([source])
    monkeypatch.setattr(lsh.ShardedLexicalIndex, "add", real)
    whole = lsh.open_lexical(paths.lexical_index, writer=True)
    assert not isinstance(whole, lsh.ShardedLexicalIndex) and whole.count() == 20
    whole.close()
    assert not lsh.staging(paths.lexical_index).exists()
    with Ingestor(paths, jobs=0) as ing:  # the next ingest, with room again, splits first
        assert isinstance(ing.lexical, lsh.ShardedLexicalIndex) and ing.lexical.count() == 20


def test_shards_count_clauses_unscored_as_the_whole_index_ranks_them(
    pair: tuple[LexicalIndex, LexicalIndex],
) -> None:
    """``--explain``'s clause counts (``counts``): the totals a ranked search counts."""
    whole, sharded = pair
    texts = ("aspirin", "statin[ti] OR sepsis", "aspirin NOT cohort", "2005:2010[dp]", "zzz")
    queries = [parse_query(text) for text in texts]
    want = [whole.rank(q, k=1).total for q in queries]
    assert want[0] > 0 and want[-1] == 0
    assert whole.counts(queries) == sharded.counts(queries) == want
    year = Filters(year_from=2005, year_to=2005)
    assert sharded.counts(queries, year) == [
        whole.rank(q, k=1, filters=year).total for q in queries
    ]


def test_clause_counts_share_a_truncation_and_find_its_variations_in_every_shard(
    tmp_path: Path,
) -> None:
    """``counts`` builds each clause once for all the queries that hold it and reads a
    truncated word as the variations in each shard's own dictionary: a variation only
    one shard holds (``aspirinoid``, PMID 121) counts as the whole index counts it."""
    whole = LexicalIndex.open(tmp_path / "whole")
    sharded = lsh.ShardedLexicalIndex.create(tmp_path / "sharded", 3)
    extra = Article(pmid=121, title="Aspirinoid salts", pub_date=PubDate(2001))
    docs = [article(p) for p in range(1, 121)] + [extra]
    for index in (whole, sharded):
        index.upsert(docs)
        index.commit("pubmed26n0001.xml")
    texts = (
        "aspirino*[tiab]",
        "aspiri*[tiab]",
        "aspiri*[tiab] OR statin[ti]",
        "(aspiri*[tiab] OR statin[ti]) AND cohort NOT aspirino*[tiab]",
        "salt*[ti]",
    )
    queries = [parse_query(text) for text in texts]
    want = [whole.rank(q, k=1).total for q in queries]
    assert want[0] == want[4] == 1 and want[1] > 1
    assert whole.counts(queries) == sharded.counts(queries) == want
    whole.close()
    sharded.close()
