"""Searching with MeSH installed, on real PubMed records (a 1975 baseline file when
../shared has it): explosion, noexp, major topics, subheadings, entry terms and
automatic term mapping, each checked against the records' own headings.

The fixture MeSH (tests/fixtures/mesh) holds the records' organisms (B01) and enzymes
(D08) with the descriptor UIs the records carry, a qualifier file with part of NLM's
subheading tree (/metabolism over /enzymology, /blood ..., /therapy over /drug therapy
...), and pharmacological actions: Hydrolases (a heading) and alkylsulfatase (a
supplementary concept) have the action Enzymes.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ingest.mesh_xml import parse_mesh
from ingest.pubmed_xml import parse_file
from medsearch.cli import main
from medsearch.mesh.records import Descriptor, Subheading
from medsearch.paths import Paths
from medsearch.query.field_notes import (
    ACTION_NOTE,
    MESH_NOTE,
    SUBHEADING_NOTE,
    field_notes,
)
from medsearch.query.parser import parse_query
from medsearch.records import Article
from medsearch.retrieval.searcher import Searcher, open_searcher
from tests.conftest import FIXTURES, SHARED_DATA
from tests.pubmed_reference import Ref, read_corpus

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
    files = [str(MESH / name) for name in ("desc2025.xml", "supp2025.xml", "qual2025.xml")]
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


def subheadings_under(name: str) -> set[str]:
    """The subheading and every one under any of its tree numbers, from the qualifier
    fixture by tree-number prefix (the oracle)."""
    trees = {r.name: r.tree_numbers for r in parse_mesh(MESH / "qual2025.xml")}
    assert all(isinstance(r, Subheading) for r in parse_mesh(MESH / "qual2025.xml"))
    return {
        other
        for other, numbers in trees.items()
        if any(n == r or n.startswith(r + ".") for n in numbers for r in trees[name])
    }


def with_subheading(articles: list[Article], names: set[str]) -> set[int]:
    return {a.pmid for a in articles if any(q.name in names for m in a.mesh for q in m.qualifiers)}


def notes(searcher: Searcher, query: str) -> tuple[str, ...]:
    return searcher.search(query, mode="lexical", k=5, rerank="none", snippets=False).notes


def test_sh_explodes_through_the_subheading_tree(
    searcher: Searcher, articles: list[Article]
) -> None:
    """PubMed's [sh] includes the narrower subheadings (/metabolism finds /enzymology,
    /blood ...); [sh:noexp] the subheading alone; a subheading under two branches
    (/pharmacokinetics) is found from either."""
    metabolism = subheadings_under("metabolism")
    assert {"enzymology", "blood", "urine", "pharmacokinetics"} <= metabolism
    assert "pharmacokinetics" in subheadings_under("pharmacology")
    exploded = with_subheading(articles, metabolism)
    alone = with_subheading(articles, {"metabolism"})
    assert alone < exploded  # the records carry narrower ones on their own
    assert found(searcher, "metabolism[sh]") == exploded
    assert found(searcher, "me[sh]") == exploded
    assert found(searcher, "metabolism[sh:noexp]") == alone
    assert found(searcher, "enzymology[sh]") == with_subheading(articles, {"enzymology"})
    therapy = with_subheading(articles, subheadings_under("therapy"))
    assert therapy > with_subheading(articles, {"therapy"})
    assert found(searcher, "therapy[sh]") == therapy
    assert found(searcher, "therapy[Subheading]") == therapy


def test_pa_finds_every_substance_with_the_action(
    searcher: Searcher, articles: list[Article]
) -> None:
    """X[pa]: the articles indexed with X itself or with a substance MeSH gives the
    action X, a heading (Hydrolases, not exploded) or a supplementary concept
    (alkylsulfatase, in SupplMeshList or ChemicalList)."""
    names = {"Enzymes", "Hydrolases", "alkylsulfatase"}
    want = {
        a.pmid
        for a in articles
        if names & {m.descriptor for m in a.mesh} or names & {*a.supplementary, *a.chemicals}
    }
    assert with_heading(articles, {"Hydrolases"}) <= want
    assert {a.pmid for a in articles if "alkylsulfatase" in a.supplementary} <= want
    assert found(searcher, "enzymes[pa]") == want != set()
    assert found(searcher, '"Enzymes"[Pharmacological Action]') == want
    assert with_heading(articles, under("Esterases")) - want  # substances are not exploded
    result = searcher.search("enzymes[pa]", mode="lexical", k=5, rerank="none")
    assert result.translation == '"Enzymes"[Pharmacological Action]'
    assert ACTION_NOTE not in result.notes
    assert found(searcher, "foo[pa]") == set()
    assert "'foo' is not a MeSH heading: matched as typed" in notes(searcher, "foo[pa]")


def test_sh_and_pa_say_so_only_while_the_tree_or_the_actions_are_missing(
    searcher: Searcher,
) -> None:
    """Installed, [sh] and [pa] run as PubMed's and carry no note; MeSH imported without
    the qualifier file or the actions keeps each note, as MeSH not installed does."""
    assert notes(searcher, "metabolism[sh] OR enzymes[pa]") == ()
    parsed = parse_query("metabolism[sh] AND enzymes[pa]")
    assert field_notes(parsed, mesh=True) == [SUBHEADING_NOTE, ACTION_NOTE]
    assert field_notes(parsed, mesh=True, subheading_tree=True, actions=True) == []
    assert field_notes(parsed, mesh=False, subheading_tree=True, actions=True) == [
        SUBHEADING_NOTE,
        ACTION_NOTE,
    ]
    assert field_notes(parse_query("metabolism[sh:noexp]"), mesh=True) == []


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
        assert SUBHEADING_NOTE in notes(searcher, "metabolism[sh]")
        assert ACTION_NOTE in notes(searcher, "enzymes[pa]")
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


# -- parity: the ElementTree reading of the records and of NLM's files ---------------------


def reference_mesh() -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    """Read straight from the fixture XML with ElementTree (nothing from medsearch): each
    subheading's tree numbers, and each action's substances by name."""
    qual = ET.parse(MESH / "qual2025.xml").getroot()
    trees = {
        r.findtext("QualifierName/String", ""): tuple(
            t.text or "" for t in r.iterfind("TreeNumberList/TreeNumber")
        )
        for r in qual.iter("QualifierRecord")
    }
    actions: dict[str, set[str]] = {}
    for file, record, name in (
        ("desc2025.xml", "DescriptorRecord", "DescriptorName/String"),
        ("supp2025.xml", "SupplementalRecord", "SupplementalRecordName/String"),
    ):
        for r in ET.parse(MESH / file).getroot().iter(record):
            for action in r.iterfind("PharmacologicalActionList/PharmacologicalAction"):
                named = action.findtext("DescriptorReferredTo/DescriptorName/String", "")
                actions.setdefault(named, {named}).add(r.findtext(name, ""))
    return trees, actions


def test_sh_and_pa_find_the_sets_the_reference_reading_gives(searcher: Searcher) -> None:
    refs, _ = read_corpus(REAL)
    trees, actions = reference_mesh()

    def sh(name: str, *, noexp: bool = False) -> Callable[[Ref], bool]:
        roots = trees[name]
        names = (
            {name}
            if noexp
            else {
                other
                for other, numbers in trees.items()
                if any(n == r or n.startswith(r + ".") for n in numbers for r in roots)
            }
        )
        return lambda ref: any(q in names for h in ref.headings for q, _ in h.qualifiers)

    def pa(action: str) -> Callable[[Ref], bool]:
        names = actions[action]
        return lambda ref: bool(
            names & {h.name for h in ref.headings} | names & set(ref.substances)
        )

    def want(test: Callable[[Ref], bool]) -> set[int]:
        return {pmid for pmid, ref in refs.items() if test(ref)}

    metabolism, therapy, enzymes = sh("metabolism"), sh("therapy"), pa("Enzymes")
    drug_therapy = sh("drug therapy", noexp=True)
    cases: list[tuple[str, Callable[[Ref], bool]]] = [
        ("metabolism[sh]", metabolism),
        ("metabolism[sh:noexp]", sh("metabolism", noexp=True)),
        ("therapy[sh]", therapy),
        ("pharmacology[sh]", sh("pharmacology")),
        ("enzymes[pa]", enzymes),
        ("metabolism[sh] AND enzymes[pa]", lambda r: metabolism(r) and enzymes(r)),
        ("therapy[sh] NOT drug therapy[sh:noexp]", lambda r: therapy(r) and not drug_therapy(r)),
    ]
    sizes = []
    for query, test in cases:
        assert found(searcher, query) == want(test), query
        sizes.append(len(want(test)))
    assert all(sizes[:3]) and sizes[4]  # the sets are not empty
