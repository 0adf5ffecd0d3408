# Over 450 lines: one small reader per PubMed element a record keeps; the streaming is
# xml_stream.py and the text rules text.py.
"""Streaming PubMed/MEDLINE XML parser: one file -> ``Iterator[Article | Deletion]``.

Baseline and update files hold ~30K citations (~200 MB of XML each), so the parser
never builds the tree: lxml's pull parser fires only on the record elements, each
record is turned into frozen records and then cleared together with the siblings
already seen, which keeps memory flat whatever the file size. What a file may not hold
(a record past the limits of :mod:`ingest.sources`, a 10 MB text node) fails it before
it is built, so a hostile file cannot take the memory either.

How a file is read within its limits is :mod:`ingest.xml_stream`'s; this module turns
each record element into records. Two roots are understood: ``PubmedArticleSet``
(baseline/update files and efetch output: ``PubmedArticle``, ``PubmedBookArticle``,
``DeleteCitation``) and the older ``MedlineCitationSet`` (bare ``MedlineCitation``
records and ``DeleteCitation``).
Anything else, and every unreadable file, is a :class:`ParseError` naming the file and,
when known, the line. Because this is a generator, an error can surface after many
records were yielded; the ingest pipeline rolls the whole file back in that case.

Longer than most modules (~490 lines) because it is one format's element rules, each a
small function beside the ones it calls; the text rules they share are in
:mod:`ingest.text`, and MEDLINE's .nbib format is :mod:`ingest.medline`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from lxml import etree

from ingest.sources import open_input, stream_errors
from ingest.text import (
    child_text,
    first_children,
    flatten,
    history_date,
    normalise_space,
    pub_date,
)
from ingest.xml_stream import records, sniff_root, syntax_error
from medsearch.errors import ParseError
from medsearch.records import (
    AbstractSection,
    Article,
    Author,
    Correction,
    Deletion,
    Grant,
    MeshHeading,
    Qualifier,
    Reference,
    pmid_from,
)

log = logging.getLogger(__name__)

Element = etree._Element


@dataclass(slots=True)
class ParseStats:
    """What one pass over a file produced; pass one in to ``parse_file`` to fill it."""

    articles: int = 0
    books: int = 0
    deletions: int = 0
    skipped: int = 0  # records, and DeleteCitation entries, without a usable PMID
    bad_pmids: list[str] = field(default_factory=list)
    """The first few PMID texts that were not PMIDs (``0``, ``²``, 20 digits), for the report."""


def parse_file(
    path: Path | str, *, stats: ParseStats | None = None
) -> Iterator[Article | Deletion]:
    """Yield every citation and deletion in a ``.xml`` or ``.xml.gz`` PubMed file, in order."""
    path = Path(path)
    stats = stats if stats is not None else ParseStats()
    if not path.is_file():
        raise ParseError(str(path), "no such file")
    root = sniff_root(path)
    with open_input(path) as stream, stream_errors(path):
        try:
            yield from records(stream, root, lambda elem: _record(elem, stats), path)
        except etree.XMLSyntaxError as err:
            raise syntax_error(path, err) from err


def _record(elem: Element, stats: ParseStats) -> Article | Deletion | None:
    tag = elem.tag
    record: Article | Deletion | None
    if tag == "PubmedArticle":
        parts = first_children(elem)
        citation = parts.get("MedlineCitation")
        record = None if citation is None else _citation(citation, parts.get("PubmedData"))
    elif tag == "MedlineCitation":
        record = _citation(elem, None)
    elif tag == "PubmedBookArticle":
        record = _book(elem)
    else:
        texts = [e.text for e in elem.iterfind("PMID")]
        pmids = tuple(p for p in map(_int, texts) if p is not None)
        stats.deletions += 1
        if len(pmids) < len(texts):
            _skip(stats, tag, [t for t in texts if _int(t) is None])
        return Deletion(pmids=pmids)
    if record is None:
        _skip(stats, tag, [elem.findtext(".//PMID")])
    elif record.kind == "book":
        stats.books += 1
    else:
        stats.articles += 1
    return record


def _skip(stats: ParseStats, tag: object, texts: list[str | None]) -> None:
    """Count entries left out for want of a valid PMID, keeping a few of their texts:
    one bad record must not cost the file's others (the writer reports them)."""
    stats.skipped += len(texts)
    for text in texts:
        shown = (text or "").strip()
        if shown and len(stats.bad_pmids) < 3:
            stats.bad_pmids.append(shown if len(shown) <= 24 else shown[:21] + "...")
        log.warning("skipped a <%s> entry without a valid PMID: %r", tag, shown[:24])


