# Over 450 lines: the MEDLINE format's whole tag vocabulary, a few lines per tag group.
"""PubMed's MEDLINE format (``.nbib``, MEDLINE ``.txt``): one file -> ``Iterator[Article]``.

What PubMed's "Save -> PubMed format" and "Send to -> Citation manager" write, and what
:mod:`medsearch.export` writes back: a record is a block of ``TAG - value`` lines (the
tag left-aligned in four columns), long values wrap onto lines indented by six spaces,
and a blank line ends the record. A researcher with such an export and no baseline
ingests it as it is; its records become the same :class:`Article` values the XML parser
makes, so the store, the indexes and every command treat them alike.

The format carries less than the XML: no MeSH or qualifier UIs, no NlmCategory of an
abstract section, no PMID version, and an abstract's sections only as ``LABEL: text``
run together. Sections are told apart again from their labels (:func:`_sections`);
``Author.fore_name`` is what FAU gives after the comma (which is the initials when
the record has no fore name).

A line that is none of a tag line, a continuation or a blank line, a record that does
not start with its PMID, bytes that are not UTF-8 and anything past the limits of
:mod:`ingest.sources` fail the file with a :class:`ParseError` naming the line.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from ingest.pubmed_xml import ParseStats
from ingest.sources import (
    MAX_FIELD_CHARS,
    MAX_GAP_BYTES,
    MAX_RECORD_BYTES,
    MAX_RECORD_ELEMENTS,
    open_input,
    stream_errors,
)
from ingest.text import SEASONS, day_number, normalise_space, parse_medline_date
from medsearch.errors import ParseError
from medsearch.notices import MEDLINE_LINKS
from medsearch.records import (
    MONTHS,
    AbstractSection,
    Article,
    Author,
    Correction,
    Grant,
    MeshHeading,
    PubDate,
    Qualifier,
    pmid_from,
)

MAX_LINE_BYTES = 4 * MAX_FIELD_CHARS
"""One line may hold a whole field (writers other than PubMed do not wrap), in UTF-8."""
_TAG_LINE = re.compile(r"([A-Z][A-Z0-9]{0,3}) *- ?(.*)")
_ID = re.compile(r"(.*\S)\s*\[([A-Za-z-]+)\]")
_ISSN = re.compile(r"(.*?)\s*\((?:Print|Electronic|Linking)\)")
_ACRONYM = re.compile(r"[A-Z]{1,4}_*")
_DATE = re.compile(r"(\d{4})(?: ([A-Z][a-z]{2})(?: (\d{1,2}))?)?")
_SEASON = re.compile(r"(\d{4}) (" + "|".join(SEASONS.values()) + ")")
_DEP = re.compile(r"(\d{4})(\d{2})(\d{2})")
_HISTORY = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?: \d{2}:\d{2})? \[pubmed\]")
_MONTH = {name.capitalize(): number for number, name in enumerate(MONTHS, start=1)}
_UPPER_LABEL = r"[A-Z]{2}[A-Z0-9 ,&/()'+-]*[A-Z0-9)]"
_TITLE_LABEL = r"[A-Z][a-z]+(?: [a-z]+){0,3}"
_SECTION_START = r"(?:^|(?<=[.?!;)\]\"'\u201d\u2019] ))"
_LABELS = {
    style: (re.compile(f"({style}): "), re.compile(f"{_SECTION_START}({style}): "))
    for style in (_UPPER_LABEL, _TITLE_LABEL)
}
"""Per label style: (the abstract starts with such a label, where each section starts)."""
_LINK = re.compile(r"(.*?)\.?\s*PMID:\s*(\d+)")
_SKIPPED_AUTHOR_TAGS = frozenset({"IR", "FIR", "IRAD", "ED", "FED"})
"""Investigators and editors: the XML parser keeps only the author list."""


Fields = list[tuple[str, str]]


def parse_file(path: Path | str, *, stats: ParseStats | None = None) -> Iterator[Article]:
    """Yield every record of a MEDLINE-format file (plain or gzipped), in order."""
    path = Path(path)
    stats = stats if stats is not None else ParseStats()
    if not path.is_file():
        raise ParseError(str(path), "no such file")
    with open_input(path) as stream, stream_errors(path):
        lines = _Lines(stream, str(path))
        for fields in _records(lines):
            article = _article(fields)
            if article is None:  # its PMID is not one (0, 20 digits): the rest is kept
                stats.skipped += 1
                if len(stats.bad_pmids) < 3:
                    stats.bad_pmids.append(fields[0][1][:24])
                continue
            if article.kind == "book":
                stats.books += 1
            else:
                stats.articles += 1
            yield article
    if not lines.records:
        raise ParseError(str(path), "no MEDLINE record (no line starting 'PMID- ')")


class _Lines:
    """A file's lines as text, numbered, within :data:`MAX_LINE_BYTES`."""

    def __init__(self, stream: io.BufferedIOBase, name: str) -> None:
        self.stream = stream
        self.name = name
        self.number = 0
        self.records = 0

    def __iter__(self) -> Iterator[str]:
        while raw := self.stream.readline(MAX_LINE_BYTES + 1):
            self.number += 1
            if len(raw) > MAX_LINE_BYTES:
                self.fail(f"a line longer than {MAX_LINE_BYTES:,} bytes")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                self.fail(f"not UTF-8 text (byte {err.start + 1} of the line)")
            if self.number == 1:
                text = text.removeprefix("\ufeff")
            yield text.rstrip("\r\n")

    def fail(self, problem: str) -> NoReturn:
        raise ParseError(self.name, problem, f"line {self.number:,}")


