"""NLM's MeSH XML (``desc20XX.xml``, ``supp20XX.xml``, gzipped or not) record by record.

The files are described by NLM's DTDs (``nlmdescriptorrecordset_20XX0101.dtd``,
``nlmsupplementalrecordset_20XX0101.dtd``; https://www.nlm.nih.gov/mesh/xmlmesh.html).
A ``DescriptorRecord`` holds its UI and name, dates, ``AllowableQualifiersList``,
notes, ``TreeNumberList`` and a ``ConceptList`` whose concepts carry the scope note (the
preferred concept's) and a ``TermList`` of entry terms. A ``SupplementalRecord`` holds
its UI and name, a ``HeadingMappedToList`` (the descriptors, a ``*`` before the UI
marking a major one, optionally with a qualifier) and its own ``ConceptList``.

Only what search needs is kept; every other element (``PharmacologicalActionList``,
``EntryCombinationList``, ``SeeRelatedList``, ``PreviousIndexingList``, thesaurus ids,
dates...) is skipped, so next year's additions cost nothing. Files are streamed with
the same limits as PubMed's (:mod:`ingest.xml_stream`): a 300 MB descriptor file never
sits in memory, and a hostile one fails with a line number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from lxml import etree

from ingest.sources import open_input, read_head, stream_errors, xml_root
from ingest.xml_stream import stream_records, syntax_error
from medsearch.errors import ParseError
from medsearch.mesh.records import (
    AllowedQualifier,
    Descriptor,
    MappedHeading,
    MeshRecord,
    Supplemental,
)

Element = etree._Element

DESCRIPTOR_ROOT = "DescriptorRecordSet"
SUPPLEMENTAL_ROOT = "SupplementalRecordSet"
_RECORD = {DESCRIPTOR_ROOT: "DescriptorRecord", SUPPLEMENTAL_ROOT: "SupplementalRecord"}
_DTD_YEAR = re.compile(rb"nlm(?:descriptor|supplemental)recordset_(\d{4})\d{4}\.dtd")
_NAME_YEAR = re.compile(r"(?:desc|supp)(\d{4})")


def mesh_kind(path: Path) -> str:
    """The file's root element, :data:`DESCRIPTOR_ROOT` or :data:`SUPPLEMENTAL_ROOT`;
    anything else (a qualifier file, PubMed XML) is refused by name."""
    head = read_head(path)
    root = xml_root(head) if head.strip() else None
    if root not in _RECORD:
        found = f"root element <{root}>" if root else "no XML root element"
        raise ParseError(str(path), f"not a MeSH descriptor or supplementary file ({found})")
    return root


def mesh_year(path: Path) -> int | None:
    """The MeSH year a file belongs to: its DTD's date (``..._20250101.dtd``), else its
    name (``desc2025.xml``); None when neither says."""
    if (found := _DTD_YEAR.search(read_head(path))) is not None:
        return int(found.group(1))
    if (named := _NAME_YEAR.search(path.name)) is not None:
        return int(named.group(1))
    return None


def parse_mesh(path: Path) -> Iterator[MeshRecord]:
    """Every descriptor or supplementary record of ``path``, in file order."""
    root = mesh_kind(path)
    build: Callable[[Element], MeshRecord | None] = (
        _descriptor if root == DESCRIPTOR_ROOT else _supplemental
    )
    with stream_errors(path), open_input(path) as stream:
        try:
            found: Iterator[MeshRecord] = stream_records(
                stream, root, build, path, (_RECORD[root],)
            )
            yield from found
        except etree.XMLSyntaxError as err:
            raise syntax_error(path, err) from err


def _text(elem: Element | None, path: str = "String") -> str:
    if elem is None:
        return ""
    found = elem.find(path) if path else elem
    if found is None:
        return ""
    return " ".join("".join(str(t) for t in found.itertext()).split())


def _concepts(record: Element) -> tuple[list[str], str]:
    """Entry terms (the preferred first, each once) and the preferred concept's scope note."""
    terms: list[str] = []
    note = ""
    concepts = record.find("ConceptList")
    for concept in concepts if concepts is not None else ():
        if concept.tag != "Concept":
            continue
        preferred = concept.get("PreferredConceptYN") == "Y"
        if preferred and not note:
            note = _text(concept, "ScopeNote")
        term_list = concept.find("TermList")
        for term in term_list if term_list is not None else ():
            if term.tag == "Term" and (text := _text(term)):
                if preferred and term.get("RecordPreferredTermYN") == "Y":
                    terms.insert(0, text)
                else:
                    terms.append(text)
    return list(dict.fromkeys(terms)), note


def _descriptor(record: Element) -> Descriptor | None:
    ui = _text(record, "DescriptorUI")
    name = _text(record.find("DescriptorName"))
    if not ui or not name:
        return None
    terms, note = _concepts(record)
    trees = record.find("TreeNumberList")
    qualifiers: list[AllowedQualifier] = []
    allowed = record.find("AllowableQualifiersList")
    for item in allowed if allowed is not None else ():
        referred = item.find("QualifierReferredTo")
        if referred is None:
            continue
        q_ui, q_name = _text(referred, "QualifierUI"), _text(referred.find("QualifierName"))
        if q_ui and q_name:
            qualifiers.append(AllowedQualifier(q_ui, q_name, _text(item, "Abbreviation")))
    return Descriptor(
        ui=ui,
        name=name,
        scope_note=note,
        tree_numbers=tuple(t for e in (trees if trees is not None else ()) if (t := _text(e, ""))),
        terms=tuple(dict.fromkeys([name, *terms])),
        qualifiers=tuple(qualifiers),
        descriptor_class=record.get("DescriptorClass", "1"),
    )


def _supplemental(record: Element) -> Supplemental | None:
    ui = _text(record, "SupplementalRecordUI")
    name = _text(record.find("SupplementalRecordName"))
    if not ui or not name:
        return None
    terms, _note = _concepts(record)
    headings: list[MappedHeading] = []
    mapped = record.find("HeadingMappedToList")
    for item in mapped if mapped is not None else ():
        referred = item.find("DescriptorReferredTo")
        if referred is None:
            continue
        raw = _text(referred, "DescriptorUI")
        qualifier = item.find("QualifierReferredTo")
        headings.append(
            MappedHeading(
                descriptor_ui=raw.lstrip("*"),
                name=_text(referred.find("DescriptorName")),
                qualifier_ui=_text(qualifier, "QualifierUI") or None,
                major=raw.startswith("*"),
            )
        )
    return Supplemental(
        ui=ui,
        name=name,
        note=_text(record, "Note"),
        synonyms=tuple(dict.fromkeys([name, *terms])),
        headings=tuple(h for h in headings if h.descriptor_ui),
    )
