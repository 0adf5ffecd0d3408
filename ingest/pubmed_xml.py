"""Streaming PubMed/MEDLINE XML parser: one file -> ``Iterator[Article | Deletion]``.

Baseline and update files hold ~30K citations (~200 MB of XML each), so the parser
never builds the tree: lxml's pull parser fires only on the record elements, each
record is turned into frozen records and then cleared together with the siblings
already seen, which keeps memory flat whatever the file size. What a file may not hold
(a record past the limits of :mod:`ingest.sources`, a 10 MB text node) fails it before
it is built, so a hostile file cannot take the memory either.

Two roots are understood: ``PubmedArticleSet`` (baseline/update files and efetch
output: ``PubmedArticle``, ``PubmedBookArticle``, ``DeleteCitation``) and the older
``MedlineCitationSet`` (bare ``MedlineCitation`` records and ``DeleteCitation``).
Anything else, and every unreadable file, is a :class:`ParseError` naming the file and,
when known, the line. Because this is a generator, an error can surface after many
records were yielded; the ingest pipeline rolls the whole file back in that case.
"""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from lxml import etree

from ingest.sources import (
    CORRUPT,
    COUNT_EVERY,
    MAX_FIELD_CHARS,
    MAX_GAP_BYTES,
    MAX_RECORD_BYTES,
    MAX_RECORD_ELEMENTS,
    RECORD_TAGS,
    open_input,
    oversized_field,
    read_head,
    xml_root,
)
from ingest.text import (
    child_text,
    first_children,
    flatten,
    history_date,
    normalise_space,
    pub_date,
)
from medsearch.errors import ParseError
from medsearch.records import (
    AbstractSection,
    Article,
    Author,
    Deletion,
    MeshHeading,
    Qualifier,
)

log = logging.getLogger(__name__)

READ_BYTES = 64 * 1024
"""Bytes handed to libxml2 at a time; the limits are checked between two of them."""
_LXML_WHERE = re.compile(r",? line \d+, column \d+$")
_HUGE_HINT = re.compile(r",? (?:try|use) XML_PARSE_HUGE(?: option)?")
_TOO_MANY = (
    f"a record of over {MAX_RECORD_ELEMENTS:,} XML elements, which no real PubMed record comes near"
)

Element = etree._Element


@dataclass(slots=True)
class ParseStats:
    """What one pass over a file produced; pass one in to ``parse_file`` to fill it."""

    articles: int = 0
    books: int = 0
    deletions: int = 0
    skipped: int = 0  # records without a usable PMID


def parse_file(
    path: Path | str, *, stats: ParseStats | None = None
) -> Iterator[Article | Deletion]:
    """Yield every citation and deletion in a ``.xml`` or ``.xml.gz`` PubMed file, in order."""
    path = Path(path)
    stats = stats if stats is not None else ParseStats()
    if not path.is_file():
        raise ParseError(str(path), "no such file")
    root = _sniff_root(path)
    with open_input(path) as stream:
        try:
            yield from _records(stream, root, stats, str(path))
        except etree.XMLSyntaxError as err:
            raise _syntax_error(path, err) from err
        except EOFError as err:
            raise ParseError(str(path), "truncated gzip stream") from err
        except CORRUPT as err:
            raise ParseError(str(path), "corrupt gzip stream") from err
        except OSError as err:
            raise ParseError(str(path), f"cannot read file ({err.strerror or err})") from err


def _records(
    stream: io.BufferedIOBase, root_tag: str, stats: ParseStats, name: str
) -> Iterator[Article | Deletion]:
    """The records of an open stream, fed to libxml2 :data:`READ_BYTES` at a time.

    Events fire only on the records (and on the root's start, to hold the root): an
    event for every element would cost more than the parse. What else the root holds
    (nothing, in a real file; a hostile one may hold millions of elements after its last
    record) is dropped between two reads by :class:`_Guard`, which also fails the file
    once a record passes the limits in :mod:`ingest.sources`. No entity is resolved and
    no DTD loaded, local or remote, so an entity never reads a file or the network, and
    without libxml2's ``huge`` option a text node stops at 10 MB.
    """
    read = stream.read
    tags = RECORD_TAGS[root_tag]
    parser = etree.XMLPullParser(
        events=("start", "end"),
        tag=(root_tag, *tags),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
    )
    guard = _Guard(name)
    while True:
        chunk: bytes = read(READ_BYTES)
        failure: etree.XMLSyntaxError | None = None
        try:
            if chunk:
                parser.feed(chunk)
            else:
                parser.close()
        except etree.XMLSyntaxError as err:
            failure = err  # the records before the damage are yielded first
        for event, item in parser.read_events():
            elem = cast(Element, item)  # only element events were asked for
            if elem.tag == root_tag:
                if event == "start" and guard.root is None:
                    guard.root = elem
                continue
            if event == "start":
                guard.in_record = True
                continue
            record = _record(elem, stats)
            if guard.span + READ_BYTES > MAX_FIELD_CHARS:  # none of the real records
                guard.check_whole(record, elem)
            _release(elem)
            guard.record_ended()
            if record is not None:
                yield record
        if failure is not None:
            raise failure
        if not chunk:
            return
        guard.fed(len(chunk))