def _records(lines: _Lines) -> Iterator[Fields]:
    """Each record's ``(tag, value)`` fields, continuation lines joined with a space."""
    fields: list[tuple[str, list[str]]] = []
    size = gap = length = 0
    for line in lines:
        if not line.strip():
            if fields:
                lines.records += 1
                yield _joined(fields)
                fields, size = [], 0
            gap += len(line) + 1
            if gap > MAX_GAP_BYTES:
                lines.fail(f"over {MAX_GAP_BYTES // 2**20} MB of blank lines")
            continue
        gap = 0
        size += len(line) + 1
        if size > MAX_RECORD_BYTES:
            lines.fail(f"a record larger than {MAX_RECORD_BYTES // 2**20} MB")
        if line[0] in " \t":
            if not fields:
                lines.fail("a continuation line outside any field")
            text = line.strip()
            fields[-1][1].append(text)
            length += len(text) + 1
        else:
            match = _TAG_LINE.fullmatch(line)
            if match is None:
                lines.fail("not a MEDLINE line (expected 'TAG - value')")
            tag = match.group(1)
            if tag == "PMID" and fields:  # a writer that leaves out the blank line
                lines.records += 1
                yield _joined(fields)
                fields, size = [], len(line) + 1
            elif not fields and tag != "PMID":
                lines.fail(f"a MEDLINE record starts with its PMID line, not {tag!r}")
            if len(fields) >= MAX_RECORD_ELEMENTS:
                lines.fail(f"a record of over {MAX_RECORD_ELEMENTS:,} fields")
            fields.append((tag, [match.group(2)]))
            length = len(match.group(2))
        if length > MAX_FIELD_CHARS:
            tag = fields[-1][0]
            lines.fail(f"the {tag} field is longer than {MAX_FIELD_CHARS:,} characters")
    if fields:
        lines.records += 1
        yield _joined(fields)


def _joined(fields: list[tuple[str, list[str]]]) -> Fields:
    return [(tag, normalise_space(" ".join(parts))) for tag, parts in fields]


@dataclass(slots=True)
class _Draft:
    """An author as its FAU/AU/CN lines arrive, with the AD lines that follow."""

    full: str | None = None
    short: str | None = None
    collective: str | None = None
    affiliations: list[str] = field(default_factory=list)

    def author(self) -> Author:
        if self.collective:
            return Author(collective_name=self.collective, affiliations=tuple(self.affiliations))
        last = fore = initials = None
        if self.full:
            last, _, rest = self.full.partition(",")
            fore = rest.strip() or None
        short = self.short or ""
        head, _, tail = short.rpartition(" ")  # "Smith JA": the initials come last
        if last and short.startswith(last + " "):
            initials = short[len(last) + 1 :].strip() or None
        elif last and short != last and head:
            initials = tail
        elif not last:
            last, initials = (head, tail) if head else (short, None)
        return Author(last or None, fore, initials, None, tuple(self.affiliations))


