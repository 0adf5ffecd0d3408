"""An independent reading of PubMed XML, to say what a PubMed query should return.

The parity suite (``test_query_parity.py``) computes each query's expected set from
these records, so nothing here may come from medsearch: the XML is read with
``xml.etree.ElementTree`` straight from the files, words are split by one plain rule
(lower case, runs of letters or digits, accents folded) and each field tag is one small
predicate over the raw elements, written from PubMed's help page
(https://pubmed.ncbi.nlm.nih.gov/help/).
"""

from __future__ import annotations

import gzip
import re
import unicodedata
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def fold(text: str) -> str:
    """Lower case with accents removed (``Zetterström`` -> ``zetterstrom``)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


@cache
def words(text: str) -> tuple[str, ...]:
    """The words of ``text``: lower-cased runs of letters or digits (each text split
    once: the suite asks about the same records a hundred times)."""
    return tuple(re.findall(r"[^\W_]+", fold(text)))


def flat(elem: ET.Element | None) -> str:
    """All the text under ``elem``, inline markup (``<i>``, ``<sup>``) included."""
    return "" if elem is None else " ".join("".join(elem.itertext()).split())


@dataclass(frozen=True)
class Author:
    last: str
    fore: str
    initials: str
    affiliations: tuple[str, ...]


@dataclass(frozen=True)
class Heading:
    name: str
    major: bool
    qualifiers: tuple[tuple[str, bool], ...]


@dataclass(frozen=True)
class Ref:
    """One citation as its XML states it."""

    pmid: int
    title: str
    abstract: str
    authors: tuple[Author, ...]
    journal_names: tuple[str, ...]  # Title, ISOAbbreviation, MedlineTA, ISSNs
    span: tuple[int, int] | None  # the first and last YYYYMMDD its PubDate covers
    epub: tuple[int, int] | None  # the same for its electronic date (ArticleDate)
    headings: tuple[Heading, ...]
    pub_types: tuple[str, ...]
    languages: tuple[str, ...]
    ids: tuple[tuple[str, str], ...]  # (IdType, value) from ArticleIdList and ELocationID
    grants: tuple[tuple[str, str, str], ...]  # (GrantID, Acronym, Agency)
    status: str
    keywords: tuple[str, ...]
    other_abstracts: tuple[str, ...] = ()  # each OtherAbstract's AbstractText, joined
    substances: tuple[str, ...] = ()  # NameOfSubstance and SupplMeshName
    registry_numbers: tuple[str, ...] = ()  # RegistryNumber ("0" too, as the XML has it)
    personal_subjects: tuple[str, ...] = ()  # PersonalNameSubject "Last Fore"
    collective_names: tuple[str, ...] = ()  # CollectiveName of the author list
    databanks: tuple[str, ...] = ()  # "DataBankName/AccessionNumber"
    comment_notes: tuple[str, ...] = ()  # CommentsCorrections/Note
    history: tuple[tuple[str, int], ...] = ()  # (PubStatus, YYYYMMDD) of PubMedPubDate
    completed: int = 0  # DateCompleted, YYYYMMDD
    year_only: bool = False  # the PubDate gives a Year and nothing else
    revised: int = 0  # DateRevised, YYYYMMDD


def _month(text: str | None) -> int | None:
    if not text:
        return None
    text = text.strip().lower()
    if text.isdigit():
        return int(text)
    return MONTHS.index(text[:3]) + 1 if text[:3] in MONTHS else None


def _bounds(year: int, month: int | None, day: int | None) -> tuple[int, int]:
    base = year * 10000
    if month is None:
        return base + 101, base + 1231
    if day is None:
        return base + month * 100 + 1, base + month * 100 + 31
    return base + month * 100 + day, base + month * 100 + day


def pub_date(elem: ET.Element | None) -> tuple[int, int] | None:
    """The span of days a PubDate covers; a MedlineDate (``1998 Dec-1999 Jan``) runs
    from its first named year and month to its last."""
    if elem is None:
        return None
    year = elem.findtext("Year")
    if year:
        return _bounds(int(year), _month(elem.findtext("Month")), _day(elem.findtext("Day")))
    medline = elem.findtext("MedlineDate")
    if not medline:
        return None
    found = re.findall(r"(\d{4})|([A-Za-z]{3,})", medline)
    dated: list[tuple[int, int | None]] = []
    year_now: int | None = None
    for y, word in found:
        if y:
            year_now = int(y)
            dated.append((year_now, None))
        elif year_now is not None and (m := _month(word)) is not None:
            if dated and dated[-1] == (year_now, None):
                dated[-1] = (year_now, m)
            else:
                dated.append((year_now, m))
    if not dated:
        return None
    first, last = dated[0], dated[-1]
    return _bounds(first[0], first[1], None)[0], _bounds(last[0], last[1], None)[1]


def _article_date(elem: ET.Element | None) -> tuple[int, int] | None:
    year = elem.findtext("Year") if elem is not None else None
    if elem is None or not year:
        return None
    return _bounds(int(year), _month(elem.findtext("Month")), _day(elem.findtext("Day")))


def _day(text: str | None) -> int | None:
    return int(text) if text and text.strip().isdigit() else None


def _ymd(elem: ET.Element | None) -> int:
    if elem is None or not (elem.findtext("Year") or "").strip():
        return 0
    return (
        int(elem.findtext("Year") or 0) * 10000
        + int(elem.findtext("Month") or 1) * 100
        + int(elem.findtext("Day") or 1)
    )


def _extras(mc: ET.Element, art: ET.Element, data: ET.Element | None) -> dict[str, object]:
    """The fields PubMed's [tw], [all], [rn] and record-date tags read (issue 39)."""
    banks = [
        f"{bank.findtext('DataBankName') or ''}/{(number.text or '').strip()}"
        for bank in art.iterfind("DataBankList/DataBank")
        for number in bank.iterfind("AccessionNumberList/AccessionNumber")
    ]
    history = (
        tuple(
            ((d.get("PubStatus") or "").lower(), _ymd(d))
            for d in data.iterfind("History/PubMedPubDate")
        )
        if data is not None
        else ()
    )
    return {
        "other_abstracts": tuple(
            " ".join(flat(t) for t in o.iterfind("AbstractText")) for o in mc.iter("OtherAbstract")
        ),
        "substances": tuple(flat(c) for c in mc.iter("NameOfSubstance"))
        + tuple(flat(c) for c in mc.iter("SupplMeshName")),
        "registry_numbers": tuple(flat(c) for c in mc.iter("RegistryNumber")),
        "personal_subjects": tuple(
            " ".join(x for x in (p.findtext("LastName"), p.findtext("ForeName")) if x)
            for p in mc.iter("PersonalNameSubject")
        ),
        "collective_names": tuple(
            flat(c) for c in art.iterfind("AuthorList/Author/CollectiveName")
        ),
        "databanks": tuple(banks),
        "comment_notes": tuple(
            flat(n) for n in mc.iterfind("CommentsCorrectionsList/CommentsCorrections/Note")
        ),
        "history": history,
        "completed": _ymd(mc.find("DateCompleted")),
        "year_only": [e.tag for e in art.iterfind("Journal/JournalIssue/PubDate/*")] == ["Year"],
        "revised": _ymd(mc.find("DateRevised")),
    }


