"""How plain words rank: one flat sum of field scores, and title-only records kept level.

Ranked words sum per-field BM25 (title 0.5, abstract 1.0, and the title again for records
without an abstract) as one flat union of term queries, which tantivy runs ~2x faster than
dis_max's union of unions at scale. A format-2 index (built before TITLE_ALONE) still
searches, with the dis_max it was built for, and is rebuilt by the next ingest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import tantivy

from medsearch.errors import StoreError
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.lexical.query import (
    LEGACY_RANKING,
    RANKED_FIELDS,
    UNTAGGED_EXTRAS,
    QueryBuilder,
    Ranking,
)
from medsearch.index.lexical.shards import ShardedLexicalIndex
from medsearch.query.parser import parse_plain
from medsearch.records import AbstractSection, Article, MeshHeading

FILLER = " ".join(["placebo"] * 30)


def article(pmid: int, title: str, abstract: str = "", **fields: object) -> Article:
    return Article(
        pmid=pmid,
        title=title,
        abstract=(AbstractSection(abstract),) if abstract else (),
        **fields,  # type: ignore[arg-type]
    )


CORPUS = [
    article(1, "Aspirin and stroke prevention", f"stroke outcomes. {FILLER}"),
    article(2, "Statins after stroke", f"aspirin was not given. {FILLER}"),
    article(3, "Aspirin dosing in the elderly"),  # no abstract
    article(4, "Warfarin", f"aspirin and stroke and bleeding. {FILLER}"),
    article(
        5,
        "Anticoagulation",
        FILLER,
        mesh=(MeshHeading(descriptor="Stroke", major=True),),
        keywords=("aspirin",),
    ),
    article(6, "Unrelated title", FILLER),
]


@pytest.fixture
def index(tmp_path: Path) -> LexicalIndex:
    idx = LexicalIndex.open(tmp_path / "lexical")
    idx.upsert(CORPUS)
    idx.commit()
    return idx


def nested_sum(schema: object, words: list[str]) -> object:
    """The same sum built the obvious way: each word a union of its field clauses."""
    per_word = []
    for word in words:
        clauses = []
        for name, boost in RANKED_FIELDS:
            query = tantivy.Query.term_query(schema, name, word)
            if boost != 1.0:
                query = tantivy.Query.boost_query(query, boost)
            clauses.append((tantivy.Occur.Should, query))
        per_word.append((tantivy.Occur.Should, tantivy.Query.boolean_query(clauses)))
    return tantivy.Query.boolean_query(per_word)


def test_the_flat_union_scores_exactly_the_sum_of_every_word_in_every_field(
    index: LexicalIndex,
) -> None:
    got = {h.pmid: h.score for h in index.search("aspirin stroke", k=10, snippets=0).hits}
    searcher = index._index.searcher()
    nested = searcher.search(nested_sum(index._schema, ["aspirin", "stroke"]), 10)
    ids = searcher.fast_field_values(ls.PMID, [a for _, a in nested.hits])
    expected = {int(p): s for (s, _), p in zip(nested.hits, ids, strict=True)}
    assert set(got) == set(expected) == {1, 2, 3, 4, 5}
    for pmid, score in expected.items():
        assert got[pmid] == pytest.approx(score, rel=1e-6)


def test_plain_words_are_one_union_of_term_queries_not_a_union_per_word() -> None:
    builder = QueryBuilder(ls.build_schema(), ls.analyzers(), Ranking())
    query = repr(builder.build(parse_plain("aspirin for stroke prevention").node))
    assert query.count("BooleanQuery") == 1  # the cost of a common-word query halves
    # "for" is a stop word; a word searches PubMed's All Fields (the ranked ones weighed)
    assert query.count("TermQuery") == 3 * (len(RANKED_FIELDS) + len(UNTAGGED_EXTRAS))
    legacy = QueryBuilder(ls.build_schema(), ls.analyzers(), LEGACY_RANKING)
    assert repr(legacy.build(parse_plain("aspirin stroke").node)).count("DisjunctionMax") == 2


def test_only_records_without_an_abstract_carry_the_title_twice() -> None:
    with_abstract = ls.article_fields(article(1, "Aspirin", "An abstract."))
    title_only = ls.article_fields(article(2, "Aspirin"))
    assert ls.TITLE_ALONE not in with_abstract
    assert title_only[ls.TITLE_ALONE] == title_only[ls.TITLE] == ["Aspirin"]


def test_a_title_only_record_is_not_outranked_by_a_title_match_with_an_unrelated_abstract(
    index: LexicalIndex,
) -> None:
    # both have "aspirin" in the title only; the abstract of 1 does not mention it
    scores = {h.pmid: h.score for h in index.search("aspirin", k=10, snippets=0).hits}
    assert scores[3] > scores[1]


def test_mesh_and_keywords_lift_an_article_without_the_words_in_its_text(
    index: LexicalIndex,
) -> None:
    ranked = [h.pmid for h in index.search("aspirin stroke", k=10, snippets=0).hits]
    assert 5 in ranked
    assert 6 not in ranked


def test_tagged_title_searches_every_title_once(index: LexicalIndex) -> None:
    hits = {h.pmid: h.score for h in index.search("aspirin[ti]", k=10, snippets=0).hits}
    assert set(hits) == {1, 3}


def test_phrases_and_mixed_groups_keep_their_meaning(index: LexicalIndex) -> None:
    assert {h.pmid for h in index.search('"stroke prevention"', k=10).hits} == {1}
    assert {h.pmid for h in index.search("aspirin AND bleeding", k=10).hits} == {4}
    assert {h.pmid for h in index.search("(warfarin OR statins) stroke", k=10).hits} >= {2, 4}


def make_format_2(path: Path, monkeypatch: pytest.MonkeyPatch, articles: list[Article]) -> None:
    """An index as medsearch wrote it before TITLE_ALONE existed."""
    with monkeypatch.context() as patch:
        patch.setattr(ls, "SCHEMA_VERSION", 2)
        patch.setattr(
            ls, "STEMMED_FIELDS", tuple(f for f in ls.STEMMED_FIELDS if f != ls.TITLE_ALONE)
        )
        old = LexicalIndex.open(path)
        old.upsert(articles)  # every one has an abstract: no TITLE_ALONE to write
        old.commit()
        old.close()


def test_a_format_2_index_is_refused_with_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It lacks the fields PubMed's tags need: never answered half right."""
    with_abstracts = [a for a in CORPUS if a.abstract]
    make_format_2(tmp_path / "old", monkeypatch, with_abstracts)
    for write in (False, True):
        with pytest.raises(StoreError, match=r"schema version 2.*rebuild"):
            LexicalIndex.open(tmp_path / "old", create=False, write=write)


def test_a_current_index_ranks_by_the_sum(index: LexicalIndex) -> None:
    assert index.version == ls.SCHEMA_VERSION == 6
    assert index.ranking == Ranking()
    assert Ranking().tie_breaker is None


def test_shards_of_different_formats_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "sharded"
    ShardedLexicalIndex.create(path, 2).close()
    (path / "shard-1" / "medsearch-lexical.json").write_text('{"schema": 2}')
    with pytest.raises(StoreError, match="schema version 2"):
        ShardedLexicalIndex.open_shards(path)
