"""NLM's MeSH XML (``desc20XX.xml``, ``supp20XX.xml``, ``qual20XX.xml``, gzipped or not)
record by record.

The files are described by NLM's DTDs (``nlmdescriptorrecordset_20XX0101.dtd``,
``nlmsupplementalrecordset_20XX0101.dtd``; https://www.nlm.nih.gov/mesh/xmlmesh.html).
A ``DescriptorRecord`` holds its UI and name, dates, ``AllowableQualifiersList``,
notes, ``TreeNumberList`` and a ``ConceptList`` whose concepts carry the scope note (the
preferred concept's) and a ``TermList`` of entry terms. A ``SupplementalRecord`` holds
its UI and name, a ``HeadingMappedToList`` (the descriptors, a ``*`` before the UI
marking a major one, optionally with a qualifier) and its own ``ConceptList``. Both
carry a ``PharmacologicalActionList``: the action descriptors MeSH gives a substance
(what ``[pa]`` searches). A ``QualifierRecord`` (``nlmqualifierrecordset_20XX0101.dtd``)
holds a subheading's UI, name and ``TreeNumberList`` (its place in the subheading tree,
which ``[sh]`` explodes through), and its abbreviation on its terms.

Only what search needs is kept; every other element (``EntryCombinationList``,
``SeeRelatedList``, ``PreviousIndexingList``, thesaurus ids, dates...) is skipped, so
next year's additions cost nothing. Files are streamed with the same limits as
PubMed's (:mod:`ingest.xml_stream`): a 300 MB descriptor file never sits in memory, and
a hostile one fails with a line number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from lxml import etree

from ingest.sources import open_input, read_head, stream_errors, xml_root
from ingest.xml_stream import stream_records, syntax_error
from medsearch.errors import ParseError
from medsearch.mesh.records import (
    AllowedQualifier,
    Descriptor,
    MappedHeading,
    MeshRecord,
    Subheading,
    Supplemental,
)

Element = etree._Element

DESCRIPTOR_ROOT = "DescriptorRecordSet"
SUPPLEMENTAL_ROOT = "SupplementalRecordSet"
QUALIFIER_ROOT = "QualifierRecordSet"
_RECORD = {
    DESCRIPTOR_ROOT: "DescriptorRecord",
    SUPPLEMENTAL_ROOT: "SupplementalRecord",
    QUALIFIER_ROOT: "QualifierRecord",
}
_DTD_YEAR = re.compile(rb"nlm(?:descriptor|supplemental|qualifier)recordset_(\d{4})\d{4}\.dtd")
_NAME_YEAR = re.compile(r"(?:desc|supp|qual)(\d{4})")


def mesh_kind(path: Path) -> str:
    """The file's root element, :data:`DESCRIPTOR_ROOT`, :data:`SUPPLEMENTAL_ROOT` or
    :data:`QUALIFIER_ROOT`; anything else (PubMed XML) is refused by name."""
    head = read_head(path)
    root = xml_root(head) if head.strip() else None
    if root not in _RECORD:
        found = f"root element <{root}>" if root else "no XML root element"
        raise ParseError(
            str(path), f"not a MeSH descriptor, supplementary or qualifier file ({found})"
        )
    return root


def mesh_year(path: Path) -> int | None:
    """The MeSH year a file belongs to: its DTD's date (``..._20250101.dtd``), else its
    name (``desc2025.xml``); None when neither says."""
    if (found := _DTD_YEAR.search(read_head(path))) is not None:
        return int(found.group(1))
    if (named := _NAME_YEAR.search(path.name)) is not None:
        return int(named.group(1))
    return None


MAX_RECORD_CHARS = 1_000_000
"""Characters a MeSH record keeps (names, terms, notes, tree numbers): the largest real
ones keep ~20,000. Within PubMed's XML limits a record could keep 32 MB: 60 of them
once took 3.47 GB of memory and left a 4.6 GB store."""
MAX_RECORD_ROWS = 10_000
"""Terms, tree numbers, qualifiers, mapped headings and pharmacological actions of one
record (real: a few hundred)."""


def parse_mesh(path: Path) -> Iterator[MeshRecord]:
    """Every descriptor, supplementary or qualifier record of ``path``, in file order;
    one past :data:`MAX_RECORD_CHARS` or :data:`MAX_RECORD_ROWS` fails the file."""
    root = mesh_kind(path)
    builders: dict[str, Callable[[Element], MeshRecord | None]] = {
        DESCRIPTOR_ROOT: _descriptor,
        SUPPLEMENTAL_ROOT: _supplemental,
        QUALIFIER_ROOT: _subheading,
    }
    build = builders[root]

    def checked(elem: Element) -> MeshRecord | None:
        record = build(elem)
        if record is not None:
            _check_size(record, path, cast(int | None, elem.sourceline))
        return record

    with stream_errors(path), open_input(path) as stream:
        try:
            found: Iterator[MeshRecord] = stream_records(
                stream, root, checked, path, (_RECORD[root],)
            )
            yield from found
        except etree.XMLSyntaxError as err:
            raise syntax_error(path, err) from err


def _check_size(record: MeshRecord, path: Path, line: int | None) -> None:
    if isinstance(record, Descriptor):
        texts = [record.name, record.scope_note, *record.terms, *record.tree_numbers]
        texts += [q.name for q in record.qualifiers]
        texts += record.actions
        rows = len(record.terms) + len(record.tree_numbers) + len(record.qualifiers)
        rows += len(record.actions)
    elif isinstance(record, Supplemental):
        texts = [record.name, record.note, *record.synonyms, *(h.name for h in record.headings)]
        texts += record.actions
        rows = len(record.synonyms) + len(record.headings) + len(record.actions)
    else:
        texts = [record.name, record.abbreviation, *record.tree_numbers]
        rows = len(record.tree_numbers)
    where = f"line {line}" if line else None
    if rows > MAX_RECORD_ROWS:
        problem = (
            f"MeSH record {record.ui} has {rows:,} terms, tree numbers and qualifiers;"
            f" the limit is {MAX_RECORD_ROWS:,}"
        )
        raise ParseError(str(path), problem, where)
    if (chars := sum(map(len, texts))) > MAX_RECORD_CHARS:
        problem = (
            f"MeSH record {record.ui} holds {chars:,} characters of text;"
            f" the limit is {MAX_RECORD_CHARS:,}"
        )
        raise ParseError(str(path), problem, where)


def _text(elem: Element | None, path: str) -> str:
    """The stripped text at ``path`` under ``elem`` (lxml's C-level ``findtext``: NLM's
    strings hold no markup); "" when absent."""
    if elem is None:
        return ""
    return (elem.findtext(path) or "").strip()


def _note(elem: Element, path: str) -> str:
    """A note's text with its line breaks and indentation made single spaces."""
    return " ".join((elem.findtext(path) or "").split())


