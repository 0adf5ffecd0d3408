# Over 450 lines: every dataclass the layers hand each other, with its dict round trip;
# one module keeps the bottom layer one import.
"""The records that flow through medsearch: XML -> records -> store -> indexes -> searcher.

All frozen dataclasses built from tuples, so they hash, pickle cheaply between the
parser processes and the writer, and cannot be mutated behind a cache's back. Each
record round-trips through a plain ``dict`` (``to_dict`` / ``from_dict``) which is
what the store keeps as JSON and what ``--json`` prints.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from medsearch.field_keys import date_span, journal_key, journal_keys, print_span
from medsearch.notice_links import is_retracted

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
    reference gives none) and its DOI where the reference gives one."""

    pmid: int = 0
    doi: str | None = None


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
            "references": [[r.pmid, r.doi] for r in self.references],
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
            references=tuple(
                Reference(int(pmid or 0), doi) for pmid, doi in data.get("references", ())
            ),
            other_abstracts=tuple(data.get("other_abstracts", ())),
            record_dates=tuple((str(s), int(d)) for s, d in data.get("record_dates", ())),
            registry_numbers=tuple(data.get("registry_numbers", ())),
            personal_subjects=tuple(data.get("personal_subjects", ())),
            secondary_sources=tuple(data.get("secondary_sources", ())),
        )

    @classmethod
    def from_json(cls, text: str) -> Article:
        return cls.from_dict(json.loads(text))


@dataclass(frozen=True, slots=True)
class Deletion:
    """A ``DeleteCitation`` block: these PMIDs leave the store and every index."""

    pmids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Sentence:
    """An abstract sentence, keyed by ``sentence_id = pmid * 1000 + position``.

    The arithmetic key lets a sentence vector find its article without a lookup table and
    stays unique for abstracts of up to 1,000 sentences (PubMed's longest are ~100).
    """

    pmid: int
    position: int
    text: str
    label: str | None = None

    @property
    def sentence_id(self) -> int:
        return sentence_id(self.pmid, self.position)


SENTENCES_PER_ARTICLE = 1000


def sentence_id(pmid: int, position: int) -> int:
    return pmid * SENTENCES_PER_ARTICLE + position


def split_sentence_id(sid: int) -> tuple[int, int]:
    return divmod(sid, SENTENCES_PER_ARTICLE)


MAX_PMID = (2**63 - SENTENCES_PER_ARTICLE) // SENTENCES_PER_ARTICLE
"""The largest PMID medsearch keeps (NCBI's have eight digits). Every key built from a
PMID must fit a signed 64-bit integer (SQLite's INTEGER, tantivy's and Faiss's ids), and
the largest of them is a sentence id, ``pmid * 1000 + position``: so 2^63 / 1000, not
2^63, is the bound."""


def pmid_from(text: str | None) -> int | None:
    """``text`` as a PMID, or None when it is not one.

    The one rule for every way a PMID comes in (PubMed XML, the command line, the TUI),
    so what ingest stores is what ``show`` accepts: ASCII digits only (``str.isdigit``
    also takes ``²`` and other scripts' digits, and ``int`` reads ``١٢٣`` as 123), at
    least 1 (0 names no article) and at most :data:`MAX_PMID`. Surrounding white space
    is allowed, as XML text and typed input carry it.
    """
    if text is None:
        return None
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()):
        return None
    digits = digits.lstrip("0")
    if not digits or len(digits) > len(str(MAX_PMID)):  # int() of a huge string is slow
        return None
    value = int(digits)
    return value if value <= MAX_PMID else None


@dataclass(frozen=True, slots=True)
class SentenceMatch:
    """The abstract sentence a sentence search matched, between its neighbours."""

    text: str
    label: str | None
    sentence_id: int
    before: str = ""
    after: str = ""


