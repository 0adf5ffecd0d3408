"""What an input file holds, read from its first bytes, and the limits a reader keeps to.

``medsearch ingest DIR`` meets whatever lies in a folder: NCBI's XML, PubMed's MEDLINE
exports (``.nbib``, or ``.txt`` as PubMed's "Save" writes them), PMC full texts and
OAI-PMH harvests (XML, but not citations), READMEs and licences. Only the first
:data:`SNIFF_BYTES` are read to tell them apart (through gzip when the bytes say so, not
the name), so a folder of 1,300 baseline files is classified in about a second and a
file never has to be read to its end to be set aside.

The limits are what keeps a damaged or hostile file from taking the machine's memory:
a reader fails the file (:class:`~medsearch.errors.ParseError`, naming the file and
where) once one record passes them, instead of building it. They sit far above any real
PubMed record, so a real file never meets them.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import cast

from medsearch.errors import ParseError
from medsearch.records import Article

try:  # ISA-L's inflate: the same bytes ~1.7x faster than zlib's (BENCHMARKS.md)
    from isal import igzip, isal_zlib

    def _gunzip(path: Path) -> io.BufferedIOBase:
        return cast(io.BufferedIOBase, igzip.open(path, "rb"))  # type: ignore[no-untyped-call]

    # its stub types the class as an instance
    _INFLATE_ERRORS: tuple[type[BaseException], ...] = (cast(type[Exception], isal_zlib.error),)
except ImportError:  # a platform without its wheel: the standard library's

    def _gunzip(path: Path) -> io.BufferedIOBase:
        return gzip.open(path, "rb")

    _INFLATE_ERRORS = ()
CORRUPT: tuple[type[BaseException], ...] = (zlib.error, *_INFLATE_ERRORS, gzip.BadGzipFile)
"""What a damaged gzip stream raises, with either inflater (a cut one: EOFError)."""

GZIP_MAGIC = b"\x1f\x8b"
SNIFF_BYTES = 64 * 1024
"""Read to find the root element: a prolog, DOCTYPE and comments come before it."""
RECORD_TAGS = {
    "PubmedArticleSet": ("PubmedArticle", "PubmedBookArticle", "DeleteCitation"),
    "MedlineCitationSet": ("MedlineCitation", "DeleteCitation"),
}
"""The PubMed roots, each with the elements that are its records."""

MAX_RECORD_BYTES = 32 * 1024 * 1024
"""Bytes of XML (decompressed) in one record, or between two records: 32 MiB.