def _xpath(path: str) -> Callable[[Element], list[str]]:
    """A compiled XPath returning plain strings: a record's 15-40 qualifiers and terms in
    one C-level call each rather than one ``findtext`` per element (3x the import)."""
    compiled = etree.XPath(path, smart_strings=False)
    return lambda elem: [str(t) for t in cast(list[Any], compiled(elem))]


_TERMS = _xpath("ConceptList/Concept/TermList/Term/String/text()")
_SCOPE = _xpath("ConceptList/Concept[@PreferredConceptYN='Y']/ScopeNote/text()")
_ALLOWED = "AllowableQualifiersList/AllowableQualifier/"
_QUALIFIER_UIS = _xpath(_ALLOWED + "QualifierReferredTo/QualifierUI/text()")
_QUALIFIER_NAMES = _xpath(_ALLOWED + "QualifierReferredTo/QualifierName/String/text()")
_ABBREVIATIONS = _xpath(_ALLOWED + "Abbreviation/text()")
_TREES = _xpath("TreeNumberList/TreeNumber/text()")
_ACTIONS = _xpath(
    "PharmacologicalActionList/PharmacologicalAction/DescriptorReferredTo/DescriptorUI/text()"
)
_ABBREVIATION = _xpath(
    "ConceptList/Concept[@PreferredConceptYN='Y']/TermList/Term/Abbreviation/text()"
)