def _citation(mc: Element, pubmed_data: Element | None) -> Article | None:
    """A ``MedlineCitation`` (plus its ``PubmedData`` sibling when there is one)."""
    fields: dict[object, Element] = {}
    repeated: dict[object, list[Element]] = {
        "KeywordList": [],
        "ChemicalList": [],
        "OtherAbstract": [],
    }
    for child in mc:  # one pass; KeywordList and OtherAbstract repeat
        tag = child.tag
        if tag in repeated:
            repeated[tag].append(child)
        fields.setdefault(tag, child)
    pmid_el = fields.get("PMID")
    pmid = _int(pmid_el.text) if pmid_el is not None else None
    if pmid is None or pmid_el is None:
        return None
    version = _int(pmid_el.get("Version")) or 1
    art = fields.get("Article")
    if art is None:
        return Article(pmid=pmid, version=version)
    parts: dict[object, Element] = {}
    languages: list[Element] = []
    locations: list[Element] = []
    for child in art:  # one pass; Language and ELocationID repeat
        tag = child.tag
        if tag == "Language":
            languages.append(child)
        elif tag == "ELocationID":
            locations.append(child)
        elif tag not in parts:
            parts[tag] = child
    journal = first_children(parts.get("Journal"))
    issue = first_children(journal.get("JournalIssue"))
    info = first_children(fields.get("MedlineJournalInfo"))
    medline_ta = _clean(child_text(info, "MedlineTA"))
    issns = tuple(
        dict.fromkeys(
            i
            for i in (_clean(child_text(journal, "ISSN")), _clean(child_text(info, "ISSNLinking")))
            if i
        )
    )
    title = _flat(parts.get("ArticleTitle")) or _flat(parts.get("VernacularTitle"))
    abstract = parts.get("Abstract")
    if abstract is None and repeated["OtherAbstract"]:
        abstract = repeated["OtherAbstract"][0]
    date = pub_date(issue.get("PubDate"))
    electronic = pub_date(parts.get("ArticleDate"))
    if date.year is None:
        date = electronic
    if date.year is None:
        date = history_date(pubmed_data)
    id_sources: list[Iterable[Element]] = [locations]
    if pubmed_data is not None:
        id_sources.insert(0, pubmed_data.iterfind("ArticleIdList/ArticleId"))
    authors = _authors(parts.get("AuthorList"))
    chemicals = _children(repeated["ChemicalList"], "Chemical")
    legacy_affiliation = _flat(parts.get("Affiliation"))
    if legacy_affiliation and authors and not authors[0].affiliations:
        first = authors[0]
        authors = (
            Author(
                first.last_name,
                first.fore_name,
                first.initials,
                first.collective_name,
                (legacy_affiliation,),
            ),
            *authors[1:],
        )
    return Article(
        pmid=pmid,
        version=version,
        title=title,
        abstract=_abstract(abstract),
        authors=authors,
        journal=_clean(child_text(journal, "Title")) or medline_ta or "",
        journal_abbrev=_clean(child_text(journal, "ISOAbbreviation")) or medline_ta or "",
        issn=_clean(child_text(journal, "ISSN")) or _clean(child_text(info, "ISSNLinking")),
        volume=_clean(child_text(issue, "Volume")),
        issue=_clean(child_text(issue, "Issue")),
        pages=_pages(parts.get("Pagination")),
        pub_date=date,
        mesh=_mesh(fields.get("MeshHeadingList")),
        keywords=_texts(_children(repeated["KeywordList"], "Keyword")),
        publication_types=_texts(_children([parts.get("PublicationTypeList")], "PublicationType")),
        languages=_texts(languages),
        article_ids=_article_ids(id_sources),
        chemicals=_texts(_children(chemicals, "NameOfSubstance")),
        medline_ta=medline_ta or "",
        issns=issns,
        grants=_grants(parts.get("GrantList")),
        status=_clean(mc.get("Status")),
        corrections=_corrections(fields.get("CommentsCorrectionsList")),
        supplementary=_texts(_children([fields.get("SupplMeshList")], "SupplMeshName")),
        electronic_date=electronic if electronic.year is not None else None,
        references=_references(pubmed_data),
        other_abstracts=_other_abstracts(repeated["OtherAbstract"]),
        record_dates=_record_dates(fields, pubmed_data),
        registry_numbers=_registry_numbers(chemicals),
        personal_subjects=_personal_subjects(fields.get("PersonalNameSubjectList")),
        secondary_sources=_secondary_sources(parts.get("DataBankList")),
    )


