"""Snowball counts on a hand-built graph:

seeds 1 and 2;  1 -> 10, 11, 12;  2 -> 1, 11, 13;  20 -> 1, 10;  21 -> 2;
10 -> 30;  11 -> 30, 31
"""

from __future__ import annotations

from pathlib import Path

import pytest

from medsearch.index.citations import CitationGraph, build
from medsearch.records import AbstractSection, Article, Reference
from medsearch.retrieval.snowball import read_exclusions, snowball
from medsearch.store.db import Store

EDGES = {1: [10, 11, 12], 2: [1, 11, 13], 20: [1, 10], 21: [2], 10: [30], 11: [30, 31]}
TITLES = {
    1: "Statin myopathy in older adults",
    2: "Statin associated muscle symptoms and myopathy",
    13: "Risk of myopathy with high dose statin therapy",
    10: "Sediment transport in alpine rivers",
}


def _article(pmid: int) -> Article:
    title = TITLES.get(pmid, f"Unrelated record {pmid} about geology")
    return Article(
        pmid=pmid,
        title=title,
        abstract=(AbstractSection(title.lower()),),
        references=tuple(Reference(c) for c in EDGES.get(pmid, [])),
        article_ids=(("doi", f"10.1/x.{pmid}"),),
    )


@pytest.fixture()
def graph(tmp_path: Path) -> tuple[Store, CitationGraph]:
    store = Store(tmp_path / "store.sqlite")
    with store.transaction():
        store.upsert([_article(p) for p in (1, 2, 10, 11, 12, 13, 20, 21, 30, 31)])
    build(tmp_path / "citations", store.conn)
    yield store, CitationGraph.open(tmp_path / "citations", store.conn)
    store.close()


@pytest.mark.parametrize(
    ("backward", "forward", "depth", "expected"),
    [
        (True, False, 1, (6, 2, 4)),  # 11 twice, 1 is a seed
        (False, True, 1, (3, 1, 2)),  # 2 cites seed 1
        (True, True, 1, (9, 3, 6)),
        (True, False, 2, (9, 3, 6)),  # depth 2 adds 30 (twice) and 31
    ],
)
def test_prisma_counts(
    graph: tuple[Store, CitationGraph],
    backward: bool,
    forward: bool,
    depth: int,
    expected: tuple[int, int, int],
) -> None:
    store, g = graph
    done = snowball(store, g, [1, 2], backward=backward, forward=forward, depth=depth)
    c = done.counts
    assert (c.found, c.duplicates, c.new) == expected
    assert c.found == c.duplicates + c.excluded + c.new
    assert len(done.result.hits) == c.new


def test_excluded_candidates_are_counted_and_left_out(graph: tuple[Store, CitationGraph]) -> None:
    store, g = graph
    done = snowball(store, g, [1, 2], exclude={12, 99})
    assert (done.counts.excluded, done.counts.new) == (1, 5)
    assert 12 not in [h.pmid for h in done.result.hits]


def test_candidates_rank_by_closeness_to_the_seeds_text(graph: tuple[Store, CitationGraph]) -> None:
    store, g = graph
    hits = snowball(store, g, [1, 2]).result.hits
    assert hits[0].pmid == 13
    assert hits[0].seed_links == 1


def test_exclusions_read_pmid_lists_and_reference_manager_files(
    graph: tuple[Store, CitationGraph], tmp_path: Path
) -> None:
    store, _ = graph
    listed = tmp_path / "screened.txt"
    listed.write_text("12\n13, 99\n")
    assert read_exclusions(listed, store) == {12, 13, 99}
    bib = tmp_path / "screened.bib"
    bib.write_text(
        "@article{a,\n  title = {x},\n  pmid = {12}\n}\n@article{b,\n  doi = {10.1/X.13}\n}\n"
    )
    assert read_exclusions(bib, store) == {12, 13}
    ris = tmp_path / "screened.ris"
    ris.write_text("TY  - JOUR\nAN  - 10\nER  - \nTY  - JOUR\nDO  - 10.1/x.11\nER  - \n")
    assert read_exclusions(ris, store) == {10, 11}


def test_related_by_citations_weighs_co_citation_and_coupling(
    graph: tuple[Store, CitationGraph],
) -> None:
    from medsearch.retrieval.citations import related

    store, g = graph
    hits = related(store, g, 1, k=10).hits
    # coupled: 20 and 2 share a reference with 1 (10, 11; each cited twice); co-cited: 10,
    # 11 and 13 are cited beside 1 (by 20, a list of 2, and by 2, a list of 3)
    assert [h.pmid for h in hits] == [2, 10, 20, 11, 13]
    assert hits[0].score == pytest.approx(hits[2].score)
    assert hits[2].score > hits[3].score