PubMed's longest records are those of large collaborations (5,154 personal authors at
most, by NLM's author statistics, and investigator lists of thousands of names): a few
MB of XML, ~500 bytes a name with its affiliation. The real files beside the tests have
none over 60 KB. A file that passes this is not PubMed, and reading on would only hold
more of it in memory."""
MAX_GAP_BYTES = 1024 * 1024
"""Bytes of XML outside any record (before the first, between two, after the last):
1 MiB. A real file has a prolog and whitespace there; a gzip bomb of elements that are
no record (1 MB inflating to GBs) is stopped after this much, in a fraction of a second."""
MAX_RECORD_ELEMENTS = 500_000
"""Elements in one record. Memory follows elements more than bytes (lxml: ~130 bytes an
element, ~250 with its text, against 4 bytes for ``<x/>``), so a record of tiny elements
is stopped here, at ~130-250 MB, long before :data:`MAX_RECORD_BYTES`. The largest real
records have ~100,000 (an investigator list: ~7 elements a name)."""
MAX_FIELD_CHARS = 1_000_000
"""Characters in one stored field (a title, an abstract section, an affiliation ...).
Real abstracts stay under ~20,000; a longer field would be stored, indexed and shown as
it is, which for a hostile 800 MB title took GBs of memory and minutes to display."""
COUNT_EVERY = 1024 * 1024
"""Bytes of one record between two counts of its elements: a count walks the record, so
it runs only in records that are already large (none of the real ones)."""


class Kind(StrEnum):
    """What an input holds, as far as its first bytes tell."""

    PUBMED_XML = "PubMed XML"
    OTHER_XML = "other XML"
    MEDLINE = "MEDLINE"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Sniffed:
    """An input's kind, and for XML its root element's name."""

    kind: Kind
    root: str | None = None


MEDLINE_SUFFIXES = (".nbib", ".nbib.gz", ".medline", ".txt", ".txt.gz")
"""Names PubMed's MEDLINE exports carry; read as MEDLINE when the content says nothing
clearer (a damaged export then fails with the MEDLINE reader's message)."""
_XML_ROOT = re.compile(rb"<(?![?!])([^\s/>]+)")
_XML_COMMENT = re.compile(rb"<!--.*?-->", re.DOTALL)
_MEDLINE_START = re.compile(rb"(?:\xef\xbb\xbf)?\s*PMID- *\d")
"""The first line of every PubMed MEDLINE export: ``PMID- 12345678``."""


def open_input(path: Path) -> io.BufferedIOBase:
    """Open plain or gzipped bytes; gzip is recognised by its magic bytes, not the suffix."""
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == GZIP_MAGIC:
        return _gunzip(path)
    return path.open("rb")


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes:
    """The first ``size`` bytes (decompressed); a ParseError says why they cannot be read."""
    with stream_errors(path), open_input(path) as stream:
        return stream.read(size)


@contextmanager
def stream_errors(path: Path) -> Iterator[None]:
    """A file that cannot be read to its end (cut, damaged, gone) as the one ParseError
    line every reader gives, whichever inflater raised it."""
    try:
        yield
    except EOFError as err:
        raise ParseError(str(path), "truncated gzip stream") from err
    except CORRUPT as err:
        raise ParseError(str(path), "corrupt gzip stream") from err
    except OSError as err:
        raise ParseError(str(path), f"cannot read file ({err.strerror or err})") from err


def xml_root(head: bytes) -> str | None:
    """The first element's name in ``head``, past the prolog, DOCTYPE and comments."""
    match = _XML_ROOT.search(_XML_COMMENT.sub(b"", head))
    return match.group(1).decode("utf-8", "replace") if match else None


def sniff(head: bytes) -> Sniffed:
    """Tell PubMed XML, other XML and MEDLINE apart by their first bytes."""
    if _MEDLINE_START.match(head):
        return Sniffed(Kind.MEDLINE)
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"<"):
        return Sniffed(Kind.UNKNOWN)
    root = xml_root(text)
    if root is None:
        return Sniffed(Kind.UNKNOWN)
    return Sniffed(Kind.PUBMED_XML if root in RECORD_TAGS else Kind.OTHER_XML, root)


def sniff_file(path: Path) -> Sniffed:
    """:func:`sniff` of a file's first bytes; a file that cannot be read is UNKNOWN (the
    reader that takes it says what is wrong, in full)."""
    try:
        return sniff(read_head(path))
    except ParseError:
        return Sniffed(Kind.UNKNOWN)


def reads_as_medline(path: Path) -> bool:
    """Whether ``path`` goes to the MEDLINE reader: by content, else by its name."""
    kind = sniff_file(path).kind
    if kind is Kind.UNKNOWN:
        return path.name.lower().endswith(MEDLINE_SUFFIXES)
    return kind is Kind.MEDLINE


def oversized_field(article: Article) -> str | None:
    """The name of the first field of ``article`` longer than :data:`MAX_FIELD_CHARS`."""
    for name, text in _texts(article):
        if len(text) > MAX_FIELD_CHARS:
            return name
    return None


def _texts(a: Article) -> Iterator[tuple[str, str]]:
    yield "title", a.title
    for section in a.abstract:
        yield "abstract", section.text
        yield "abstract label", section.label or ""
    for author in a.authors:
        for part in (author.last_name, author.fore_name, author.initials, author.collective_name):
            yield "author", part or ""
        for affiliation in author.affiliations:
            yield "affiliation", affiliation
    for name, value in (
        ("journal", a.journal),
        ("journal abbreviation", a.journal_abbrev),
        ("ISSN", a.issn),
        ("volume", a.volume),
        ("issue", a.issue),
        ("pages", a.pages),
        ("publication date", a.pub_date.raw),
        ("publication date", a.pub_date.season),
    ):
        yield name, value or ""
    for heading in a.mesh:
        yield "MeSH heading", heading.descriptor
        for qualifier in heading.qualifiers:
            yield "MeSH qualifier", qualifier.name
    for group, values in (
        ("keyword", a.keywords),
        ("publication type", a.publication_types),
        ("language", a.languages),
        ("chemical", a.chemicals),
        ("supplementary concept", a.supplementary),
    ):
        for value in values:
            yield group, value
    for id_type, value in a.article_ids:
        yield f"{id_type} id", value