def _other_abstracts(elems: list[Element]) -> tuple[str, ...]:
    """Each ``OtherAbstract`` (another language's, a plain-language summary) as one text:
    PubMed's ``[tiab]`` and ``[tw]`` search them."""
    found = []
    for elem in elems:
        text = " ".join(s.text for s in _abstract(elem))
        if text:
            found.append(text)
    return tuple(found)


def _record_dates(
    fields: dict[object, Element], data: Element | None
) -> tuple[tuple[str, int], ...]:
    """``(status, YYYYMMDD)`` of each ``PubMedPubDate`` and of ``DateCompleted`` and
    ``DateRevised`` (as ``datecompleted``/``daterevised``): the record dates PubMed's
    ``[crdt]``, ``[edat]``, ``[mhda]``, ``[dcom]`` and ``[lr]`` search."""
    found: list[tuple[str, int]] = []
    for tag, status in (("DateCompleted", "datecompleted"), ("DateRevised", "daterevised")):
        if (elem := fields.get(tag)) is not None and (day := _ymd(elem)):
            found.append((status, day))
    history = None
    if data is not None:
        for child in data:
            if child.tag == "History":
                history = child
                break
    if history is not None:
        for entry in history:
            pub_status = entry.get("PubStatus")
            if entry.tag == "PubMedPubDate" and pub_status and (day := _ymd(entry)):
                found.append((pub_status.strip().lower(), day))
    return tuple(found)


def _ymd(elem: Element) -> int:
    """``Year``, ``Month``, ``Day`` (the order the DTD fixes for ``PubMedPubDate``,
    ``DateCompleted`` and ``DateRevised``) as ``YYYYMMDD``; 0 when they are not that."""
    parts = list(elem)[:3]
    if len(parts) < 3 or parts[0].tag != "Year":
        return 0
    try:
        year, month, day = (int(p.text or "") for p in parts)
    except ValueError:
        return 0
    if not (1000 <= year <= 2999 and 1 <= month <= 12 and 1 <= day <= 31):
        return 0
    return year * 10000 + month * 100 + day


def _registry_numbers(chemicals: list[Element]) -> tuple[str, ...]:
    """The ``RegistryNumber`` of each chemical: CAS numbers, EC numbers (``EC 3.4.21.-``),
    UNIIs; ``0`` (none assigned) is left out. PubMed's ``[rn]`` searches them."""
    numbers = (_clean(n.text) for n in _children(chemicals, "RegistryNumber"))
    return tuple(dict.fromkeys(n for n in numbers if n and n != "0"))


def _personal_subjects(subjects: Element | None) -> tuple[str, ...]:
    """``PersonalNameSubject`` names as ``Last Fore`` (``[ps]``; ``[tw]`` searches them)."""
    if subjects is None:
        return ()
    found = []
    for subject in subjects:
        parts = first_children(subject)
        name = " ".join(
            p for n in ("LastName", "ForeName", "Suffix") if (p := _clean(child_text(parts, n)))
        )
        if name:
            found.append(name)
    return tuple(found)


def _secondary_sources(banks: Element | None) -> tuple[str, ...]:
    """``DataBankList``: ``Name/Accession`` (``ClinicalTrials.gov/NCT00000000``), PubMed's
    Secondary Source ID that ``[si]`` and ``[tw]`` search."""
    if banks is None:
        return ()
    found = []
    for bank in banks:
        name = _clean(bank.findtext("DataBankName")) or ""
        for number in bank.iterfind("AccessionNumberList/AccessionNumber"):
            if value := _clean(number.text):
                found.append(f"{name}/{value}" if name else value)
    return tuple(found)


