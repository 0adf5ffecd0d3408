"""References are read from real PubMed records, checked against an independent
ElementTree reading of the same files."""

from __future__ import annotations

import gzip
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ingest.pubmed_xml import parse_file
from medsearch.records import Article, Reference
from tests.conftest import FIXTURES, shared_data


def _files() -> list[Path]:
    folder = shared_data("pubmed")
    return sorted(p for p in folder.rglob("*") if p.name.endswith((".xml", ".xml.gz")))


def _elementtree_references(path: Path) -> dict[int, list[tuple[int, str | None]]]:
    """PMID -> (cited PMID or 0, DOI or None) for every reference naming either, read
    with the standard library's parser."""
    opener = gzip.open if path.suffix == ".gz" else open
    out: dict[int, list[tuple[int, str | None]]] = {}
    with opener(path, "rb") as stream:
        for _, elem in ET.iterparse(stream):
            if elem.tag not in ("PubmedArticle", "PubmedBookArticle"):
                continue
            pmid_text = elem.findtext("MedlineCitation/PMID") or elem.findtext("BookDocument/PMID")
            refs: list[tuple[int, str | None]] = []
            quoted: list[tuple[int, str | None]] = []
            for ref in elem.iter("Reference"):
                ids = {
                    i.get("IdType"): (i.text or "").strip()
                    for i in reversed(ref.findall("ArticleIdList/ArticleId"))
                }
                pair = (int(ids.get("pubmed") or 0), ids.get("doi") or None)
                if (pair[0] or pair[1]) and pair not in refs:
                    refs.append(pair)
                elif not (pair[0] or pair[1]):
                    doi = _quoted_doi(ref.findtext("Citation") or "")
                    if doi and (0, doi) not in quoted:
                        quoted.append((0, doi))
            out[int(pmid_text or 0)] = refs + [q for q in quoted if q not in refs]
            elem.clear()
    return out


def _quoted_doi(citation: str) -> str | None:
    """The first word of a citation that holds ``10.<digits>/...``, from its ``10.`` on,
    without the sentence's closing punctuation."""
    for word in citation.split():
        at = word.find("10.")
        while at >= 0:
            registrant, slash, suffix = word[at + 3 :].partition("/")
            if slash and registrant.isdigit() and 4 <= len(registrant) <= 9:
                doi = f"10.{registrant}/{suffix}".rstrip(".,;:)]}'\u2019\u201d")
                return doi if not doi.endswith("/") else None
            at = word.find("10.", at + 1)
    return None


def test_real_reference_lists_match_an_elementtree_reading() -> None:
    files = [p for p in _files() if b"ReferenceList" in _head(p)]
    assert files, "the shared PubMed files hold reference lists"
    with_refs = edges = quoted = 0
    for path in files:
        expected = _elementtree_references(path)
        for record in parse_file(path):
            if not isinstance(record, Article):
                continue
            got = [(r.pmid, r.doi) for r in record.references]
            assert got == expected[record.pmid], (path.name, record.pmid)
            with_refs += bool(got)
            edges += len(record.cited_pmids)
            quoted += sum(1 for r in record.references if not r.pmid and "/" in (r.doi or ""))
    assert with_refs >= 90 and edges >= 2500, (with_refs, edges)
    assert quoted >= 25, quoted  # DOIs that only the citation text gives


def _head(path: Path) -> bytes:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as stream:
        return stream.read()


def test_a_reference_keeps_its_doi_and_records_round_trip() -> None:
    records = [r for r in parse_file(FIXTURES / "tricky_articles.xml") if isinstance(r, Article)]
    cited = next(r for r in records if r.references)
    assert cited.references == (
        Reference(91888888, "10.5555/cited.paper", "Someone A. A cited paper. J Cited. 2001;1:1."),
    )
    assert cited.cited_pmids == (91888888,)
    assert Article.from_json(cited.to_json()) == cited


def test_a_stored_record_without_references_still_reads() -> None:
    old = Article(pmid=5, title="older record").to_dict()
    del old["references"]
    assert Article.from_dict(old).references == ()


@pytest.mark.parametrize(
    ("ids", "expected"),
    [
        ('<ArticleId IdType="pubmed">123</ArticleId>', (Reference(123, None, "c"),)),
        ('<ArticleId IdType="doi">10.1/x</ArticleId>', (Reference(0, "10.1/x", "c"),)),
        ('<ArticleId IdType="pmc">PMC1</ArticleId>', ()),
        ('<ArticleId IdType="pubmed">0</ArticleId>', ()),
        ('<ArticleId IdType="pubmed">99999999999</ArticleId>', ()),
    ],
)
def test_which_references_are_kept(
    tmp_path: Path, ids: str, expected: tuple[Reference, ...]
) -> None:
    nested = (
        "<ReferenceList><ReferenceList><Reference><Citation>c</Citation><ArticleIdList>"
        f"{ids}</ArticleIdList></Reference></ReferenceList></ReferenceList>"
    )
    assert _references_of(tmp_path, nested) == expected


