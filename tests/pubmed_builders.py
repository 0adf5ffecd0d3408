"""Small builders for PubMed XML written by tests (baseline/update files, broken files)."""

from __future__ import annotations

import gzip
from collections.abc import Iterable, Sequence
from pathlib import Path
from xml.sax.saxutils import escape


def article_xml(
    pmid: int,
    title: str,
    abstract: str = "",
    *,
    year: int = 2020,
    journal: str = "Journal of Testing",
    abbrev: str = "J Test",
    version: int = 1,
    pub_type: str = "Journal Article",
    pub_types: Sequence[str] = (),
    authors: Sequence[tuple[str, str]] = (("Doe", "J"),),
    mesh: Sequence[tuple[str, bool, bool]] = (),
    languages: Sequence[str] = ("eng",),
    doi: str | None = "",
    pmcid: str | None = None,
) -> str:
    """One ``PubmedArticle``. ``authors``: (last name, initials); ``mesh``: (descriptor,
    descriptor is major, a qualifier is major); ``doi`` "" means ``10.5555/test.PMID``."""
    abstract_xml = (
        f"<Abstract><AbstractText>{escape(abstract)}</AbstractText></Abstract>" if abstract else ""
    )
    author_xml = "".join(
        f"<Author><LastName>{escape(last)}</LastName><Initials>{escape(initials)}</Initials>"
        "</Author>"
        for last, initials in authors
    )
    types_xml = "".join(
        f"<PublicationType>{escape(t)}</PublicationType>" for t in (pub_types or (pub_type,))
    )
    mesh_xml = "".join(
        f'<MeshHeading><DescriptorName MajorTopicYN="{"Y" if major else "N"}">{escape(name)}'
        f'</DescriptorName><QualifierName MajorTopicYN="{"Y" if qualifier else "N"}">'
        "therapy</QualifierName></MeshHeading>"
        for name, major, qualifier in mesh
    )
    ids = [("pubmed", str(pmid))]
    if doi is not None:
        ids.append(("doi", doi or f"10.5555/test.{pmid}"))
    if pmcid:
        ids.append(("pmc", pmcid))
    ids_xml = "".join(f'<ArticleId IdType="{k}">{escape(v)}</ArticleId>' for k, v in ids)
    return f"""
<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM">
    <PMID Version="{version}">{pmid}</PMID>
    <Article PubModel="Print">
      <Journal>
        <JournalIssue CitedMedium="Print"><Volume>1</Volume><Issue>2</Issue>
          <PubDate><Year>{year}</Year><Month>Mar</Month></PubDate></JournalIssue>
        <Title>{escape(journal)}</Title><ISOAbbreviation>{escape(abbrev)}</ISOAbbreviation>
      </Journal>
      <ArticleTitle>{escape(title)}</ArticleTitle>
      {abstract_xml}
      <AuthorList>{author_xml}</AuthorList>
      {"".join(f"<Language>{escape(lang)}</Language>" for lang in languages)}
      <PublicationTypeList>{types_xml}</PublicationTypeList>
    </Article>
    <MeshHeadingList>{mesh_xml}</MeshHeadingList>
  </MedlineCitation>
  <PubmedData><ArticleIdList>{ids_xml}</ArticleIdList></PubmedData>
</PubmedArticle>"""


def pubmed_file(
    path: Path, articles: Iterable[str], deletions: Iterable[int] = (), *, gz: bool = False
) -> Path:
    body = "".join(articles)
    dels = list(deletions)
    if dels:
        body += (
            "<DeleteCitation>"
            + "".join(f'<PMID Version="1">{p}</PMID>' for p in dels)
            + "</DeleteCitation>"
        )
    text = (
        f'<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>{body}\n</PubmedArticleSet>\n'
    )
    data = text.encode()
    if gz:
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


def truncated_gzip(path: Path, source: bytes) -> Path:
    """A .gz cut in half: what an interrupted download leaves behind."""
    packed = gzip.compress(source)
    path.write_bytes(packed[: len(packed) // 2])
    return path
