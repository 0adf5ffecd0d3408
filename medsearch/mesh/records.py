"""MeSH as medsearch holds it: descriptors and supplementary concepts, as parsed from
NLM's XML (:mod:`ingest.mesh_xml`) and stored in the corpus store
(:mod:`medsearch.mesh.tables`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AllowedQualifier:
    ui: str
    name: str
    abbreviation: str


@dataclass(frozen=True, slots=True)
class Descriptor:
    """A MeSH heading: ``terms`` are its entry terms (its name among them)."""

    ui: str
    name: str
    scope_note: str = ""
    tree_numbers: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    qualifiers: tuple[AllowedQualifier, ...] = ()
    descriptor_class: str = "1"
    actions: tuple[str, ...] = ()
    """UIs of the pharmacological actions (descriptors) MeSH gives this substance."""


@dataclass(frozen=True, slots=True)
class MappedHeading:
    """A heading a supplementary concept is mapped to (``major``: NLM's ``*``)."""

    descriptor_ui: str
    name: str
    qualifier_ui: str | None = None
    major: bool = False


@dataclass(frozen=True, slots=True)
class Supplemental:
    """A supplementary concept record (chemicals, protocols, rare diseases, organisms)."""

    ui: str
    name: str
    note: str = ""
    synonyms: tuple[str, ...] = ()
    headings: tuple[MappedHeading, ...] = ()
    actions: tuple[str, ...] = ()
    """UIs of the pharmacological actions (descriptors) MeSH gives this concept."""


@dataclass(frozen=True, slots=True)
class Subheading:
    """A qualifier of NLM's qualifier file (``qualYYYY.xml``): its place in the
    subheading tree (``therapy`` Y04.010 holds ``drug therapy`` Y04.010.???)."""

    ui: str
    name: str
    abbreviation: str = ""
    tree_numbers: tuple[str, ...] = ()


MeshRecord = Descriptor | Supplemental | Subheading
