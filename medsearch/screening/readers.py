"""Records to screen, read from what other tools write: RIS, PubMed's MEDLINE
(``.nbib``), BibTeX and ASReview's data set CSV (``title``, ``abstract``, optional
``label_included``, ``doi``, ``pmid``/``pubmedID``, ``authors``, ``year``, ``keywords``).

:mod:`medsearch.references` reads the same formats for finding a manuscript's
references (PMID, DOI, title, year); a screener also reads the abstract, the authors,
the journal and the keywords, so this module keeps every field it knows and reuses that
module's field rules (DOIs, years, PubMed URLs, BibTeX's syntax) rather than copying
them. Like those readers it keeps an entry it cannot fully read, and only a text that
is none of the formats is an error.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from pathlib import Path

from medsearch import references as refs
from medsearch.errors import UsageError
from medsearch.records import pmid_from
from medsearch.screening.items import Item

FORMATS = ("ris", "nbib", "bibtex", "csv")


def read_file(path: Path) -> list[Item]:
    try:
        text = path.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return read(text, path.name)


def read(text: str, name: str = "-") -> list[Item]:
    """The records in ``text``; the format told by ``name``'s suffix, else sniffed."""
    fmt = sniff(text, name)
    if fmt == "csv":
        return read_csv(text, name)
    if fmt == "ris":
        return read_ris(text)
    if fmt == "nbib":
        return read_nbib(text)
    return read_bibtex(text)


def sniff(text: str, name: str) -> str:
    suffix = Path(name).suffix.lower()
    head = text.lstrip("\ufeff \t\r\n")
    if suffix in (".csv", ".tsv"):
        return "csv"
    if suffix == ".ris" or re.match(r"TY  - ", head):
        return "ris"
    if suffix in (".nbib", ".txt", ".medline") and re.match(r"PMID- ", head):
        return "nbib"
    if suffix == ".nbib" or re.match(r"PMID- ", head):
        return "nbib"
    if suffix == ".bib" or head.startswith(("@", "%")):
        return "bibtex"
    first = head.split("\n", 1)[0].lower()
    if "title" in first and ("," in first or "\t" in first):
        return "csv"
    raise UsageError(
        f"{name}: not a file medsearch screens (RIS, MEDLINE .nbib, BibTeX or ASReview CSV)"
    )


# -- CSV (ASReview's data set format) -----------------------------------------------------

_PMID_COLUMNS = ("pmid", "pubmedid", "pubmed_id", "pubmed id")
_LABEL_COLUMNS = ("label_included", "included", "label_abstract_included", "final_included")


def read_csv(text: str, name: str = "-") -> list[Item]:
    dialect = "excel-tab" if "\t" in text.split("\n", 1)[0] else "excel"
    reader = csv.DictReader(io.StringIO(text), dialect=dialect)
    columns = {c.strip().lower(): c for c in reader.fieldnames or [] if c}
    if "title" not in columns and "abstract" not in columns:
        raise UsageError(f"{name}: a screening CSV needs a title or an abstract column")

    def cell(row: dict[str, str | None], *names: str) -> str:
        for wanted in names:
            column = columns.get(wanted)
            if column is not None and (value := row.get(column)):
                return value.strip()
        return ""

    out: list[Item] = []
    for number, row in enumerate(reader, 1):
        label_text = cell(row, *_LABEL_COLUMNS)
        label = None
        if label_text:
            try:
                label = 1 if float(label_text) >= 0.5 else 0
            except ValueError:
                label = None
        record_id = cell(row, "record_id", "id")
        out.append(
            Item(
                title=" ".join(cell(row, "title", "primary_title").split()),
                abstract=" ".join(cell(row, "abstract", "notes_abstract").split()),
                pmid=pmid_from(cell(row, *_PMID_COLUMNS).split(".")[0] or None),
                doi=refs.clean_doi(cell(row, "doi")),
                year=refs.year_of(cell(row, "year", "publication_year", "date")),
                authors=_split_authors(cell(row, "authors", "author")),
                journal=cell(row, "journal", "secondary_title"),
                keywords=tuple(k.strip() for k in re.split(r"[;,]", cell(row, "keywords")) if k),
                label=label,
                row=int(record_id) if record_id.isdigit() else number,
            )
        )
    return out


def _split_authors(text: str) -> tuple[str, ...]:
    if not text:
        return ()
    parts = re.split(r";|\band\b", text) if ";" in text or " and " in text else [text]
    return tuple(p.strip() for p in parts if p.strip())


# -- RIS ----------------------------------------------------------------------------------

_RIS_LINE = re.compile(r"([A-Z][A-Z0-9])  -(?: (.*))?")
_RIS_LABELS = {"included": 1, "include": 1, "excluded": 0, "exclude": 0}