CITATION_LINK = "Cites"
"""The RefType of a reference-list entry (older files carried PMC reference lists this
way, thousands per file): a citation, not a notice about either article, so it is not
kept with the corrections (the reference lists are the citation graph's input)."""


def _corrections(links: Element | None) -> tuple[Correction, ...]:
    """``CommentsCorrectionsList``: every link but :data:`CITATION_LINK`, in order."""
    if links is None:
        return ()
    found = []
    for link in links:
        if link.tag != "CommentsCorrections":
            continue
        ref_type = (link.get("RefType") or "").strip()
        if not ref_type or ref_type == CITATION_LINK:
            continue
        source = pmid = note = None
        for child in link:
            tag = child.tag
            if tag == "RefSource" and source is None:
                source = _clean(child.text)
            elif tag == "PMID" and pmid is None:
                pmid = _int(child.text)
            elif tag == "Note" and note is None:
                note = _clean(child.text)
        found.append(Correction(ref_type, source, pmid, note))
    return tuple(found)


def _grants(grant_list: Element | None) -> tuple[Grant, ...]:
    if grant_list is None:
        return ()
    grants = []
    for grant in grant_list:
        if grant.tag == "Grant":
            parts = first_children(grant)
            found = Grant(
                *(_clean(child_text(parts, n)) for n in ("GrantID", "Acronym", "Agency", "Country"))
            )
            if found.grant_id or found.agency:
                grants.append(found)
    return tuple(grants)


def _book(elem: Element) -> Article | None:
    """A ``PubmedBookArticle`` (NCBI Bookshelf chapter or book) as an Article of kind book."""
    doc = elem.find("BookDocument")
    if doc is None:
        return None
    pmid_el = doc.find("PMID")
    pmid = _int(pmid_el.text) if pmid_el is not None else None
    if pmid is None or pmid_el is None:
        return None
    book = doc.find("Book")
    book_title = _flat(book.find("BookTitle")) if book is not None else ""
    chapter_title = _flat(doc.find("ArticleTitle"))
    publisher = _child_text(book, "Publisher/PublisherName")
    authors = _authors(doc.find("AuthorList"))
    if not authors and book is not None:
        authors = _authors(book.find("AuthorList"))
    date = pub_date(book.find("PubDate") if book is not None else None)
    if date.year is None:
        date = pub_date(doc.find("ContributionDate"))
    book_data = elem.find("PubmedBookData")
    if date.year is None:
        date = history_date(book_data)
    id_sources: list[Iterable[Element]] = [doc.iterfind("ArticleIdList/ArticleId")]
    if book_data is not None:
        id_sources.append(book_data.iterfind("ArticleIdList/ArticleId"))
    return Article(
        pmid=pmid,
        version=_int(pmid_el.get("Version")) or 1,
        title=chapter_title or book_title,
        abstract=_abstract(doc.find("Abstract")),
        authors=authors,
        journal=book_title if chapter_title else publisher or "",
        pub_date=date,
        keywords=_texts(doc.iterfind("KeywordList/Keyword")),
        publication_types=_texts(doc.iterfind("PublicationType")),
        languages=_texts(doc.iterfind("Language")),
        article_ids=_article_ids(id_sources),
        kind="book",
        references=_references(doc),
    )


def _abstract(abstract: Element | None) -> tuple[AbstractSection, ...]:
    if abstract is None:
        return ()
    sections = []
    for part in abstract:
        if part.tag != "AbstractText":
            continue
        text = flatten(part)
        if text:
            label = part.get("Label")
            category = part.get("NlmCategory")
            sections.append(AbstractSection(text, label or None, category or None))
    return tuple(sections)


