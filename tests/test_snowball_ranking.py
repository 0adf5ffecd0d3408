"""``snowball`` ranks its candidates by the hybrid searcher restricted to them: BM25 of
the seeds' words among the candidates, fused (reciprocal rank fusion) with closeness to
the seeds' mean article vector when the home has vectors.

The hand-built graph: seeds 1 and 2 (cataract surgery) cite 10-13 and are cited by 14;
the candidates' titles go from the seeds' topic to unrelated ones.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.paths import Paths

SEEDS = {
    1: ("Cataract surgery and intraocular lens outcomes", [10, 11, 12]),
    2: ("Phacoemulsification cataract surgery complications", [11, 13]),
}
CANDIDATES = {
    10: "Intraocular lens power after cataract surgery",
    11: "Cataract surgery in diabetic patients",
    12: "Heart failure admissions in older adults",
    13: "Posterior capsule opacification after phacoemulsification",
    14: "Soil erosion in river basins",
}
CITING = {14: [1]}


def _xml(pmid: int, title: str, cites: list[int]) -> str:
    refs = "".join(
        f'<Reference><Citation>ref</Citation><ArticleIdList><ArticleId IdType="pubmed">{c}'
        "</ArticleId></ArticleIdList></Reference>"
        for c in cites
    )
    xml = article_xml(pmid, title, f"{title}. A study.", year=2020)
    return xml.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")


def _records() -> list[str]:
    """The graph's records and 40 others outside it: in a corpus of seven, the seeds'
    words would be its commonest, which a long query's word budget leaves out."""
    out = [_xml(p, title, cites) for p, (title, cites) in SEEDS.items()]
    out += [_xml(p, title, CITING.get(p, [])) for p, title in CANDIDATES.items()]
    out += [_xml(p, f"Rainfall record {p} in mountain valleys", []) for p in range(100, 140)]
    return out


def _snowball(home: Path) -> Any:
    args = ["--home", str(home), "snowball", "1", "2", "--json"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_lexical_home_ranks_by_the_seeds_words_among_the_candidates(tmp_path: Path) -> None:
    source = pubmed_file(tmp_path / "pubmed26n0001.xml", _records())
    home = tmp_path / "home"
    CliRunner().invoke(
        main, ["--home", str(home), "ingest", str(source), "--no-encode", "--jobs", "0"]
    )
    out = _snowball(home)
    order = [h["pmid"] for h in out["hits"]]
    assert out["counts"]["new"] == 5
    # 10 shares four of the seeds' words (intraocular lens, cataract surgery), 11 two,
    # 13 one rare one; 12 and 14 none, so they come last, by PMID among equals
    assert order[0] == 10 and set(order[1:3]) == {11, 13} and order[3:] == [12, 14]
    assert all(h["score"] > 0 for h in out["hits"][:3])
    assert [h["score"] for h in out["hits"][3:]] == [0.0, 0.0]


@pytest.mark.thorough
def test_a_home_with_vectors_fuses_words_with_the_seeds_mean_vector(tmp_path: Path) -> None:
    from tiny_models import build_tiny_models, ingest_and_encode, write_tiny_config

    from medsearch.retrieval.fusion import reciprocal_rank_fusion
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.retrieval.seed_similarity import lexical_order, rank_by_seeds

    folder = tmp_path / "xml"
    folder.mkdir()
    pubmed_file(folder / "pubmed26n0001.xml", _records())
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, build_tiny_models(tmp_path / "tiny"))
    ingest_and_encode(paths, [folder])
    candidates = sorted(CANDIDATES)
    with open_searcher(paths) as searcher:
        seeds = searcher.store.get_many(sorted(SEEDS))
        got = rank_by_seeds(searcher, seeds, candidates)
        vectors = searcher.dense_side("test").articles
        centre = vectors.get(np.array(sorted(SEEDS))).mean(axis=0)
        centre /= np.linalg.norm(centre)
        brute = vectors.get(np.array(candidates)) @ centre  # the exact oracle
        dense = [candidates[i] for i in np.argsort(-brute, kind="stable")]
        lexical = lexical_order(searcher, " ".join(t for t, _ in SEEDS.values()), candidates)
        expected = reciprocal_rank_fusion({"lexical": lexical, "dense": dense}, k=60)
    assert got.mode == "hybrid" and not got.notes
    assert [p for p, _ in sorted(got.scores.items(), key=lambda x: -x[1])] == [
        f.pmid for f in expected
    ]
    out = _snowball(paths.home)
    assert [h["pmid"] for h in out["hits"]] == [f.pmid for f in expected]
    # the same home answers `similar --by text+citations`: 11 is co-cited with 10 (by 1)
    args = ["--home", str(paths.home), "similar", "10", "--by", "text+citations", "--json"]
    similar = json.loads(CliRunner().invoke(main, args, catch_exceptions=False).output)
    sources = {h["pmid"]: h["sources"] for h in similar["hits"]}
    assert similar["mode"] == "text+citations" and 10 not in sources
    assert "citations" in sources[11] and "dense" in sources[11]
