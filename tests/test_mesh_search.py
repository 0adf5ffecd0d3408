"""Searching with MeSH installed, on real PubMed records (a 1975 baseline file when
../shared has it): explosion, noexp, major topics, subheadings, entry terms and
automatic term mapping, each checked against the records' own headings.

The fixture MeSH (tests/fixtures/mesh) holds the records' organisms (B01) and enzymes
(D08) with the descriptor UIs the records carry.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingest.mesh_xml import parse_mesh
from ingest.pubmed_xml import parse_file
from medsearch.cli import main
from medsearch.mesh.records import Descriptor
from medsearch.paths import Paths
from medsearch.query.field_notes import MESH_NOTE
from medsearch.records import Article
from medsearch.retrieval.searcher import Searcher, open_searcher
from tests.conftest import FIXTURES, SHARED_DATA

MESH = FIXTURES / "mesh"
BASELINE = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser"
REAL = [BASELINE / "pubmed21n0001.xml.gz", BASELINE / "pubmed21n1005.xml.gz"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Article]]:
    """Two homes of the same records: one without MeSH, one with the fixture's. The
    1975 file's records carry the organisms and enzymes; the 2019 file's carry
    supplementary concepts (SupplMeshList, and C-UIs in ChemicalList)."""
    if not all(path.exists() for path in REAL):
        pytest.skip(f"shared data not available: {BASELINE}")
    plain = tmp_path_factory.mktemp("plain") / "home"
    ingest = ["--home", str(plain), "ingest", *map(str, REAL), "--no-encode"]
    result = CliRunner().invoke(main, ingest)
    assert result.exit_code == 0, result.output
    articles = [a for path in REAL for a in parse_file(path) if isinstance(a, Article)]
    with_mesh = tmp_path_factory.mktemp("mesh") / "home"
    shutil.copytree(plain, with_mesh)
    files = [str(MESH / "desc2025.xml"), str(MESH / "supp2025.xml")]
    result = CliRunner().invoke(main, ["--home", str(with_mesh), "mesh", "import", *files])
    assert result.exit_code == 0, result.output
    return plain, with_mesh, articles


@pytest.fixture(scope="module")
def searcher(corpus: tuple[Path, Path, list[Article]]) -> Iterator[Searcher]:
    with open_searcher(Paths(corpus[1])) as opened:
        yield opened


@pytest.fixture(scope="module")
def articles(corpus: tuple[Path, Path, list[Article]]) -> list[Article]:
    return corpus[2]


def tree() -> dict[str, tuple[str, ...]]:
    """Heading name -> its tree numbers, from the fixture."""
    return {
        r.name: r.tree_numbers
        for r in parse_mesh(MESH / "desc2025.xml")
        if isinstance(r, Descriptor)
    }


def under(name: str) -> set[str]:
    """The heading and every one under it, by tree-number prefix (the oracle)."""
    trees = tree()
    roots = trees[name]
    return {
        other
        for other, numbers in trees.items()
        if any(n == r or n.startswith(r + ".") for n in numbers for r in roots)
    }


def found(searcher: Searcher, query: str) -> set[int]:
    result = searcher.search(query, mode="lexical", k=1000, rerank="none", snippets=False)
    assert result.total == len(result.hits)
    return {h.pmid for h in result.hits}


def with_heading(articles: list[Article], names: set[str], *, major: bool = False) -> set[int]:
    return {
        a.pmid
        for a in articles
        if any(m.descriptor in names and (m.is_major or not major) for m in a.mesh)
    }


def test_a_heading_explodes_to_every_heading_under_it(
    searcher: Searcher, articles: list[Article]
) -> None:
    hydrolases = under("Hydrolases")
    assert {"Cerebroside-Sulfatase", "Muramidase", "Pepsin A"} <= hydrolases
    want = with_heading(articles, hydrolases)
    assert len(want) > 5
    assert found(searcher, "hydrolases[mh]") == want
    assert found(searcher, "Hydrolases[MeSH Terms]") == want


def test_noexp_searches_the_heading_alone(searcher: Searcher, articles: list[Article]) -> None:
    alone = with_heading(articles, {"Hydrolases"})
    assert found(searcher, "hydrolases[mh:noexp]") == alone
    assert alone < found(searcher, "hydrolases[mh]")


def test_major_topics_explode_the_same_way(searcher: Searcher, articles: list[Article]) -> None:
    animals = under("Mammals")
    assert found(searcher, "mammals[majr]") == with_heading(articles, animals, major=True)
    assert found(searcher, "mammals[majr:noexp]") == set()  # no record has Mammals itself


def test_an_entry_term_names_its_heading(searcher: Searcher, articles: list[Article]) -> None:
    rodents = with_heading(articles, under("Rodentia"))
    assert {"Rats", "Mice", "Guinea Pigs"} <= under("Rodentia")
    assert found(searcher, "rodents[mh]") == rodents


def test_heading_and_subheading_by_name_or_abbreviation(
    searcher: Searcher, articles: list[Article]
) -> None:
    esterases = under("Esterases")
    want = {
        a.pmid
        for a in articles
        if any(
            m.descriptor in esterases and any(q.name == "metabolism" for q in m.qualifiers)
            for m in a.mesh
        )
    }
    assert want
    assert found(searcher, "esterases/metabolism[mh]") == want
    assert found(searcher, "esterases/me[mh]") == want
    assert found(searcher, "me[sh]") == found(searcher, "metabolism[sh]")
    # as librarians space it: PubMed reads every one as Esterases/metabolism
    assert found(searcher, '"Esterases /metabolism"[mh]') == want
    assert found(searcher, "esterases / me[MeSH Terms]") == want


def test_what_mesh_cannot_answer_yet_is_said(searcher: Searcher) -> None:
    """NLM's subheading tree and MeSH's pharmacological actions are not imported: an
    exploding [sh] and a [pa] say so with MeSH installed too; [sh:noexp] does not."""
    from medsearch.query.field_notes import ACTION_NOTE, SUBHEADING_NOTE

    def notes(query: str) -> tuple[str, ...]:
        return searcher.search(query, mode="lexical", k=5, rerank="none", snippets=False).notes

    assert SUBHEADING_NOTE in notes("metabolism[sh]")
    assert SUBHEADING_NOTE not in notes("metabolism[sh:noexp]")
    assert ACTION_NOTE in notes("esterases[pa]")


def test_untagged_words_map_to_headings_and_supplementary_concepts(
    searcher: Searcher, articles: list[Article]
) -> None:
    muramidase = with_heading(articles, {"Muramidase"})
    lysozyme = found(searcher, "lysozyme AND 1975[dp]")
    assert muramidase <= lysozyme
    result = searcher.search("HEWL AND 1975[dp]", mode="lexical", k=100, rerank="none")
    assert {h.pmid for h in result.hits} == muramidase  # a concept's synonym: its heading
    assert result.translation == (
        '("hen egg-white lysozyme"[Supplementary Concept] OR "Muramidase"[MeSH Terms] OR HEWL)'
        " AND 1975[dp]"
    )


def test_nm_matches_supplementary_concepts_and_chemicals_by_any_of_their_names(
    searcher: Searcher, articles: list[Article]
) -> None:
    def indexed_with(name: str) -> set[int]:
        return {a.pmid for a in articles if name in (*a.supplementary, *a.chemicals)}

    assert found(searcher, '"Dickeya zeae"[nm]') == indexed_with("Dickeya zeae") != set()
    assert found(searcher, "alkylsulfatase[nm]") == indexed_with("alkylsulfatase") != set()
    assert found(searcher, "alkyl sulfatase[nm]") == indexed_with("alkylsulfatase")
    mapped = searcher.search("alkyl sulfatase", mode="lexical", k=10, rerank="none")
    assert mapped.translation == (
        '"alkylsulfatase"[Supplementary Concept] OR "Sulfatases"[MeSH Terms]'
        " OR (alkyl AND sulfatase)"
    )
    assert mapped.total == len(
        indexed_with("alkylsulfatase") | with_heading(articles, under("Sulfatases"))
    )


def test_journals_then_authors_when_mesh_does_not_know_the_words(searcher: Searcher) -> None:
    result = searcher.search("br j haematol AND hemolysis", mode="lexical", k=10, rerank="none")
    assert result.translation.startswith('("br j haematol"[Journal] OR')
    assert result.total > 0
    author = searcher.search("mier pd AND skin", mode="lexical", k=10, rerank="none")
    assert '"mier pd"[Author]' in author.translation
    assert author.total > 0


def test_plain_words_rank_as_typed_and_count_their_translation(searcher: Searcher) -> None:
    ranked = searcher.search("lysozyme", mode="lexical", k=100, rerank="none")
    assert ranked.counted == "all_words"
    assert ranked.translation == '"Muramidase"[MeSH Terms] OR lysozyme'
    assert ranked.total == len(found(searcher, "lysozyme[mh] OR lysozyme"))


def run(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_explain_and_json_carry_the_translation(corpus: tuple[Path, Path, list[Article]]) -> None:
    with_mesh = corpus[1]
    code, out, err = run(with_mesh, "search", "lysozyme AND rats", "--explain", "--mode", "lexical")
    assert code == 0, err
    assert 'search details: ("Muramidase"[MeSH Terms] OR lysozyme) AND ("Rats"[MeSH Terms]' in err
    code, out, _ = run(with_mesh, "search", "mouse[mh]", "--json", "--mode", "lexical")
    answer: dict[str, Any] = json.loads(out)
    assert answer["translation"] == '"Mice"[MeSH Terms]' and "notes" not in answer


def test_without_mesh_searches_are_unchanged_and_say_how_to_install_it(
    corpus: tuple[Path, Path, list[Article]], articles: list[Article]
) -> None:
    plain, _, _ = corpus
    with open_searcher(Paths(plain)) as searcher:
        result = searcher.search("hydrolases[mh]", mode="lexical", k=100, rerank="none")
        assert {h.pmid for h in result.hits} == with_heading(articles, {"Hydrolases"})
        assert MESH_NOTE in result.notes and result.translation is None
    code, _, err = run(plain, "search", "lysozyme", "--explain", "--mode", "lexical")
    assert code == 0 and "medsearch ingest --download mesh" in err


def test_the_heading_ranks_plain_words_only_when_asked(
    searcher: Searcher, articles: list[Article]
) -> None:
    muramidase = with_heading(articles, {"Muramidase"})
    plain = searcher.search("lysozyme", mode="lexical", k=100, rerank="none")
    words = {h.pmid for h in plain.hits}
    saved = searcher.settings
    try:
        searcher.settings = replace(saved, mesh_ranking=True)
        ranked = searcher.search("lysozyme", mode="lexical", k=100, rerank="none")
    finally:
        searcher.settings = saved
    assert {h.pmid for h in ranked.hits} == words | muramidase
    assert ranked.total == plain.total  # the count is the translation's either way