def _authors(author_list: Element | None) -> tuple[Author, ...]:
    if author_list is None:
        return ()
    authors = []
    for author in author_list:
        if author.tag != "Author" or author.get("ValidYN") == "N":
            continue
        # one pass over the children: five findtext/iterfind calls per author cost a
        # third of the whole parse on author-heavy records
        last = fore = initials = collective = None
        info: list[str] = []
        direct: list[str] = []
        for child in author:
            tag = child.tag
            if tag == "LastName":
                last = last or _clean(child.text)
            elif tag == "ForeName":
                fore = fore or _clean(child.text)
            elif tag == "Initials":
                initials = initials or _clean(child.text)
            elif tag == "CollectiveName" and collective is None:
                collective = flatten(child) or None
            elif tag == "AffiliationInfo":
                for part in child:
                    if part.tag == "Affiliation" and (text := flatten(part)):
                        info.append(text)
            elif tag == "Affiliation" and (text := flatten(child)):
                direct.append(text)
        if last or collective or fore:  # fields in order: last, fore, initials, collective
            authors.append(Author(last, fore, initials, collective, tuple(info or direct)))
    return tuple(authors)


def _mesh(mesh_list: Element | None) -> tuple[MeshHeading, ...]:
    if mesh_list is None:
        return ()
    headings = []
    for heading in mesh_list:
        if heading.tag != "MeshHeading":
            continue
        descriptor: Element | None = None
        found: list[Element] = []
        for child in heading:  # one pass, not a find and an iterfind per heading
            tag = child.tag
            if tag == "QualifierName":
                found.append(child)
            elif tag == "DescriptorName" and descriptor is None:
                descriptor = child
        name = _clean(descriptor.text) if descriptor is not None else None
        if descriptor is None or not name:
            continue
        qualifiers = tuple(
            Qualifier(q_name, q.get("UI"), q.get("MajorTopicYN") == "Y")
            for q in found
            if (q_name := _clean(q.text))
        )
        headings.append(
            MeshHeading(
                name, descriptor.get("UI"), descriptor.get("MajorTopicYN") == "Y", qualifiers
            )
        )
    return tuple(headings)


def _pages(pagination: Element | None) -> str | None:
    if pagination is None:
        return None
    parts = first_children(pagination)
    medline = _clean(child_text(parts, "MedlinePgn"))
    if medline:
        return medline
    start = _clean(child_text(parts, "StartPage"))
    end = _clean(child_text(parts, "EndPage"))
    if start and end:
        return f"{start}-{end}"
    return start


def _article_ids(sources: Iterable[Iterable[Element]]) -> tuple[tuple[str, str], ...]:
    """``(id type, value)`` pairs, lower-case types, each pair once (DOIs compared caselessly)."""
    seen: set[tuple[str, str]] = set()
    out = []
    for source in sources:
        for elem in source:
            if elem.get("ValidYN") == "N":
                continue
            id_type = (elem.get("IdType") or elem.get("EIdType") or "").strip().lower()
            value = _clean(elem.text)
            if not id_type or not value:
                continue
            key = (id_type, value.lower() if id_type == "doi" else value)
            if key not in seen:
                seen.add(key)
                out.append((id_type, value))
    return tuple(out)


_REFERENCE_IDS = etree.XPath(
    "ReferenceList//Reference/ArticleIdList/ArticleId[@IdType='pubmed' or @IdType='doi']"
)
"""Every PMID and DOI of the references under a ``PubmedData`` or ``BookDocument``, nested
lists included, in document order: one compiled XPath in libxml2's C, where walking the
lists in Python cost ~250 us on a record of 40 references (a third of its parse)."""


_CITATIONS_WITHOUT_IDS = etree.XPath(
    "ReferenceList//Reference[not(ArticleIdList/ArticleId[@IdType='pubmed' or"
    " @IdType='doi'])]/Citation[contains(., '10.')]"
)
"""The citation strings of references that give no PMID or DOI as an ``ArticleId`` but
may quote a DOI in their text (``https://doi.org/10.1371/...``): many publishers' lists
are deposited that way. The ``contains`` test keeps libxml2 from handing Python the
strings that cannot hold one."""

_DOI_IN_TEXT = re.compile(r"\b10\.\d{4,9}/[^\s\"<>]+")
"""A DOI as Crossref describes modern ones (``10.`` + a 4-9 digit registrant + ``/`` +
a suffix without spaces); the sentence's closing punctuation is trimmed after."""


