"""Baseline-sized PubMed files made of real records, cycled, each under a new PMID.

Synthetic records are ASCII, without Greek letters or affiliations, and our parser takes
them ~1.65x faster than real ones (BENCHMARKS.md, "What synthetic records hide"). A
benchmark that must speak for PubMed can instead cycle the real records of a folder
(../shared/data/pubmed: 936 of them) into files of any size: every ``PubmedArticle``
is written as it was, but for its ``MedlineCitation/PMID``, which counts up from
``start_pmid`` so that every article is new to the store (as in a baseline ingest).
"""

from __future__ import annotations

import gzip as gzip_module
from collections.abc import Sequence
from pathlib import Path

from lxml import etree

_MARK = "medsearch-pmid-goes-here"
HEADER = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN"'
    b' "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">\n'
    b"<PubmedArticleSet>\n"
)
Record = tuple[bytes, bytes]
"""A record's XML before and after its PMID's text."""


def load_records(folder: Path) -> list[Record]:
    """Every citation with a PMID in the ``*.xml`` / ``*.xml.gz`` files under ``folder``,
    in file order, as a ``PubmedArticle`` (a ``MedlineCitationSet``'s bare
    ``MedlineCitation``, as older MEDLINE files have them, gets the wrapper)."""
    records: list[Record] = []
    for path in sorted(p for p in Path(folder).rglob("*") if p.name.endswith((".xml", ".xml.gz"))):
        opener = gzip_module.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            for _, elem in etree.iterparse(
                fh, events=("end",), tag=("PubmedArticle", "MedlineCitation")
            ):
                parent = elem.getparent()
                bare = elem.tag == "MedlineCitation"
                if bare and parent is not None and parent.tag == "PubmedArticle":
                    continue  # its PubmedArticle comes whole at its own end
                pmid = elem.find("PMID" if bare else "MedlineCitation/PMID")
                if pmid is not None and (pmid.text or "").strip():
                    pmid.text = _MARK
                    xml = etree.tostring(elem, encoding="utf-8", with_tail=False)
                    if bare:
                        xml = b"<PubmedArticle>" + xml + b"</PubmedArticle>"
                    before, after = xml.split(_MARK.encode(), 1)
                    records.append((before, after + b"\n"))
                elem.clear()
    if not records:
        raise SystemExit(f"no PubmedArticle records under {folder}")
    return records


def write_cycled_pubmed(
    path: Path,
    n_articles: int,
    records: Sequence[Record],
    *,
    start_pmid: int = 1,
    offset: int = 0,
    gzip: bool = True,
) -> None:
    """``n_articles`` of ``records`` in turn from ``offset``, PMIDs ``start_pmid`` on."""
    with gzip_module.open(path, "wb", compresslevel=6) if gzip else path.open("wb") as fh:
        fh.write(HEADER)
        for i in range(n_articles):
            before, after = records[(offset + i) % len(records)]
            fh.write(before + str(start_pmid + i).encode() + after)
        fh.write(b"</PubmedArticleSet>\n")
