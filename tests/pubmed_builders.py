"""Small builders for PubMed XML written by tests (baseline/update files, broken files)."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
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
) -> str:
    abstract_xml = (
        f"<Abstract><AbstractText>{escape(abstract)}</AbstractText></Abstract>" if abstract else ""
    )
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
      <AuthorList><Author><LastName>Doe</LastName><ForeName>Jane</ForeName>
        <Initials>J</Initials></Author></AuthorList>
      <Language>eng</Language>
      <PublicationTypeList><PublicationType>{escape(pub_type)}</PublicationType>
      </PublicationTypeList>
    </Article>
  </MedlineCitation>
  <PubmedData><ArticleIdList><ArticleId IdType="pubmed">{pmid}</ArticleId>
    <ArticleId IdType="doi">10.5555/test.{pmid}</ArticleId></ArticleIdList></PubmedData>
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