def doi_in_citation(text: str | None) -> str | None:
    """The first DOI a free-text citation quotes, without the punctuation that ends the
    sentence around it; None when it quotes none."""
    found = _DOI_IN_TEXT.search(text or "")
    if found is None:
        return None
    doi = found.group(0).rstrip(".,;:)]}'’”")
    return doi if "/" in doi and not doi.endswith("/") else None


CITATION_CHARS = 400
"""The longest reference ``Citation`` text kept (longer ones are cut, with an ellipsis):
NLM's are one line ("Arthritis Rheum. 1999 Mar;42(3):415-20"), publishers' a full
reference; a hostile record's 1 MB one must not grow every store that holds it."""


def _reference_citation(reference: Element | None) -> str | None:
    """The reference's ``Citation`` text, spaces normalised and cut at
    :data:`CITATION_CHARS`: what is shown for a reference not stored here."""
    if reference is None or not len(reference):
        return None
    first = reference[0]  # where NLM's DTD puts it; findtext's path walk costs ~3x
    text = _clean(first.text if first.tag == "Citation" else reference.findtext("Citation"))
    if text is not None and len(text) > CITATION_CHARS:
        text = text[: CITATION_CHARS - 1].rstrip() + "\u2026"
    return text


def _references(parent: Element | None) -> tuple[Reference, ...]:
    """The references that name a PMID or a DOI, each once, in the list's order, then
    those whose citation text alone quotes a DOI: what the citation graph is built from,
    each with its citation text. A reference naming neither (a bare citation string) is
    left out; a PMID is taken by :func:`pmid_from`'s rule, and only below 2^32 (the
    graph's 32-bit PMIDs; NCBI's have eight digits)."""
    if parent is None:
        return ()
    ids = cast("list[Element]", _REFERENCE_IDS(parent))
    quoted = [
        (doi, _reference_citation(citation.getparent()))
        for citation in cast("list[Element]", _CITATIONS_WITHOUT_IDS(parent))
        if (doi := doi_in_citation(citation.text)) is not None
    ]
    if not ids and not quoted:
        return ()
    found: dict[tuple[int, str | None], str | None] = {}
    current: Element | None = None
    pmid, doi = 0, None
    for elem in ids:
        id_list = elem.getparent()
        reference = id_list.getparent() if id_list is not None else None
        if reference is not current:
            if pmid or doi:
                found.setdefault((pmid, doi), _reference_citation(current))
            current, pmid, doi = reference, 0, None
        if elem.get("IdType") == "pubmed":
            if not pmid:
                text = elem.text
                if text and len(text) < 17 and text.isascii() and text.isdigit():
                    value: int | None = int(text)
                else:
                    value = _int(text)  # int() of 5,000 digits raises; this does not
                pmid = value if value and value < 2**32 else 0
        elif doi is None:
            doi = _clean(elem.text)
    if pmid or doi:
        found.setdefault((pmid, doi), _reference_citation(current))
    for doi, citation in quoted:
        found.setdefault((0, doi), citation)
    return tuple(Reference(p, d, c) for (p, d), c in found.items())


def _texts(elems: Iterable[Element]) -> tuple[str, ...]:
    found = []
    for elem in elems:
        text = flatten(elem)
        if text:
            found.append(text)
    return tuple(found)


def _children(parents: Iterable[Element | None], tag: str) -> list[Element]:
    """The ``tag`` children of each of ``parents``, in order (``iterfind("A/B")`` without
    ElementPath's cost, ~2 us a call)."""
    return [
        child for parent in parents if parent is not None for child in parent if child.tag == tag
    ]


def _flat(elem: Element | None) -> str:
    return flatten(elem) if elem is not None else ""


def _child_text(elem: Element | None, path: str) -> str | None:
    return _clean(elem.findtext(path)) if elem is not None else None


def _clean(text: str | None) -> str | None:
    if text is None:
        return None
    return normalise_space(text) or None


def _int(text: str | None) -> int | None:
    """A PMID or its Version: the one PMID rule (:func:`~medsearch.records.pmid_from`)."""
    return pmid_from(text)