@dataclass(frozen=True, slots=True)
class Evidence:
    """The abstract sentence that best supports a citation suggestion."""

    text: str
    label: str | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """One ranked result. ``sources`` says which retriever(s) found it.

    The fields after ``notice_for`` are set by the stage or command that knows them and
    stay None (left out of ``--json``) elsewhere.
    """

    rank: int
    pmid: int
    score: float
    title: str = ""
    journal: str = ""
    year: int | None = None
    authors: tuple[str, ...] = ()
    snippet: str = ""
    sources: tuple[str, ...] = ()  # "lexical", "dense"
    notices: tuple[Notice, ...] = ()  # retraction, expression of concern, erratum, update
    notice_for: tuple[Notice, ...] = ()  # the articles this hit is itself a notice about
    source_ranks: tuple[tuple[str, int], ...] = ()
    """Its rank in each first-stage list that fusion merged (``--json``: ``lexical_rank``...)."""
    first_stage_rank: int | None = None
    """Its rank before a reranker (Delta or the cross-encoder) reordered the list."""
    all_words: bool | None = None
    """Plain words: whether it holds every word (in the count) or was ranked in from
    beyond that set. None for set queries, whose hits are all in their set."""
    sentence: SentenceMatch | None = None
    in_corpus: bool | None = None
    """Citation answers: whether the cited or citing article is stored here."""
    doi: str | None = None
    reference_source: str | None = None
    """Where a reference came from: the record's reference list or an imported graph."""
    seed_links: int | None = None
    """Snowballing: how many seeds it is linked to."""
    cited_by: int | None = None
    """How many articles in this corpus cite it."""
    evidence: Evidence | None = None

    @property
    def notice(self) -> str | None:
        """The strongest status among :attr:`notices` (they come strongest first)."""
        return self.notices[0].status if self.notices else None

    def to_dict(self, *, reranked_in_search: bool = False) -> dict[str, Any]:
        """The hit as ``--json`` prints it: the command's own fields after the common ones,
        in the order the stages set them. ``reranked_in_search``: the Delta reranker set
        ``first_stage_rank`` inside the search, before the all-words mark; the
        cross-encoder sets it after."""
        out: dict[str, Any] = {
            "rank": self.rank,
            "pmid": self.pmid,
            "score": round(float(self.score), 6),
            "title": self.title,
            "journal": self.journal,
            "year": self.year,
            "authors": list(self.authors),
            "snippet": self.snippet,
            "sources": list(self.sources),
            "notice": self.notice,
            "notices": [n.to_dict() for n in self.notices],
            "notice_for": [n.to_dict() for n in self.notice_for],
        }
        out.update((f"{name}_rank", rank) for name, rank in self.source_ranks)
        first = {} if self.first_stage_rank is None else {"first_stage_rank": self.first_stage_rank}
        if reranked_in_search:
            out.update(first)
        if self.all_words is not None:
            out["all_words"] = self.all_words
        out.update(first)  # a key set again keeps its place
        if self.sentence is not None:
            out["sentence"] = self.sentence.text
            out["label"] = self.sentence.label
            out["sentence_id"] = self.sentence.sentence_id
            out["context"] = {"before": self.sentence.before, "after": self.sentence.after}
        fields = {
            "in_corpus": self.in_corpus,
            "doi": self.doi,
            "source": self.reference_source,
            "seed_links": self.seed_links,
            "cited_by": self.cited_by,
        }
        out.update((k, v) for k, v in fields.items() if v is not None)
        if self.evidence is not None:
            out["evidence"] = self.evidence.text
            out["evidence_label"] = self.evidence.label
        return out


@dataclass(frozen=True, slots=True)
class Filters:
    """Restrictions every retriever applies the same way (CLI flags or query field tags).

    Empty tuples and ``None`` mean "no restriction". Journals match the full title, the
    MedlineTA, the ISO abbreviation or an ISSN, ignoring case and punctuation
    (``field_keys.journal_key``); publication types match PubMed's names.
    """

    year_from: int | None = None
    year_to: int | None = None
    journals: tuple[str, ...] = ()
    publication_types: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    # YYYYMMDD bounds (``[dp]``, ``--date``): an article matches when its publication
    # date's span (``field_keys.date_span``) overlaps them
    date_from: int | None = None
    date_to: int | None = None
    # leave out retracted articles (``--exclude-retracted``): those whose record says so,
    # which the lexical index keys as the publication type "Retracted Publication"
    exclude_retracted: bool = False

    @property
    def empty(self) -> bool:
        return (
            not self.exclude_retracted
            and self.year_from is None
            and self.year_to is None
            and self.date_from is None
            and self.date_to is None
            and not self.journals
            and not self.publication_types
            and not self.languages
        )

    def merge(self, other: Filters) -> Filters:
        """Both sets of restrictions at once (CLI flags AND query tags)."""

        def tighter(a: int | None, b: int | None, pick: Any) -> int | None:
            return b if a is None else a if b is None else pick(a, b)

        return Filters(
            year_from=tighter(self.year_from, other.year_from, max),
            year_to=tighter(self.year_to, other.year_to, min),
            journals=self.journals + other.journals,
            publication_types=self.publication_types + other.publication_types,
            languages=self.languages + other.languages,
            date_from=tighter(self.date_from, other.date_from, max),
            date_to=tighter(self.date_to, other.date_to, min),
            exclude_retracted=self.exclude_retracted or other.exclude_retracted,
        )

    def _in_dates(self, span: tuple[int, int] | None) -> bool:
        """Whether a date ``span`` (YYYYMMDD) overlaps ``date_from``..``date_to``."""
        if not span:
            return False
        if self.date_to is not None and span[0] > self.date_to:
            return False
        return self.date_from is None or span[1] >= self.date_from

    def accepts(self, article: Article) -> bool:
        """The reference semantics: what an index-side filter must agree with."""
        if self.exclude_retracted and is_retracted(article):
            return False

        year = article.year
        if self.year_from is not None and (year is None or year < self.year_from):
            return False
        if self.year_to is not None and (year is None or year > self.year_to):
            return False
        if (self.date_from is not None or self.date_to is not None) and not any(
            self._in_dates(span)
            for span in (
                print_span(article),
                date_span(article.electronic_date) if article.electronic_date else None,
            )
        ):
            return False
        if self.journals:
            names = journal_keys(article)
            if not any(journal_key(j) in names for j in self.journals):
                return False
        if self.publication_types:
            types = {t.casefold() for t in article.publication_types}
            if not any(t.casefold() in types for t in self.publication_types):
                return False
        if self.languages:
            langs = {lang.casefold() for lang in article.languages}
            if not any(lang.casefold() in langs for lang in self.languages):
                return False
        return True