def _article(fields: Fields) -> Article | None:
    """The Article of one record's fields, as the XML parser would make it."""
    pmid = pmid_from(fields[0][1])
    if pmid is None:
        return None
    values: dict[str, list[str]] = {}
    drafts: list[_Draft] = []
    unattached: list[str] = []  # AD before any author: the older, record-wide affiliation
    skipping = False
    for tag, value in fields:
        if not value:
            continue
        if tag in ("FAU", "CN") or (tag == "AU" and not _awaits_short_name(drafts)):
            drafts.append(_Draft())
        if tag in ("FAU", "AU", "CN"):
            skipping = False
            draft = drafts[-1]
            if tag == "FAU":
                draft.full = value
            elif tag == "AU":
                draft.short = value
            else:
                draft.collective = value
        elif tag in _SKIPPED_AUTHOR_TAGS:
            skipping = True
        elif tag == "AD":
            if skipping:
                continue
            (drafts[-1].affiliations if drafts else unattached).append(value)
        else:
            values.setdefault(tag, []).append(value)
    authors = [d.author() for d in drafts]
    if unattached and authors and not authors[0].affiliations:
        first = authors[0]
        authors[0] = Author(
            first.last_name,
            first.fore_name,
            first.initials,
            first.collective_name,
            tuple(unattached),
        )

    def one(tag: str) -> str | None:
        found = values.get(tag)
        return found[0] if found else None

    book_title = one("BTI")
    title = one("TI") or one("TT") or book_title or ""
    abstract = one("AB") or one("OAB")
    abbrev = one("TA")
    if book_title:
        journal = book_title if one("TI") else one("PB") or ""
    else:
        journal = one("JT") or abbrev or ""
    return Article(
        pmid=pmid,
        title=title,
        abstract=_sections(abstract) if abstract else (),
        authors=tuple(authors),
        journal=journal,
        journal_abbrev="" if book_title else abbrev or "",
        issn=_issn(values.get("IS", [])),
        volume=one("VI"),
        issue=one("IP"),
        pages=one("PG"),
        pub_date=_pub_date(values),
        mesh=tuple(h for line in values.get("MH", []) if (h := _heading(line)) is not None),
        keywords=tuple(values.get("OT", [])),
        publication_types=tuple(values.get("PT", [])),
        languages=tuple(values.get("LA", [])),
        article_ids=_article_ids(pmid, values),
        chemicals=tuple(c for line in values.get("RN", []) if (c := _chemical(line))),
        kind="book" if book_title else "article",
        corrections=tuple(
            _correction(MEDLINE_LINKS[tag], value) for tag, value in fields if tag in MEDLINE_LINKS
        ),
        medline_ta="" if book_title else abbrev or "",
        issns=_issns(values.get("IS", [])),
        grants=tuple(g for line in values.get("GR", []) if (g := _grant(line)) is not None),
        status=one("STAT"),
        supplementary=tuple(values.get("NM", [])),
        electronic_date=_electronic_date(values),
        other_abstracts=tuple(values.get("OAB", [])),
        record_dates=_record_dates(values),
        registry_numbers=tuple(
            dict.fromkeys(n for line in values.get("RN", []) if (n := _registry_number(line)))
        ),
        personal_subjects=tuple(values.get("PS", [])),
        secondary_sources=tuple(values.get("SI", [])),
    )


_RECORD_DATE_TAGS = {
    "DCOM": "datecompleted",
    "LR": "daterevised",
    "CRDT": "entrez",
    "EDAT": "pubmed",
    "MHDA": "medline",
}
"""MEDLINE's record-date tags, by the XML status they carry (see ``Article.record_dates``)."""
_SLASHED = re.compile(r"(\d{4})/(\d{2})/(\d{2})(?: \d{2}:\d{2})?(?: \[([a-z-]+)\])?")


