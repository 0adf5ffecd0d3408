"""References that give only a DOI become edges when the DOI is a stored article's,
whichever of the two records arrives first, and stay consistent through updates and
deletions: resolved after the ingest through the lexical index's ``[aid]`` (a data
home) or a scan of ``articles`` (a bare store)."""

from __future__ import annotations

import gzip
import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.index.citations import CitationGraph, refresh
from medsearch.records import Article, Reference
from medsearch.store import ref_dois
from medsearch.store.db import Store

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "pubmed"


def _article(pmid: int, doi: str | None = None, refs: tuple[Reference, ...] = ()) -> Article:
    ids = (("doi", doi),) if doi else ()
    return Article(pmid=pmid, title=f"article {pmid}", article_ids=ids, references=refs)


def _graph(store: Store, folder: Path) -> CitationGraph:
    refresh(folder, store.conn)
    return CitationGraph.open(folder, store.conn)


def test_a_doi_naming_a_stored_article_becomes_a_reference_list_edge(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([_article(20, "10.5/Twenty"), _article(21, "10.5/xxi")])
        with store.transaction():
            store.upsert(
                [
                    _article(
                        1,
                        refs=(
                            Reference(21),
                            Reference(0, "https://doi.org/10.5/TWENTY"),
                            Reference(0, "10.5/not.stored"),
                        ),
                    )
                ]
            )
        graph = _graph(store, tmp_path / "citations")
        edges, in_list, in_occ = graph.references(1)
        assert edges.tolist() == [20, 21]
        assert in_list.all() and not in_occ.any()
        assert graph.cited_by(20).tolist() == [1]
        assert ref_dois.pending(store.conn) == 1 and ref_dois.queued(store.conn) == 0


def test_an_article_arriving_later_resolves_the_pending_reference(tmp_path: Path) -> None:
    folder = tmp_path / "citations"
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([_article(1, refs=(Reference(0, "10.5/later"),))])
        assert _graph(store, folder).cited_by(30).tolist() == []
        assert ref_dois.pending(store.conn) == 1
        with store.transaction():  # resolved in the transaction that stores it
            store.upsert([_article(30, "10.5/LATER")])
        assert CitationGraph.open(folder, store.conn).cited_by(30).tolist() == [1]
        assert ref_dois.pending(store.conn) == 0


def test_updates_and_deletions_of_the_citing_record_keep_the_edges_exact(tmp_path: Path) -> None:
    folder = tmp_path / "citations"
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([_article(20, "10.5/a"), _article(21, "10.5/b")])
            store.upsert(
                [
                    _article(1, refs=(Reference(0, "10.5/a"), Reference(0, "10.5/gone"))),
                    _article(2, refs=(Reference(0, "10.5/waits"),)),
                ]
            )
        assert _graph(store, folder).references(1)[0].tolist() == [20]
        with store.transaction():  # the revised record cites b instead of a
            store.upsert([_article(1, refs=(Reference(0, "10.5/b"),))])
        graph = _graph(store, folder)
        assert graph.references(1)[0].tolist() == [21]
        assert graph.cited_by(20).tolist() == []
        assert ref_dois.pending(store.conn) == 1  # 2's; 1's old pending reference left
        with store.transaction():
            store.delete([1, 2])
        with store.transaction():  # 2 is gone: its pending reference must not resolve
            store.upsert([_article(40, "10.5/waits")])
        graph = _graph(store, folder)
        assert graph.cited_by(21).tolist() == [] and graph.cited_by(40).tolist() == []
        assert ref_dois.pending(store.conn) == 0


def test_resolved_edges_keep_the_collections_marks(tmp_path: Path) -> None:
    import numpy as np

    from medsearch.store.refs import add_collection

    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([_article(20, "10.5/a"), _article(1, refs=(Reference(0, "10.5/a"),))])
            add_collection(store.conn, np.array([1, 1], np.uint32), np.array([20, 50], np.uint32))
        graph = _graph(store, tmp_path / "citations")
        edges, in_list, in_occ = graph.references(1)
        assert edges.tolist() == [20, 50]
        assert in_list.tolist() == [True, False] and in_occ.tolist() == [True, True]


def test_the_packed_value_carries_pmids_and_dois_apart() -> None:
    from medsearch.store.refs import pack_refs, unpack

    refs = (Reference(4294967294), Reference(7, "10.1/x"), Reference(0, " DOI:10.1/Y "))
    packed, dois = ref_dois.split(pack_refs(refs))
    assert unpack(packed).tolist() == [7, 4294967294] and dois == ("10.1/y",)
    assert ref_dois.split(pack_refs((Reference(0, "10.1/z"),))) == (None, ("10.1/z",))
    assert ref_dois.split(pack_refs((Reference(3),)))[1] == ()


def _run(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output) if "--json" in args else result.output


def _citing_xml(pmid: int, dois: list[str]) -> str:
    refs = "".join(
        f'<Reference><Citation>ref</Citation><ArticleIdList><ArticleId IdType="doi">{d}'
        "</ArticleId></ArticleIdList></Reference>"
        for d in dois
    )
    xml = article_xml(pmid, f"Article {pmid}", "Text.", year=2024)
    return xml.replace("</PubmedData>", f"<ReferenceList>{refs}</ReferenceList></PubmedData>")


def _real_dois(path: Path, limit: int) -> dict[str, int]:
    """DOIs and PMIDs of a real file's records, read with ElementTree."""
    found: dict[str, int] = {}
    root = ET.fromstring(gzip.decompress(path.read_bytes()))
    for article in root.iter("PubmedArticle"):
        pmid = int(article.findtext("MedlineCitation/PMID") or 0)
        for aid in article.iterfind("PubmedData/ArticleIdList/ArticleId"):
            if aid.get("IdType") == "doi" and aid.text and len(found) < limit:
                found.setdefault(aid.text.strip(), pmid)
    return found


@pytest.mark.skipif(not REAL.is_dir(), reason="../shared/data/pubmed is absent")
def test_real_records_cited_by_doi_alone_resolve_through_the_lexical_index(
    tmp_path: Path,
) -> None:
    """Real records give every DOI'd reference a PMID too (none of the 4,011 references
    in ../shared/data/pubmed gives a DOI alone), so the citing record is written here and
    cites real records by their DOIs: some stored before it, some after."""
    first, second = sorted(REAL.glob("net-synergy-pubmedparser/pubmed21n100*.xml.gz"))[:2]
    early, late = _real_dois(first, 3), _real_dois(second, 3)
    assert len(early) == len(late) == 3
    home = tmp_path / "home"
    _run(home, "ingest", str(first), "--no-encode", "--jobs", "0")
    citing = pubmed_file(
        tmp_path / "pubmed26n0001.xml",
        [_citing_xml(90_000_001, [d.upper() for d in early] + list(late) + ["10.1/none"])],
    )
    _run(home, "ingest", str(citing), "--no-encode", "--jobs", "0")
    _run(home, "ingest", str(second), "--no-encode", "--jobs", "0")
    listed = {h["pmid"]: h for h in _run(home, "refs", "90000001", "--json")["hits"]}
    assert set(listed) == {*early.values(), *late.values(), 0}
    assert listed[0]["doi"] == "10.1/none"
    for pmid in [*early.values(), *late.values()]:
        assert listed[pmid]["in_corpus"] is True
        assert [h["pmid"] for h in _run(home, "citedby", str(pmid), "--json")["hits"]] == [
            90_000_001
        ]


def test_a_resolution_stopped_half_way_leaves_the_rest_queued(tmp_path: Path) -> None:
    from medsearch.index.citations_dois import resolve

    with Store(tmp_path / "s.sqlite") as store:
        refs = tuple(Reference(0, f"10.5/{n}") for n in range(4))
        with store.transaction():
            store.upsert([_article(20 + n, f"10.5/{n}") for n in range(4)])
            store.upsert([_article(1, refs=refs)])
        lookup = ref_dois.table_lookup(store.conn)
        calls: list[int] = []

        def stopped(dois: Sequence[str]) -> dict[str, int]:
            calls.append(len(dois))
            if len(calls) == 2:  # Ctrl-C (or kill -9) during the second batch
                raise KeyboardInterrupt
            return lookup(dois)

        with pytest.raises(KeyboardInterrupt):
            resolve(store.conn, stopped, batch=2)
        assert ref_dois.queued(store.conn) == 2  # the first batch committed
        assert resolve(store.conn, lookup, batch=2) == (2, 2)
        graph = CitationGraph.open(tmp_path / "citations", store.conn)
        assert graph.references(1)[0].tolist() == [20, 21, 22, 23]
