"""A manuscript's reference list, read from what reference managers write: BibTeX, RIS,
PubMed's MEDLINE (``.nbib``) or plain PMIDs. Each entry keeps only what finds it in
PubMed again (PMID, DOI, title, year); :mod:`medsearch.retrieval.check` resolves them.

The readers are forgiving: a reference list comes from Zotero, EndNote, Mendeley,
JabRef or a hand-edited ``.bib``, so an entry without a usable field is kept (and
reported as unresolved) rather than failing the file, and only a text that is none of
the formats is an error.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from medsearch.errors import UsageError
from medsearch.records import pmid_from


@dataclass(frozen=True, slots=True)
class Reference:
    """One entry of a reference list; ``label`` names it to the user (a BibTeX key,
    ``RIS record 3``, ``PMID 123``)."""

    label: str
    pmid: int | None = None
    doi: str | None = None
    title: str | None = None
    year: int | None = None


_DOI = re.compile(r"10\.\d{4,9}/\S+")
_PUBMED_URL = re.compile(r"(?:pubmed\.ncbi\.nlm\.nih\.gov/|ncbi\.nlm\.nih\.gov/pubmed/)(\d+)")
_PMID_NOTE = re.compile(r"\bPMID:\s*(\d+)")
"""Zotero keeps a PMID in its Extra field (``PMID: 123``), which its exports write as
a BibTeX note or a RIS ``N1``."""
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def clean_doi(text: str | None) -> str | None:
    """``https://doi.org/10.1/x``, ``doi:10.1/X.`` -> ``10.1/x`` as written (DOIs compare
    caselessly; the lexical index keeps them case-folded)."""
    if not text:
        return None
    match = _DOI.search(text)
    return match.group(0).rstrip(".,;") if match else None


def year_of(text: str | None) -> int | None:
    match = _YEAR.search(text or "")
    return int(match.group(1)) if match else None


def read(text: str, name: str = "-") -> list[Reference]:
    """The references in ``text``, its format told by ``name``'s suffix, else sniffed."""
    suffix = Path(name).suffix.lower()
    stripped = text.lstrip("\ufeff \t\r\n")
    if suffix == ".bib" or (suffix not in (".ris", ".nbib") and stripped.startswith(("@", "%"))):
        return read_bibtex(text)
    if suffix == ".ris" or re.match(r"TY  - ", stripped):
        return read_ris(text)
    if suffix == ".nbib" or re.match(r"PMID- ", stripped):
        return read_nbib(text)
    words = re.split(r"[\s,;]+", stripped.strip())
    pmids = [pmid_from(w) for w in words if w]
    if pmids and all(p is not None for p in pmids):
        return [Reference(f"PMID {p}", pmid=p) for p in pmids]
    raise UsageError(
        f"{name}: not a reference list medsearch reads (BibTeX, RIS, MEDLINE .nbib or PMIDs)"
    )


# -- BibTeX -------------------------------------------------------------------------------

_SKIPPED_ENTRIES = frozenset({"comment", "string", "preamble"})


def read_bibtex(text: str) -> list[Reference]:
    """``@article{key, title = {...}, doi = "...", year = 2020, pmid = {123}}`` entries."""
    out: list[Reference] = []
    for kind, key, fields in _bibtex_entries(text):
        if kind in _SKIPPED_ENTRIES:
            continue
        pmid = pmid_from(fields.get("pmid"))
        if pmid is None and fields.get("eprinttype", "").lower() == "pubmed":
            pmid = pmid_from(fields.get("eprint"))
        url = _unescaped(fields.get("url", ""))
        if pmid is None and (found := _PUBMED_URL.search(url)):
            pmid = pmid_from(found.group(1))
        notes = " ".join(fields.get(name, "") for name in ("note", "annote", "extra"))
        if pmid is None and (found := _PMID_NOTE.search(notes)):
            pmid = pmid_from(found.group(1))
        doi = clean_doi(_unescaped(fields.get("doi", ""))) or (
            clean_doi(url) if "doi.org" in url else None
        )
        out.append(
            Reference(
                key or f"BibTeX entry {len(out) + 1}",
                pmid=pmid,
                doi=doi,
                title=_latex_plain(fields.get("title", "")) or None,
                year=year_of(fields.get("year") or fields.get("date")),
            )
        )
    return out


def _bibtex_entries(text: str) -> list[tuple[str, str, dict[str, str]]]:
    entries: list[tuple[str, str, dict[str, str]]] = []
    at = 0
    while (start := text.find("@", at)) != -1:
        head = re.compile(r"@\s*([A-Za-z]+)\s*([{(])").match(text, start)
        if head is None:
            at = start + 1
            continue
        kind, opener = head.group(1).lower(), head.group(2)
        closer = "}" if opener == "{" else ")"
        body, at = _balanced(text, head.end(), opener, closer)
        if kind in _SKIPPED_ENTRIES:
            entries.append((kind, "", {}))
            continue
        key, _, rest = body.partition(",")
        entries.append((kind, key.strip(), _bibtex_fields(rest)))
    return entries