def _references_of(tmp_path: Path, reference_lists: str) -> tuple[Reference, ...]:
    """The references parsed from one record whose PubmedData holds ``reference_lists``."""
    path = tmp_path / "one.xml"
    path.write_text(
        "<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>7</PMID>"
        "<Article><ArticleTitle>T</ArticleTitle></Article></MedlineCitation><PubmedData>"
        f"{reference_lists}</PubmedData></PubmedArticle></PubmedArticleSet>"
    )
    (record,) = parse_file(path)
    assert isinstance(record, Article)
    return record.references


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        (
            "<Citation>Li H. Bioinformatics 25, 1754 (2009). Retrieved from"
            " https://doi.org/10.1093/bioinformatics/btp324.</Citation>",
            (
                Reference(
                    0,
                    "10.1093/bioinformatics/btp324",
                    "Li H. Bioinformatics 25, 1754 (2009). Retrieved from"
                    " https://doi.org/10.1093/bioinformatics/btp324.",
                ),
            ),
        ),
        (
            "<Citation>A. PLoS One 7, e32547; doi:10.1371/journal.pone.0032547</Citation>"
            '<ArticleIdList><ArticleId IdType="pmc">PMC9</ArticleId></ArticleIdList>',
            (
                Reference(
                    0,
                    "10.1371/journal.pone.0032547",
                    "A. PLoS One 7, e32547; doi:10.1371/journal.pone.0032547",
                ),
            ),
        ),
        (  # an ArticleId wins over the text
            "<Citation>B. https://doi.org/10.1000/text.doi</Citation>"
            '<ArticleIdList><ArticleId IdType="pubmed">42</ArticleId></ArticleIdList>',
            (Reference(42, None, "B. https://doi.org/10.1000/text.doi"),),
        ),
        ("<Citation>Version 10.2 of the manual, p. 10.</Citation>", ()),
    ],
)
def test_a_doi_quoted_only_in_the_citation_text_is_kept(
    tmp_path: Path, reference: str, expected: tuple[Reference, ...]
) -> None:
    listed = f"<ReferenceList><Reference>{reference}</Reference></ReferenceList>"
    assert _references_of(tmp_path, listed) == expected


def test_a_reference_keeps_its_citation_text_cut_to_a_bound(tmp_path: Path) -> None:
    """What is shown for a reference not stored here ("Arthritis Rheum. 1999 ...") is
    kept, spaces normalised; a hostile 100,000-character one is cut, not stored whole."""
    from ingest.pubmed_xml import CITATION_CHARS

    listed = (
        "<ReferenceList><Reference><Citation>Arthritis Rheum.  1999 Mar;42(3):415-20"
        '</Citation><ArticleIdList><ArticleId IdType="pubmed">10088762</ArticleId>'
        "</ArticleIdList></Reference><Reference><Citation>"
        + "x"
        * 100_000
        + '</Citation><ArticleIdList><ArticleId IdType="pubmed">5</ArticleId>'
        "</ArticleIdList></Reference></ReferenceList>"
    )
    first, long = _references_of(tmp_path, listed)
    assert first == Reference(10088762, None, "Arthritis Rheum. 1999 Mar;42(3):415-20")
    assert long.citation is not None and len(long.citation) == CITATION_CHARS
    assert long.citation.endswith("\u2026")


def test_every_real_reference_keeps_its_citation_text_and_round_trips() -> None:
    files = [p for p in _files() if b"ReferenceList" in _head(p)]
    refs = [
        ref
        for path in files
        for record in parse_file(path)
        if isinstance(record, Article)
        for ref in record.references
    ]
    assert len(refs) >= 2500 and all(ref.citation for ref in refs)
    record = Article(pmid=1, references=tuple(refs[:50]))
    assert Article.from_json(record.to_json()) == record


def test_a_record_stored_before_citation_texts_reads_without_them() -> None:
    """Records stored before the text was kept hold ``[pmid, doi]`` pairs."""
    old = Article(pmid=5, title="older record").to_dict()
    old["references"] = [[123, None], [0, "10.1/x"]]
    assert Article.from_dict(old).references == (Reference(123), Reference(0, "10.1/x"))
