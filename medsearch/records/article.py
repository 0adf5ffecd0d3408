"""One PubMed record and its parts, as parsed from XML and kept in the store.

All frozen dataclasses built from tuples, so they hash, pickle cheaply between the
parser processes and the writer, and cannot be mutated behind a cache's back. An
:class:`Article` round-trips through a plain ``dict`` (``to_dict`` / ``from_dict``),
which is what the store keeps as JSON and what ``--json`` prints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@dataclass(frozen=True, slots=True)
class AbstractSection:
    """One ``AbstractText`` element: structured abstracts keep their label."""

    text: str
    label: str | None = None
    category: str | None = None  # NlmCategory: BACKGROUND, METHODS, RESULTS, ...


@dataclass(frozen=True, slots=True)
class Author:
    last_name: str | None = None
    fore_name: str | None = None
    initials: str | None = None
    collective_name: str | None = None
    affiliations: tuple[str, ...] = ()

    @property
    def display(self) -> str:
        """``Smith JA`` as PubMed prints it, or the collective name."""
        if self.collective_name:
            return self.collective_name
        parts = [p for p in (self.last_name, self.initials or self.fore_name) if p]
        return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Qualifier:
    name: str
    ui: str | None = None
    major: bool = False


@dataclass(frozen=True, slots=True)
class MeshHeading:
    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: tuple[Qualifier, ...] = ()

    @property
    def is_major(self) -> bool:
        """PubMed's [majr]: the descriptor or any of its qualifiers is a major topic."""
        return self.major or any(q.major for q in self.qualifiers)


@dataclass(frozen=True, slots=True)
class Grant:
    """One ``GrantList/Grant``: what PubMed's ``[gr]`` searches."""

    grant_id: str | None = None
    acronym: str | None = None
    agency: str | None = None
    country: str | None = None


@dataclass(frozen=True, slots=True)
class Correction:
    """One ``CommentsCorrections`` link: another PubMed record about this one, or this
    record about another (``RetractionIn``/``RetractionOf``, ``ErratumIn``/``ErratumFor``,
    ``CommentOn`` ...). ``ref_type`` is the XML's RefType verbatim, whichever format the
    record came in, so :mod:`medsearch.notices` has one vocabulary to read."""

    ref_type: str
    source: str | None = None  # RefSource: "Biosci Rep. 2020 Mar 27;40(3):"
    pmid: int | None = None
    note: str | None = None  # its Note: PubMed's [tw] "Comment/Correction Notes"


@dataclass(frozen=True, slots=True)
class Notice:
    """What a notice says about an article: ``status`` is one of
    :data:`medsearch.notices.STATUSES`, ``ref_type`` the link (or the publication type
    when only the type says so), ``pmid`` the other record (None when unknown)."""

    status: str
    ref_type: str
    pmid: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "type": self.ref_type, "pmid": self.pmid}


@dataclass(frozen=True, slots=True)
class Reference:
    """One entry of a record's ``ReferenceList``: the cited article's PMID (0 when the
    reference gives none), its DOI where the reference gives one, and its ``Citation``
    text ("Arthritis Rheum. 1999 Mar;42(3):415-20"): all a reader has of a reference
    that is not stored here. Records stored before the text was kept have None."""

    pmid: int = 0
    doi: str | None = None
    citation: str | None = None


@dataclass(frozen=True, slots=True)
class PubDate:
    """A publication date as precise as the record allows.

    ``raw`` keeps a MedlineDate (``1998 Dec-1999 Jan``) verbatim; ``season`` keeps
    ``Spring`` etc. ``year`` is always the first year mentioned.
    """

    year: int | None = None
    month: int | None = None
    day: int | None = None
    season: str | None = None
    raw: str | None = None

    def __str__(self) -> str:
        if self.raw:
            return self.raw
        if self.year is None:
            return ""
        out = str(self.year)
        if self.month:
            out += " " + MONTHS[self.month - 1].capitalize()
            if self.day:
                out += f" {self.day}"
        elif self.season:
            out += " " + self.season
        return out