def _balanced(text: str, pos: int, opener: str, closer: str) -> tuple[str, int]:
    """The text up to the ``closer`` matching an ``opener`` just before ``pos``."""
    depth = 1
    for index in range(pos, len(text)):
        char = text[index]
        if char == "{" or (char == opener and opener != "{"):
            depth += 1
        elif char == "}" or (char == closer and closer != "}"):
            depth -= 1
            if depth == 0:
                return text[pos:index], index + 1
    return text[pos:], len(text)  # an unclosed last entry: what is there


def _bibtex_fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    pos = 0
    name_re = re.compile(r"\s*,?\s*([A-Za-z][\w-]*)\s*=\s*")
    while (match := name_re.match(body, pos)) is not None:
        pos = match.end()
        parts = []
        while pos < len(body):
            char = body[pos]
            if char == "{":
                value, pos = _balanced(body, pos + 1, "{", "}")
            elif char == '"':
                end = pos + 1
                depth = 0
                while end < len(body) and (body[end] != '"' or depth > 0):
                    depth += {"{": 1, "}": -1}.get(body[end], 0)
                    end += 1
                value, pos = body[pos + 1 : end], end + 1
            else:
                bare = re.compile(r"[^,#\s]+").match(body, pos)
                value, pos = (bare.group(0), bare.end()) if bare else ("", pos)
            parts.append(value)
            hash_sign = re.compile(r"\s*#\s*").match(body, pos)
            if hash_sign is None:
                break
            pos = hash_sign.end()
        fields[match.group(1).lower()] = " ".join("".join(parts).split())
    return fields


_LATEX_COMMAND = re.compile(r"\\[A-Za-z]+\*?\s*|\\.")


def _unescaped(text: str) -> str:
    """``10.1000/a\\_b`` -> ``10.1000/a_b``: BibTeX writers escape DOIs and URLs."""
    return re.sub(r"\\([_&%#$])", r"\1", text)


def _latex_plain(text: str) -> str:
    """A BibTeX title as plain words: braces and LaTeX commands dropped (``\\&`` -> ``&``)."""
    text = re.sub(r"\\([&%$#_{}])", r"\1", text)
    text = _LATEX_COMMAND.sub("", text)
    return " ".join(text.replace("{", "").replace("}", "").split())


# -- RIS ----------------------------------------------------------------------------------

_RIS_LINE = re.compile(r"([A-Z][A-Z0-9])  -(?: (.*))?")


def read_ris(text: str) -> list[Reference]:
    """``TY  - JOUR`` ... ``ER  - `` records. ``AN`` is a PMID only in a record from
    PubMed (a PubMed URL or database name in it): other databases number entries too."""
    out: list[Reference] = []
    fields: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _RIS_LINE.match(line.lstrip("\ufeff"))
        if match is None:
            continue
        tag, value = match.group(1), (match.group(2) or "").strip()
        if tag == "ER":
            out.append(_ris_reference(fields, len(out) + 1))
            fields = {}
        elif value:
            fields.setdefault(tag, []).append(value)
    if fields:
        out.append(_ris_reference(fields, len(out) + 1))
    return out


def _ris_reference(fields: dict[str, list[str]], number: int) -> Reference:
    def first(*tags: str) -> str | None:
        return next((v for t in tags for v in fields.get(t, [])), None)

    urls = " ".join(fields.get("UR", []) + fields.get("L2", []))
    pmid = None
    if found := _PUBMED_URL.search(urls):
        pmid = pmid_from(found.group(1))
    from_pubmed = "pubmed" in " ".join(fields.get("DB", []) + fields.get("DP", [])).lower()
    if pmid is None and (from_pubmed or "pubmed" in urls.lower()):
        pmid = pmid_from(first("AN"))
    if pmid is None and (found := _PMID_NOTE.search(" ".join(fields.get("N1", [])))):
        pmid = pmid_from(found.group(1))
    doi = clean_doi(first("DO")) or clean_doi(urls if "doi.org" in urls else None)
    return Reference(
        f"RIS record {number}",
        pmid=pmid,
        doi=doi,
        title=first("TI", "T1", "CT"),
        year=year_of(first("PY", "Y1", "DA")),
    )


# -- MEDLINE (.nbib) ----------------------------------------------------------------------

_NBIB_LINE = re.compile(r"([A-Z][A-Z0-9]{0,3}) *- ?(.*)")


def read_nbib(text: str) -> list[Reference]:
    """PubMed's own export: every record has its PMID."""
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
    out: list[Reference] = []
    for fields in records:
        pmid = pmid_from(fields["PMID"][0])
        dois = [v for v in fields.get("AID", []) + fields.get("LID", []) if v.endswith("[doi]")]
        out.append(
            Reference(
                f"PMID {pmid}" if pmid else f"MEDLINE record {len(out) + 1}",
                pmid=pmid,
                doi=clean_doi(dois[0]) if dois else None,
                title=next(iter(fields.get("TI", [])), None),
                year=year_of(next(iter(fields.get("DP", [])), None)),
            )
        )
    return out


def title_key(title: str) -> str:
    """Titles compared as words: case, accents, punctuation and a final full stop ignored."""
    folded = unicodedata.normalize("NFKD", title.casefold())
    letters = "".join(c if c.isalnum() else " " for c in folded if not unicodedata.combining(c))
    return " ".join(letters.split())
