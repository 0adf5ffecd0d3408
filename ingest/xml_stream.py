"""Reading a PubMed XML file record by record, within limits a hostile file cannot pass.

lxml's pull parser is fed :data:`READ_BYTES` at a time and fires only on the records
(an event for every element would cost more than the parse itself). Between two reads
the root's finished children are dropped, whatever they are, and the bytes and elements
of the record being read are checked against the limits of :mod:`ingest.sources`, so a
file fails (:class:`ParseError`, with the line) before it can take the memory: a record
of tiny elements, a gzip bomb of elements that are no record, junk after the last one.
No entity is resolved and no DTD loaded, local or remote, and libxml2 keeps its own
limits (no ``huge`` option): a text node of 10 MB at most, 256 levels of nesting, and
no entity expansion past its amplification factor (billion laughs).
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar, cast

from lxml import etree

from ingest.sources import (
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
from medsearch.errors import ParseError
from medsearch.records import Article, Deletion

Element = etree._Element
Record = Article | Deletion
T = TypeVar("T")

READ_BYTES = 64 * 1024
"""Bytes handed to libxml2 at a time; the limits are checked between two of them."""
_LXML_WHERE = re.compile(r",? line \d+, column \d+$")
_HUGE_HINT = re.compile(r",? (?:try|use) XML_PARSE_HUGE(?: option)?")
_TOO_MANY = (
    f"a record of over {MAX_RECORD_ELEMENTS:,} XML elements, which no real PubMed record comes near"
)


def records(
    stream: io.BufferedIOBase,
    root_tag: str,
    build: Callable[[Element], Record | None],
    path: Path,
) -> Iterator[Record]:
    """``build`` of each PubMed record of an open stream whose root is ``root_tag``."""
    return stream_records(stream, root_tag, build, path, RECORD_TAGS[root_tag])


def stream_records(
    stream: io.BufferedIOBase,
    root_tag: str,
    build: Callable[[Element], T | None],
    path: Path,
    record_tags: tuple[str, ...],
) -> Iterator[T]:
    """``build`` of each ``record_tags`` element of an open stream whose root is
    ``root_tag`` (PubMed's records, or NLM's MeSH records within the same limits).

    The root's start fires too, so that :class:`_Guard` holds the root and can drop what
    else it holds (nothing in a real file; millions of elements after the last record
    in a hostile one). An error of libxml2's is raised once the records before it were
    yielded, as a stream cut short yields what it had.
    """
    read = stream.read
    parser = etree.XMLPullParser(
        events=("start", "end"),
        tag=(root_tag, *record_tags),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
    )
    guard = _Guard(str(path))
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
            if elem.tag == root_tag:  # a nested one is no record either
                if event == "start" and guard.root is None:
                    guard.root = elem
                continue
            if event == "start":
                guard.in_record = True
                continue
            record = build(elem)
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

    def check_whole(self, record: object, elem: Element) -> None:
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


def sniff_root(path: Path) -> str:
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
            raise syntax_error(path, err) from err


def syntax_error(path: Path, err: etree.XMLSyntaxError) -> ParseError:
    """lxml's message without its position (given apart) nor libxml2's advice to lift
    its limits, which is for programmers."""
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