@dataclass(frozen=True, slots=True)
class Article:
    """One citation, as much of it as a search engine and a reference manager need."""

    pmid: int
    version: int = 1
    title: str = ""
    abstract: tuple[AbstractSection, ...] = ()
    authors: tuple[Author, ...] = ()
    journal: str = ""
    journal_abbrev: str = ""
    issn: str | None = None
    volume: str | None = None
    issue: str | None = None
    pages: str | None = None
    pub_date: PubDate = field(default_factory=PubDate)
    mesh: tuple[MeshHeading, ...] = ()
    keywords: tuple[str, ...] = ()
    publication_types: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    # (IdType, value) pairs from ArticleIdList and ELocationID: ("doi", ...), ("pmc", ...)
    article_ids: tuple[tuple[str, str], ...] = ()
    chemicals: tuple[str, ...] = ()
    kind: str = "article"  # "article" (PubmedArticle/MedlineCitation) or "book"
    medline_ta: str = ""  # MedlineJournalInfo/MedlineTA: "J Biol Chem"
    issns: tuple[str, ...] = ()  # every ISSN the record names: print or electronic, linking
    grants: tuple[Grant, ...] = ()
    status: str | None = None  # MedlineCitation/@Status: "MEDLINE", "PubMed-not-MEDLINE", ...
    corrections: tuple[Correction, ...] = ()
    # SupplMeshList: the supplementary concepts (protocols, diseases, organisms) it is
    # indexed with; chemical ones are in ``chemicals`` too. [nm] searches both.
    supplementary: tuple[str, ...] = ()
    # ArticleDate (DateType Electronic; MEDLINE's DEP): PubMed's [dp] matches it as well
    # as the print date (help page, "Publication Date").
    electronic_date: PubDate | None = None
    references: tuple[Reference, ...] = ()  # ReferenceList entries naming a PMID or a DOI
    # What PubMed's other fields search (issue 39); records stored before have none.
    other_abstracts: tuple[str, ...] = ()  # OtherAbstract (MEDLINE OAB): [tiab], [tw]
    # (status, YYYYMMDD): each PubMedPubDate by its PubStatus (MEDLINE PHST/EDAT/MHDA/
    # CRDT), and DateCompleted/DateRevised as "datecompleted"/"daterevised" (DCOM/LR):
    # what [crdt], [edat], [mhda], [dcom] and [lr] search (medsearch.field_keys.RECORD_DATES)
    record_dates: tuple[tuple[str, int], ...] = ()
    registry_numbers: tuple[str, ...] = ()  # ChemicalList RegistryNumber, EC numbers: [rn]
    personal_subjects: tuple[str, ...] = ()  # PersonalNameSubjectList: "Freud Sigmund"
    secondary_sources: tuple[str, ...] = ()  # DataBankList: "ClinicalTrials.gov/NCT0..."

    @property
    def year(self) -> int | None:
        return self.pub_date.year

    def article_id(self, kind: str) -> str | None:
        for id_type, value in self.article_ids:
            if id_type == kind:
                return value
        return None

    @property
    def doi(self) -> str | None:
        return self.article_id("doi")

    @property
    def pmcid(self) -> str | None:
        return self.article_id("pmc")

    @property
    def cited_pmids(self) -> tuple[int, ...]:
        """The PMIDs this record's reference list names, each once, in the list's order."""
        return tuple(dict.fromkeys(r.pmid for r in self.references if r.pmid))

    @property
    def abstract_text(self) -> str:
        """The abstract as one string, labelled sections as ``LABEL: text``."""
        return "\n".join(
            f"{s.label}: {s.text}" if s.label else s.text for s in self.abstract if s.text
        )

    @property
    def journal_citation(self) -> str:
        """``J Test. 2020 Mar;1(2):10-20.``: the journal line as PubMed prints it."""
        out = f"{self.journal_abbrev or self.journal}."
        date = str(self.pub_date)
        if date:
            out += f" {date}"
        if self.volume:
            out += f";{self.volume}"
            if self.issue:
                out += f"({self.issue})"
        if self.pages:
            out += f":{self.pages}"
        return out + "."

    @property
    def first_author(self) -> str:
        return self.authors[0].display if self.authors else ""

    @property
    def content_hash(self) -> str:
        """Hash of the text the encoders see; unchanged text means unchanged vectors."""
        payload = f"{self.title}\x00{self.abstract_text}".encode()
        return hashlib.blake2b(payload, digest_size=16).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        """Plain data; written out by hand because ``dataclasses.asdict`` deep-copies
        recursively, which costs a third of the store's write time at ingest."""
        d = self.pub_date
        return {
            "pmid": self.pmid,
            "version": self.version,
            "title": self.title,
            "abstract": [
                {"text": s.text, "label": s.label, "category": s.category} for s in self.abstract
            ],
            "authors": [
                {
                    "last_name": a.last_name,
                    "fore_name": a.fore_name,
                    "initials": a.initials,
                    "collective_name": a.collective_name,
                    "affiliations": list(a.affiliations),
                }
                for a in self.authors
            ],
            "journal": self.journal,
            "journal_abbrev": self.journal_abbrev,
            "issn": self.issn,
            "volume": self.volume,
            "issue": self.issue,
            "pages": self.pages,
            "pub_date": {
                "year": d.year,
                "month": d.month,
                "day": d.day,
                "season": d.season,
                "raw": d.raw,
            },
            "mesh": [
                {
                    "descriptor": m.descriptor,
                    "ui": m.ui,
                    "major": m.major,
                    "qualifiers": [
                        {"name": q.name, "ui": q.ui, "major": q.major} for q in m.qualifiers
                    ],
                }
                for m in self.mesh
            ],
            "keywords": list(self.keywords),
            "publication_types": list(self.publication_types),
            "languages": list(self.languages),
            "article_ids": [list(pair) for pair in self.article_ids],
            "chemicals": list(self.chemicals),
            "kind": self.kind,
            **self._later_fields(),
        }

    def _later_fields(self) -> dict[str, Any]:
        return {
            "medline_ta": self.medline_ta,
            "issns": list(self.issns),
            "grants": [
                {
                    "grant_id": g.grant_id,
                    "acronym": g.acronym,
                    "agency": g.agency,
                    "country": g.country,
                }
                for g in self.grants
            ],
            "status": self.status,
            "corrections": [
                {
                    "ref_type": c.ref_type,
                    "source": c.source,
                    "pmid": c.pmid,
                    **({"note": c.note} if c.note else {}),  # rare: kept out of the others
                }
                for c in self.corrections
            ],
            "supplementary": list(self.supplementary),
            "electronic_date": None
            if (e := self.electronic_date) is None
            else {"year": e.year, "month": e.month, "day": e.day, "season": e.season, "raw": e.raw},
            # [pmid, doi] or [pmid, doi, citation]: the text only where there is one
            "references": [
                [r.pmid, r.doi, r.citation] if r.citation else [r.pmid, r.doi]
                for r in self.references
            ],
            "other_abstracts": list(self.other_abstracts),
            "record_dates": [list(pair) for pair in self.record_dates],
            "registry_numbers": list(self.registry_numbers),
            "personal_subjects": list(self.personal_subjects),
            "secondary_sources": list(self.secondary_sources),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Article:
        return cls(
            pmid=int(data["pmid"]),
            version=int(data.get("version", 1)),
            title=data.get("title", ""),
            abstract=tuple(AbstractSection(**s) for s in data.get("abstract", ())),
            authors=tuple(
                Author(**{**a, "affiliations": tuple(a.get("affiliations", ()))})
                for a in data.get("authors", ())
            ),
            journal=data.get("journal", ""),
            journal_abbrev=data.get("journal_abbrev", ""),
            issn=data.get("issn"),
            volume=data.get("volume"),
            issue=data.get("issue"),
            pages=data.get("pages"),
            pub_date=PubDate(**data.get("pub_date", {})),
            mesh=tuple(
                MeshHeading(
                    descriptor=m["descriptor"],
                    ui=m.get("ui"),
                    major=bool(m.get("major", False)),
                    qualifiers=tuple(Qualifier(**q) for q in m.get("qualifiers", ())),
                )
                for m in data.get("mesh", ())
            ),
            keywords=tuple(data.get("keywords", ())),
            publication_types=tuple(data.get("publication_types", ())),
            languages=tuple(data.get("languages", ())),
            article_ids=tuple((str(k), str(v)) for k, v in data.get("article_ids", ())),
            chemicals=tuple(data.get("chemicals", ())),
            kind=data.get("kind", "article"),
            medline_ta=data.get("medline_ta", ""),
            issns=tuple(data.get("issns", ())),
            grants=tuple(Grant(**g) for g in data.get("grants", ())),
            status=data.get("status"),
            corrections=tuple(Correction(**c) for c in data.get("corrections", ())),
            supplementary=tuple(data.get("supplementary", ())),
            electronic_date=PubDate(**e) if (e := data.get("electronic_date")) else None,
            references=tuple(_reference(entry) for entry in data.get("references", ())),
            other_abstracts=tuple(data.get("other_abstracts", ())),
            record_dates=tuple((str(s), int(d)) for s, d in data.get("record_dates", ())),
            registry_numbers=tuple(data.get("registry_numbers", ())),
            personal_subjects=tuple(data.get("personal_subjects", ())),
            secondary_sources=tuple(data.get("secondary_sources", ())),
        )

    @classmethod
    def from_json(cls, text: str) -> Article:
        return cls.from_dict(json.loads(text))


def _reference(entry: list[Any]) -> Reference:
    """A stored ``[pmid, doi]`` (records stored before the citation text was kept) or
    ``[pmid, doi, citation]``."""
    citation = entry[2] if len(entry) > 2 else None
    return Reference(int(entry[0] or 0), entry[1], citation or None)


@dataclass(frozen=True, slots=True)
class Deletion:
    """A ``DeleteCitation`` block: these PMIDs leave the store and every index."""

    pmids: tuple[int, ...]