def _actions(record: Element) -> tuple[str, ...]:
    """The UIs of the record's pharmacological actions, each once, in file order."""
    return tuple(dict.fromkeys(u.strip() for u in _ACTIONS(record) if u.strip()))


def _concepts(record: Element) -> tuple[list[str], str]:
    """Entry terms (each once, in file order) and the preferred concept's scope note."""
    terms = [t.strip() for t in _TERMS(record)]
    scope = _SCOPE(record)
    return list(dict.fromkeys(t for t in terms if t)), " ".join(scope[0].split()) if scope else ""


def _descriptor(record: Element) -> Descriptor | None:
    ui = _text(record, "DescriptorUI")
    name = _text(record, "DescriptorName/String")
    if not ui or not name:
        return None
    terms, note = _concepts(record)
    uis, names, abbreviations = (
        _QUALIFIER_UIS(record),
        _QUALIFIER_NAMES(record),
        _ABBREVIATIONS(record),
    )
    if not len(uis) == len(names) == len(abbreviations):  # not as the DTD has it: one by one
        uis, names, abbreviations = _qualifiers_one_by_one(record)
    trees = (t.strip() for t in _TREES(record))
    return Descriptor(
        ui=ui,
        name=name,
        scope_note=note,
        tree_numbers=tuple(t for t in trees if t),
        terms=tuple(dict.fromkeys([name, *terms])),
        qualifiers=tuple(
            AllowedQualifier(u.strip(), n.strip(), a.strip())
            for u, n, a in zip(uis, names, abbreviations, strict=True)
        ),
        descriptor_class=record.get("DescriptorClass", "1"),
        actions=_actions(record),
    )


def _qualifiers_one_by_one(record: Element) -> tuple[list[str], list[str], list[str]]:
    uis: list[str] = []
    names: list[str] = []
    abbreviations: list[str] = []
    for item in record.iterfind("AllowableQualifiersList/AllowableQualifier"):
        q_ui = _text(item, "QualifierReferredTo/QualifierUI")
        q_name = _text(item, "QualifierReferredTo/QualifierName/String")
        if q_ui and q_name:
            uis.append(q_ui)
            names.append(q_name)
            abbreviations.append(_text(item, "Abbreviation"))
    return uis, names, abbreviations


def _supplemental(record: Element) -> Supplemental | None:
    ui = _text(record, "SupplementalRecordUI")
    name = _text(record, "SupplementalRecordName/String")
    if not ui or not name:
        return None
    terms, _scope = _concepts(record)
    headings: list[MappedHeading] = []
    for item in record.iterfind("HeadingMappedToList/HeadingMappedTo"):
        raw = _text(item, "DescriptorReferredTo/DescriptorUI")
        headings.append(
            MappedHeading(
                descriptor_ui=raw.lstrip("*"),
                name=_text(item, "DescriptorReferredTo/DescriptorName/String"),
                qualifier_ui=_text(item, "QualifierReferredTo/QualifierUI") or None,
                major=raw.startswith("*"),
            )
        )
    return Supplemental(
        ui=ui,
        name=name,
        note=_note(record, "Note"),
        synonyms=tuple(dict.fromkeys([name, *terms])),
        headings=tuple(h for h in headings if h.descriptor_ui),
        actions=_actions(record),
    )


def _subheading(record: Element) -> Subheading | None:
    ui = _text(record, "QualifierUI")
    name = _text(record, "QualifierName/String")
    if not ui or not name:
        return None
    abbreviations = [a.strip() for a in _ABBREVIATION(record) if a.strip()]
    trees = (t.strip() for t in _TREES(record))
    return Subheading(
        ui=ui,
        name=name,
        abbreviation=abbreviations[0] if abbreviations else "",
        tree_numbers=tuple(t for t in trees if t),
    )