def _record_dates(values: dict[str, list[str]]) -> tuple[tuple[str, int], ...]:
    """DCOM, LR, CRDT, EDAT and MHDA, then each PHST ``2019/06/28 00:00 [received]``;
    a status given twice keeps its first date."""
    found: dict[str, int] = {}
    for tag, status in _RECORD_DATE_TAGS.items():
        for line in values.get(tag, []):
            compact = _DEP.fullmatch(line)
            slashed = _SLASHED.fullmatch(line) if compact is None else None
            if (match := compact or slashed) is not None:
                year, month, day = (int(g) for g in match.groups()[:3])
                found.setdefault(status, year * 10000 + month * 100 + day)
    for line in values.get("PHST", []):
        if (match := _SLASHED.fullmatch(line)) is not None and match.group(4):
            year, month, day = (int(g) for g in match.groups()[:3])
            found.setdefault(match.group(4), year * 10000 + month * 100 + day)
    return tuple(found.items())


def _registry_number(line: str) -> str | None:
    """``9007-49-2 (DNA)`` -> ``9007-49-2``, ``EC 3.4.21.- (Serine Endopeptidases)`` ->
    ``EC 3.4.21.-``; ``0 (...)`` (no number assigned) -> None."""
    name = _chemical(line)
    number = line[: len(line) - len(name) - 2].strip() if name else line.strip()
    return number if number and number != "0" else None


def _correction(ref_type: str, line: str) -> Correction:
    """``Biosci Rep. 2020 Mar 27;40(3):. PMID: 32167152``: the source, then the PMID."""
    match = _LINK.fullmatch(line)
    if match is None:
        return Correction(ref_type, line or None)
    return Correction(ref_type, match.group(1).strip() or None, pmid_from(match.group(2)))


def _awaits_short_name(drafts: list[_Draft]) -> bool:
    """Whether an AU line completes the last FAU (PubMed writes FAU, then AU) rather
    than being an author of its own (older records have AU lines only)."""
    return bool(drafts) and drafts[-1].full is not None and drafts[-1].short is None


def _sections(text: str) -> tuple[AbstractSection, ...]:
    """``BACKGROUND: ... METHODS: ...`` back into labelled sections.

    An abstract is split only when it starts with a label, and then only at labels of the
    same style (all capitals, or a capitalised phrase like ``Methods and materials``)
    that follow the end of a sentence, so a colon inside a section (``ratio: 2``, ``HIV:``
    mid-sentence) stays text. A capitalised phrase counts only when a second one
    follows: an unstructured abstract may well open with ``Osteoporosis is common: ...``.
    """
    for style, (starts, splits) in _LABELS.items():
        if starts.match(text) is None:
            continue
        pieces = splits.split(text)  # ["", label, text, label, text, ...]
        if style is _TITLE_LABEL and len(pieces) < 5:
            continue
        return tuple(
            AbstractSection(body.strip(), label)
            for label, body in zip(pieces[1::2], pieces[2::2], strict=True)
            if body.strip()
        )
    return (AbstractSection(text),)


def _issn(lines: list[str]) -> str | None:
    """The journal's ISSN (print or electronic), else the linking ISSN, as the XML's
    Journal/ISSN then ISSNLinking; without the ``(Print)`` PubMed adds."""
    if not lines:
        return None
    line = sorted(lines, key=lambda text: text.endswith("(Linking)"))[0]  # stable
    match = _ISSN.fullmatch(line)
    return match.group(1) if match else line


def _issns(lines: list[str]) -> tuple[str, ...]:
    """Every ISSN of the journal (print, electronic, linking), each once, in order: what
    ``[ta]`` and ``--journal`` take, as the XML's ISSN and ISSNLinking."""
    found = ((m.group(1) if (m := _ISSN.fullmatch(line)) else line).strip() for line in lines)
    return tuple(dict.fromkeys(issn for issn in found if issn))