def read_citation(mc: ET.Element, data: ET.Element | None) -> Ref:
    art = mc.find("Article")
    assert art is not None
    journal = art.find("Journal")
    info = mc.find("MedlineJournalInfo")
    names = [
        journal.findtext("Title") if journal is not None else None,
        journal.findtext("ISOAbbreviation") if journal is not None else None,
        journal.findtext("ISSN") if journal is not None else None,
        info.findtext("MedlineTA") if info is not None else None,
        info.findtext("ISSNLinking") if info is not None else None,
    ]
    authors = tuple(
        Author(
            a.findtext("LastName") or "",
            a.findtext("ForeName") or "",
            a.findtext("Initials") or "",
            tuple(flat(x) for x in a.iter("Affiliation")),
        )
        for a in art.iterfind("AuthorList/Author")
        if a.get("ValidYN") != "N"
    )
    headings = tuple(
        Heading(
            flat(h.find("DescriptorName")),
            h.find("DescriptorName").get("MajorTopicYN") == "Y",  # type: ignore[union-attr]
            tuple((flat(q), q.get("MajorTopicYN") == "Y") for q in h.iterfind("QualifierName")),
        )
        for h in mc.iterfind("MeshHeadingList/MeshHeading")
    )
    abstract = art.find("Abstract")
    if abstract is None:
        abstract = mc.find("OtherAbstract")
    span = pub_date(art.find("Journal/JournalIssue/PubDate"))
    ids = [(e.get("EIdType") or "", (e.text or "").strip()) for e in art.iterfind("ELocationID")]
    if data is not None:
        ids += [(e.get("IdType") or "", (e.text or "").strip()) for e in data.iter("ArticleId")]
    return Ref(
        pmid=int(mc.findtext("PMID") or 0),
        title=flat(art.find("ArticleTitle")) or flat(art.find("VernacularTitle")),
        abstract=" ".join(flat(t) for t in abstract.iterfind("AbstractText"))
        if abstract is not None
        else "",
        authors=authors,
        journal_names=tuple(n.strip() for n in names if n and n.strip()),
        span=span,
        epub=_article_date(art.find("ArticleDate")),
        headings=headings,
        pub_types=tuple(flat(p) for p in art.iterfind("PublicationTypeList/PublicationType")),
        languages=tuple(flat(x) for x in art.iterfind("Language")),
        ids=tuple(ids),
        grants=tuple(
            (g.findtext("GrantID") or "", g.findtext("Acronym") or "", g.findtext("Agency") or "")
            for g in art.iterfind("GrantList/Grant")
        ),
        status=mc.get("Status") or "",
        keywords=tuple(flat(k) for k in mc.iterfind("KeywordList/Keyword")),
        **_extras(mc, art, data),  # type: ignore[arg-type]
    )