def read_ris(text: str) -> list[Item]:
    """``TY  - `` ... ``ER  - `` records; a label written by :mod:`.exports` (``N1  -
    ASReview_relevant`` / ``_irrelevant``, or our ``KW  - screening: included``) is read
    back."""
    out: list[Item] = []
    fields: dict[str, list[str]] = {}
    last: str | None = None
    for line in text.splitlines():
        match = _RIS_LINE.match(line.lstrip("\ufeff"))
        if match is None:
            if last is not None and line.strip() and fields.get(last):
                fields[last][-1] += " " + line.strip()  # a wrapped abstract
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        last = tag
        if tag == "ER":
            out.append(_ris_item(fields, len(out) + 1))
            fields, last = {}, None
        elif value:
            fields.setdefault(tag, []).append(value)
    if fields:
        out.append(_ris_item(fields, len(out) + 1))
    return out


def _ris_item(fields: dict[str, list[str]], number: int) -> Item:
    ref = refs._ris_reference(fields, number)

    def first(*tags: str) -> str:
        return next((v for t in tags for v in fields.get(t, [])), "")

    label = None
    for value in fields.get("N1", []) + fields.get("KW", []):
        low = value.lower()
        if "asreview_relevant" in low:
            label = 1
        elif "asreview_irrelevant" in low:
            label = 0
        elif low.startswith("screening: "):
            label = _RIS_LABELS.get(low.removeprefix("screening: ").strip(), label)
    keywords = tuple(
        k
        for k in fields.get("KW", [])
        if not k.lower().startswith("screening: ") and "asreview_" not in k.lower()
    )
    return Item(
        title=ref.title or "",
        abstract=" ".join(fields.get("AB", []) or fields.get("N2", [])),
        pmid=ref.pmid,
        doi=ref.doi,
        year=ref.year,
        authors=tuple(fields.get("AU", []) or fields.get("A1", [])),
        journal=first("T2", "JO", "JF", "JA", "J2"),
        keywords=keywords,
        label=label,
        row=number,
    )


# -- MEDLINE (.nbib) ----------------------------------------------------------------------

_NBIB_LINE = re.compile(r"([A-Z][A-Z0-9]{0,3}) *- ?(.*)")


def read_nbib(text: str) -> list[Item]:
    """PubMed's own export: every record has its PMID, its MeSH terms and keywords."""
    records: list[dict[str, list[str]]] = []
    last: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("      ") and last is not None:
            last[-1] += " " + line.strip()
            continue
        match = _NBIB_LINE.fullmatch(line.strip())
        if match is None:
            continue
        tag, value = match.groups()
        if tag == "PMID":
            records.append({})
        if records:
            last = records[-1].setdefault(tag, [])
            last.append(value.strip())
    out: list[Item] = []
    for number, fields in enumerate(records, 1):
        dois = [v for v in fields.get("AID", []) + fields.get("LID", []) if v.endswith("[doi]")]
        out.append(
            Item(
                title=next(iter(fields.get("TI", [])), ""),
                abstract=" ".join(fields.get("AB", [])),
                pmid=pmid_from(fields["PMID"][0]),
                doi=refs.clean_doi(dois[0]) if dois else None,
                year=refs.year_of(next(iter(fields.get("DP", [])), None)),
                authors=tuple(fields.get("AU", [])),
                journal=next(iter(fields.get("JT", []) or fields.get("TA", [])), ""),
                keywords=tuple(fields.get("OT", [])),
                mesh=tuple(m.split("/")[0].lstrip("*") for m in fields.get("MH", [])),
                row=number,
            )
        )
    return out


# -- BibTeX -------------------------------------------------------------------------------


def read_bibtex(text: str) -> list[Item]:
    found = refs.read_bibtex(text)
    entries = [e for e in refs._bibtex_entries(text, "-") if e[0] not in refs._SKIPPED_ENTRIES]
    out: list[Item] = []
    for number, (ref, (_, _, fields)) in enumerate(zip(found, entries, strict=True), 1):
        authors = refs._latex_plain(fields.get("author", ""))
        out.append(
            Item(
                title=ref.title or "",
                abstract=refs._latex_plain(fields.get("abstract", "")),
                pmid=ref.pmid,
                doi=ref.doi,
                year=ref.year,
                authors=tuple(a.strip() for a in authors.split(" and ") if a.strip()),
                journal=refs._latex_plain(fields.get("journal", "")),
                keywords=tuple(
                    k.strip()
                    for k in re.split(r"[;,]", refs._latex_plain(fields.get("keywords", "")))
                    if k.strip()
                ),
                row=number,
            )
        )
    return out


def labelled(items: Sequence[Item]) -> bool:
    """Whether every record carries a label (a data set a simulation can run on)."""
    return bool(items) and all(i.label is not None for i in items)