def _grant(line: str) -> Grant | None:
    """``R01 AG012345/AG/NIA NIH HHS/United States``: number, acronym, agency, country.

    A part is left out when the grant has none (``089396/Wellcome Trust/United Kingdom``),
    and UK numbers hold slashes themselves (``MR/N003284/1/Medical Research Council/
    United Kingdom``), so the parts are read from the end: the country, the agency, then
    an acronym when the part before the agency looks like one (``AG``, ``WT_``).
    """
    parts = [part.strip() for part in line.split("/")]
    if len(parts) < 3:
        return Grant(grant_id=line.strip() or None) if line.strip() else None
    *head, agency, country = parts
    acronym = head.pop() if len(head) > 1 and _ACRONYM.fullmatch(head[-1]) else None
    number = "/".join(head).strip()
    if not number and not agency:
        return None
    return Grant(number or None, acronym, agency or None, country or None)


def _pub_date(values: dict[str, list[str]]) -> PubDate:
    """DP as the XML's PubDate gives it; else DEP (ArticleDate), else the pubmed history."""
    dp = (values.get("DP") or [""])[0]
    if dp:
        if (regular := _DATE.fullmatch(dp)) is not None:
            year, month_name, day = regular.groups()
            month = _MONTH.get(month_name) if month_name else None
            if month is not None or month_name is None:
                return PubDate(int(year), month, day_number(day) if month else None)
        elif (seasonal := _SEASON.fullmatch(dp)) is not None:
            return PubDate(int(seasonal.group(1)), season=seasonal.group(2))
        date = parse_medline_date(dp)
        if date.year is not None:
            return date
    for line in values.get("DEP", []):
        if (dep := _DEP.fullmatch(line)) is not None:
            return _numeric_date(*dep.groups())
    for line in values.get("PHST", []):
        if (history := _HISTORY.fullmatch(line)) is not None:
            return _numeric_date(*history.groups())
    return PubDate()


def _electronic_date(values: dict[str, list[str]]) -> PubDate | None:
    """DEP, the XML's ArticleDate."""
    for line in values.get("DEP", []):
        if (dep := _DEP.fullmatch(line)) is not None:
            return _numeric_date(*dep.groups())
    return None


def _numeric_date(year: str, month: str, day: str) -> PubDate:
    number = int(month)
    if not 1 <= number <= 12:
        return PubDate(int(year))
    return PubDate(int(year), number, day_number(day))


def _heading(line: str) -> MeshHeading | None:
    """``Neoplasms/*drug therapy/genetics``: ``*`` marks a major topic."""
    descriptor, *qualifiers = (part.strip() for part in line.split("/"))
    name = descriptor.lstrip("*").strip()
    if not name:
        return None
    return MeshHeading(
        name,
        major=descriptor.startswith("*"),
        qualifiers=tuple(
            Qualifier(q.lstrip("*").strip(), major=q.startswith("*"))
            for q in qualifiers
            if q.lstrip("*").strip()
        ),
    )


def _chemical(line: str) -> str | None:
    """``0 (Antineoplastic Agents)`` -> its name, the text in the last, balanced parentheses."""
    if not line.endswith(")"):
        return None
    depth = 0
    for index in range(len(line) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(line[index], 0)
        if depth == 0:
            return line[index + 1 : -1].strip() or None
    return None


def _article_ids(pmid: int, values: dict[str, list[str]]) -> tuple[tuple[str, str], ...]:
    """As the XML's ArticleIdList then ELocationID give them: lower-case types, each once."""
    pairs: list[tuple[str, str]] = [("pubmed", str(pmid))]
    for line in values.get("AID", []):
        if (match := _ID.fullmatch(line)) is not None:
            pairs.append((match.group(2).lower(), match.group(1)))
    pairs += [("pmc", value) for value in values.get("PMC", [])]
    pairs += [("mid", value) for value in values.get("MID", [])]
    for line in values.get("LID", []):
        if (match := _ID.fullmatch(line)) is not None:
            pairs.append((match.group(2).lower(), match.group(1)))
    seen: set[tuple[str, str]] = set()
    out = []
    for id_type, value in pairs:
        key = (id_type, value.lower() if id_type == "doi" else value)
        if key not in seen:
            seen.add(key)
            out.append((id_type, value))
    return tuple(out)