class _Guard:
    """What one file's parse holds between two reads, kept within the limits.

    ``span``: bytes fed since the last record ended: the record being read
    (``in_record``), or whatever lies between two records.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.root: Element | None = None
        self.span = 0
        self.in_record = False
        self._counted_at = 0  # ``span`` at the last count of the open record's elements

    def record_ended(self) -> None:
        self.span = self._counted_at = 0
        self.in_record = False

    def fed(self, size: int) -> None:
        """After ``size`` more bytes: drop the root's finished children, check the limits."""
        self.span += size
        root = self.root
        if root is None or not len(root):
            current = None
        else:
            if len(root) > 1:
                del root[:-1]  # only the last child may still be open
            current = root[-1]
        where = f"line {current.sourceline}" if current is not None else None
        if self.in_record and self.span > MAX_RECORD_BYTES:
            problem = (
                f"a record larger than {MAX_RECORD_BYTES // 2**20} MB, which no real PubMed"
                " record comes near"
            )
            raise ParseError(self.name, problem, where)
        if not self.in_record and self.span > MAX_GAP_BYTES:
            problem = f"over {MAX_GAP_BYTES // 2**20} MB of XML outside any PubMed record"
            raise ParseError(self.name, problem, where)
        if current is not None and self.span - self._counted_at >= COUNT_EVERY:
            self._counted_at = self.span
            if sum(1 for _ in current.iter()) > MAX_RECORD_ELEMENTS:
                raise ParseError(self.name, _TOO_MANY, where)

    def check_whole(self, record: Article | Deletion | None, elem: Element) -> None:
        """Check a finished record that may be long enough to pass a limit: its elements
        (which may have ended before the next count) and its fields."""
        if sum(1 for _ in elem.iter()) > MAX_RECORD_ELEMENTS:
            raise ParseError(self.name, _TOO_MANY, f"line {elem.sourceline}")
        if isinstance(record, Article) and (field := oversized_field(record)) is not None:
            problem = (
                f"the {field} of PMID {record.pmid} is longer than {MAX_FIELD_CHARS:,}"
                " characters, which no real PubMed record comes near"
            )
            raise ParseError(self.name, problem, f"line {elem.sourceline}")


def _sniff_root(path: Path) -> str:
    """The root element's name, read from the first bytes so a wrong file fails fast."""
    head = read_head(path)
    if not head.strip():
        raise ParseError(str(path), "empty file")
    root = xml_root(head)
    if root is None:
        if b"<" not in head:
            raise ParseError(str(path), "not XML (no element found)", "line 1")
        # Let lxml say precisely what is wrong with the prolog.
        _raise_first_syntax_error(path)
        raise ParseError(str(path), "malformed XML (no root element)")
    if root not in RECORD_TAGS:
        raise ParseError(str(path), f"not PubMed XML (root element <{root}>)")
    return root


def _raise_first_syntax_error(path: Path) -> None:
    with open_input(path) as stream:
        try:
            for _event, elem in etree.iterparse(stream, events=("end",), load_dtd=False):
                elem.clear()
        except etree.XMLSyntaxError as err:
            raise _syntax_error(path, err) from err


def _syntax_error(path: Path, err: etree.XMLSyntaxError) -> ParseError:
    message = _LXML_WHERE.sub("", str(err.msg or err)).strip()
    message, limits = _HUGE_HINT.subn("", message)
    if limits:  # libxml2's own limits (10 MB a text node, 256 levels deep)
        message += ", a limit no real PubMed file comes near"
    if len(message) > 120:
        message = message[:117] + "..."
    position = f"line {err.lineno}" if err.lineno else None
    return ParseError(str(path), f"malformed XML: {message}", position)


def _release(elem: Element) -> None:
    """Free a finished record and the earlier siblings lxml still links to."""
    elem.clear(keep_tail=True)  # type: ignore[call-arg]  # lxml-stubs predates keep_tail
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


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
        pmids = tuple(p for p in (_int(e.text) for e in elem.iterfind("PMID")) if p is not None)
        stats.deletions += 1
        return Deletion(pmids=pmids)
    if record is None:
        stats.skipped += 1
        log.warning("skipped a <%s> record without a PMID", tag)
    elif record.kind == "book":
        stats.books += 1
    else:
        stats.articles += 1
    return record


def _citation(mc: Element, pubmed_data: Element | None) -> Article | None:
    """A ``MedlineCitation`` (plus its ``PubmedData`` sibling when there is one)."""
    fields: dict[object, Element] = {}
    repeated: dict[object, list[Element]] = {"KeywordList": [], "ChemicalList": []}
    for child in mc:  # one pass; KeywordList repeats (one per owner)
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
    title = _flat(parts.get("ArticleTitle")) or _flat(parts.get("VernacularTitle"))
    abstract = parts.get("Abstract")
    if abstract is None:
        abstract = fields.get("OtherAbstract")
    date = pub_date(issue.get("PubDate"))
    if date.year is None:
        date = pub_date(parts.get("ArticleDate"))
    if date.year is None:
        date = history_date(pubmed_data)
    id_sources: list[Iterable[Element]] = [locations]
    if pubmed_data is not None:
        id_sources.insert(0, pubmed_data.iterfind("ArticleIdList/ArticleId"))
    authors = _authors(parts.get("AuthorList"))
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
        chemicals=_texts(
            _children(_children(repeated["ChemicalList"], "Chemical"), "NameOfSubstance")
        ),
    )


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
    if text is None:
        return None
    text = text.strip()
    return int(text) if text.isdigit() else None