def _entries(path: Path) -> Iterator[tuple[str, object]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        root = ET.parse(fh).getroot()
    for child in root.iter():
        if child.tag == "PubmedArticle":
            yield "article", (child.find("MedlineCitation"), child.find("PubmedData"))
        elif child.tag == "MedlineCitation" and root.tag == "MedlineCitationSet":
            yield "article", (child, None)
        elif child.tag == "DeleteCitation":
            yield "delete", [int(p.text or 0) for p in child.iterfind("PMID")]


def update_order(path: Path) -> tuple[int, int, int, tuple[str, ...]]:
    """NLM's files apply in the order of their numbers (``pubmed21n1005`` after
    ``n1004``); other files after them, by path."""
    found = re.fullmatch(r"(?:pubmed|medline)(\d\d)n(\d{4})\.xml(?:\.gz)?", path.name)
    if found is None:
        return (1, 0, 0, path.parts)
    return (0, int(found.group(1)), int(found.group(2)), path.parts)


def read_corpus(files: list[Path]) -> tuple[dict[int, Ref], set[int]]:
    """Every citation the files leave standing, applied in NLM's order (a PMID met again
    is replaced by its later record, and a DeleteCitation removes it), and the PMIDs
    deleted."""
    corpus: dict[int, Ref] = {}
    deleted: set[int] = set()
    for path in sorted(files, key=update_order):
        for kind, value in _entries(path):
            if kind == "delete":
                for pmid in value:  # type: ignore[attr-defined]
                    corpus.pop(pmid, None)
                    deleted.add(pmid)
                continue
            mc, data = value  # type: ignore[misc]
            ref = read_citation(mc, data)
            corpus.pop(ref.pmid, None)
            corpus[ref.pmid] = ref
            deleted.discard(ref.pmid)
    return corpus, deleted
