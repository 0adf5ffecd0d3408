"""The citation graph stays exact through updates, deletions and collection imports,
before a build, between builds (the overlay) and after one; checked against the edges
recomputed from the records themselves."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from medsearch.index.citations import CitationGraph, build, refresh
from medsearch.records import Article, Reference
from medsearch.store.db import Store


def _article(pmid: int, cited: list[int]) -> Article:
    return Article(
        pmid=pmid, title=f"article {pmid}", references=tuple(Reference(c) for c in cited)
    )


def _random_articles(rng: random.Random, pmids: range) -> dict[int, Article]:
    return {p: _article(p, rng.sample(range(1, 400), rng.randint(0, 12))) for p in pmids}


def _cited_by(articles: dict[int, Article], extra: set[tuple[int, int]]) -> dict[int, set[int]]:
    out: dict[int, set[int]] = {}
    for a in articles.values():
        for c in a.cited_pmids:
            out.setdefault(c, set()).add(a.pmid)
    for citing, cited in extra:
        out.setdefault(cited, set()).add(citing)
    return out


def _agrees(
    graph: CitationGraph, articles: dict[int, Article], extra: set[tuple[int, int]]
) -> None:
    truth = _cited_by(articles, extra)
    probes = list(range(0, 420))
    assert graph.counts(probes).tolist() == [len(truth.get(p, ())) for p in probes]
    for p in probes:
        assert graph.cited_by(p).tolist() == sorted(truth.get(p, ())), p
    for a in articles.values():
        edges, _, _ = graph.references(a.pmid)
        expected = set(a.cited_pmids) | {d for c, d in extra if c == a.pmid}
        assert edges.tolist() == sorted(expected)


def test_updates_and_deletions_keep_both_directions_exact(tmp_path: Path) -> None:
    rng = random.Random(7)
    folder = tmp_path / "citations"
    articles = _random_articles(rng, range(1, 301))
    with Store(tmp_path / "store.sqlite") as store:
        with store.transaction():
            store.upsert(list(articles.values()))
        _agrees(CitationGraph.open(folder, store.conn), articles, set())  # no arrays yet
        info = build(folder, store.conn)
        assert info.edges == sum(len(a.cited_pmids) for a in articles.values())
        _agrees(CitationGraph.open(folder, store.conn), articles, set())

        for round_ in range(3):  # updates, new records and deletions between builds
            changed = _random_articles(rng, range(250 + round_ * 20, 320 + round_ * 20))
            gone = rng.sample(sorted(articles), 10)
            with store.transaction():
                store.upsert(list(changed.values()))
                store.delete(gone)
            articles.update(changed)
            for p in gone:
                articles.pop(p, None)
            graph = CitationGraph.open(folder, store.conn)
            assert len(graph.overlay.changed) > 0
            _agrees(graph, articles, set())
        refresh(folder, store.conn)  # the overlay grew past its share: a rebuild
        graph = CitationGraph.open(folder, store.conn)
        assert len(graph.overlay.changed) == 0
        _agrees(graph, articles, set())


def test_a_rolled_back_file_leaves_the_graph_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "citations"
    with Store(tmp_path / "store.sqlite") as store:
        with store.transaction():
            store.upsert([_article(1, [5, 6]), _article(2, [5])])
        build(folder, store.conn)
        try:
            with store.transaction():
                store.upsert([_article(1, [7])])
                store.delete([2])
                raise RuntimeError("the file failed half-way")
        except RuntimeError:
            pass
        graph = CitationGraph.open(folder, store.conn)
        assert graph.cited_by(5).tolist() == [1, 2]
        assert graph.counts([5, 6, 7]).tolist() == [2, 1, 0]
        assert len(graph.overlay.changed) == 0


def test_a_build_the_store_does_not_name_is_ignored(tmp_path: Path) -> None:
    """A build killed after writing its arrays but before the store recorded it."""
    folder = tmp_path / "citations"
    with Store(tmp_path / "store.sqlite") as store:
        with store.transaction():
            store.upsert([_article(1, [5])])
        build(folder, store.conn)
        with store.transaction():
            store.upsert([_article(2, [5])])
        graph_json = folder / "graph.json"
        graph_json.write_text(graph_json.read_text().replace('"generation": 1', '"generation": 9'))
        graph = CitationGraph.open(folder, store.conn)
        assert graph.base_edges is None
        assert graph.cited_by(5).tolist() == [1, 2]
        refresh(folder, store.conn)
        assert CitationGraph.open(folder, store.conn).base_edges == 2


def test_collection_edges_keep_their_source_through_record_updates(tmp_path: Path) -> None:
    folder = tmp_path / "citations"
    with Store(tmp_path / "store.sqlite") as store:
        with store.transaction():
            store.upsert([_article(1, [5, 6])])
        build(folder, store.conn)
        with store.transaction():
            citing = np.array([1, 1, 3], dtype=np.uint32)
            cited = np.array([6, 8, 5], dtype=np.uint32)
            assert store.add_collection_edges(citing, cited) == 2  # 1->8 and 3->5 are new
        with store.transaction():
            assert store.add_collection_edges(citing, cited) == 0  # a second import adds nothing
        graph = CitationGraph.open(folder, store.conn)
        edges, in_list, in_occ = graph.references(1)
        assert edges.tolist() == [5, 6, 8]
        assert in_list.tolist() == [True, True, False]
        assert in_occ.tolist() == [False, True, True]
        assert graph.cited_by(5).tolist() == [1, 3]
        with store.transaction():  # the record's new version cites 9 only
            store.upsert([_article(1, [9])])
        graph = CitationGraph.open(folder, store.conn)
        edges, in_list, in_occ = graph.references(1)
        assert edges.tolist() == [6, 8, 9]  # the collection's edges stay
        assert in_list.tolist() == [False, False, True]
        assert in_occ.tolist() == [True, True, False]
        assert graph.counts([5, 6, 8, 9]).tolist() == [1, 1, 1, 1]


def test_a_graph_too_large_for_memory_is_built_in_two_passes_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import medsearch.index.citations_build as citations_build

    rng = random.Random(11)
    articles = _random_articles(rng, range(1, 301))
    with Store(tmp_path / "store.sqlite") as store:
        with store.transaction():
            store.upsert(list(articles.values()))
        monkeypatch.setattr(citations_build, "IN_MEMORY_EDGES", 50)
        monkeypatch.setattr(citations_build, "ROWS_PER_CHUNK", 7)  # many chunks, PMIDs rising
        build(tmp_path / "citations", store.conn)
        graph = CitationGraph.open(tmp_path / "citations", store.conn)
        assert graph.base_edges == sum(len(a.cited_pmids) for a in articles.values())
        _agrees(graph, articles, set())
