"""Citation neighbourhoods (co-citation and coupling, Adamic-Adar weights), a held-out
edge read as absent, and their reciprocal rank fusion into ``similar`` and ``cite``.

The hand-built graph: 1 -> 10, 11;  2 -> 10, 11, 12;  3 -> 11, 12;  4 -> 10.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from medsearch.index.citations import CitationGraph, build
from medsearch.records import Article, Hit, Reference
from medsearch.retrieval.citances import Citance
from medsearch.retrieval.citation_signals import (
    cite_fused,
    fuse,
    neighbourhood,
    neighbourhood_of_set,
)
from medsearch.retrieval.cite import CitanceResult, CiteResult
from medsearch.retrieval.results import SearchResult
from medsearch.store.db import Store

EDGES = {1: [10, 11], 2: [10, 11, 12], 3: [11, 12], 4: [10]}


@pytest.fixture()
def graph(tmp_path: Path) -> Iterator[CitationGraph]:
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert(
                [
                    Article(pmid=p, title=f"a {p}", references=tuple(map(Reference, refs)))
                    for p, refs in EDGES.items()
                ]
            )
        build(tmp_path / "citations", store.conn)
        yield CitationGraph.open(tmp_path / "citations", store.conn)


def aa(degree: int) -> float:
    return 1.0 / math.log(2.0 + degree)


def test_co_citation_and_coupling_weigh_each_shared_neighbour_by_its_degree(
    graph: CitationGraph,
) -> None:
    # 10 is co-cited with 11 by 1 (2 refs) and 2 (3 refs), with 12 by 2; 10 cites nothing
    assert neighbourhood(graph, 10) == pytest.approx({11: aa(2) + aa(3), 12: aa(3)})
    # 1 shares 10 (cited 3 times) with 2 and 4, 11 (cited 3 times) with 2 and 3
    assert neighbourhood(graph, 1) == pytest.approx({2: 2 * aa(3), 3: aa(3), 4: aa(3)})


def test_a_held_out_edge_is_read_as_absent(graph: CitationGraph) -> None:
    """Leave-one-out: 2's edge to 12 hidden, 12 is co-cited with 11 only through 3."""
    hidden = neighbourhood(graph, 11, hidden={2: 12})
    assert hidden[12] == pytest.approx(aa(2))
    assert neighbourhood(graph, 11)[12] == pytest.approx(aa(3) + aa(2))
    # a manuscript citing 10 and 11 so far: 12 is their neighbour, the set left out
    assert set(neighbourhood_of_set(graph, [10, 11])) == {12}


def test_fusion_is_reciprocal_rank_fusion_of_the_two_orders() -> None:
    signal = {20: 2.0, 30: 1.0, 99: 5.0}
    within = fuse([10, 20, 30], signal, within=True, rrf_k=60)
    # 99 is not a text candidate: inside the pool the graph's order is 20, 30
    assert within == pytest.approx([(20, 1 / 62 + 1 / 61), (30, 1 / 63 + 1 / 62), (10, 1 / 61)])
    joined = fuse([10, 20, 30], signal, within=False, rrf_k=60)
    assert {p for p, _ in joined} == {10, 20, 30, 99}
    assert dict(joined)[99] == pytest.approx(1 / 61)


def test_cite_candidates_are_reordered_by_the_manuscripts_references(
    graph: CitationGraph,
) -> None:
    hits = tuple(Hit(rank=i, pmid=p, score=1.0) for i, p in enumerate([4, 12, 3], 1))
    result = CiteResult(
        citances=(
            CitanceResult(
                citance=Citance(text="claim", original="claim [1]", markers=("1",)),
                result=SearchResult(hits=hits, mode="hybrid", total=3),
            ),
        )
    )
    fused = cite_fused(result, graph, [10, 11], k=2)
    # 12 is the only neighbour of {10, 11}: it rises to the top; the cut keeps k
    assert [h.pmid for h in fused.citances[0].result.hits] == [12, 4]
    assert [h.rank for h in fused.citances[0].result.hits] == [1, 2]


def test_the_commands_take_the_signals_only_when_asked(tmp_path: Path) -> None:
    """``cite --cited`` and ``similar --by text+citations`` on an ingested home; without
    the option the answers are the text's alone."""
    import json

    from click.testing import CliRunner

    from benchmarks.synth import article_xml, pubmed_file
    from medsearch.cli import main

    def xml(pmid: int, cites: list[int]) -> str:
        refs = "".join(
            f'<Reference><Citation>r</Citation><ArticleIdList><ArticleId IdType="pubmed">{c}'
            "</ArticleId></ArticleIdList></Reference>"
            for c in cites
        )
        body = article_xml(pmid, f"Heart failure trial {pmid}", "Heart failure outcomes.")
        return body.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")

    source = pubmed_file(tmp_path / "pubmed26n0001.xml", [xml(p, c) for p, c in EDGES.items()])
    home = str(tmp_path / "home")
    runner = CliRunner()
    runner.invoke(main, ["--home", home, "ingest", str(source), "--no-encode", "--jobs", "0"])

    def cite(*extra: str) -> list[int]:
        args = ["--home", home, "cite", "--json", "-k", "3", "--no-rerank", *extra]
        out = runner.invoke(main, args, input="Heart failure outcomes [1].\n")
        assert out.exit_code == 0, out.output
        return [h["pmid"] for h in json.loads(out.output)["citances"][0]["hits"]]

    # the records' text is alike: BM25 puts the shortest ids' ties in index order
    assert cite() == [1, 2, 3]
    # a manuscript citing 1 already: 2 shares both its references, 3 and 4 one each
    # (coupling); 1, a text candidate the graph gives nothing, falls behind them
    assert cite("--cited", "1") == [2, 3, 4]
    out = runner.invoke(main, ["--home", home, "similar", "1", "--by", "text+citations"])
    assert out.exit_code != 0 and "vectors" in out.output
