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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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


MAX_BYTES = 64 * 2**20
"""The largest reference list read: a 20,000-entry library export is ~40 MB."""
MAX_ENTRIES = 20_000
"""Entries in one file: a manuscript cites tens to hundreds, a review's screened set a
few thousand; past this the file is not a reference list (each entry is a search)."""
MAX_FIELD = 100_000
"""Characters in one field or line (an abstract is under 10,000): a 50 MB title once
took 2.7 GB and a minute to read, and then became a query."""


def _too_large(name: str, what: str) -> UsageError:
    return UsageError(f"{name}: {what}; not read (is it a reference list?)")


def read_file(path: Path) -> list[Reference]:
    """The references in the file at ``path``, read only up to :data:`MAX_BYTES`."""
    with path.open("rb") as stream:
        data = stream.read(MAX_BYTES + 1)
    return read(_decoded(data, str(path)), str(path))


def read_stream(stream: IO[bytes], name: str = "-") -> list[Reference]:
    """The references on ``stream`` (standard input), read only up to :data:`MAX_BYTES`."""
    return read(_decoded(stream.read(MAX_BYTES + 1), name), name)


def _decoded(data: bytes, name: str) -> str:
    if len(data) > MAX_BYTES:
        raise _too_large(name, f"larger than {MAX_BYTES // 2**20} MiB")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read {name}: {exc}") from exc


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
        return read_bibtex(text, name)
    if suffix == ".ris" or re.match(r"TY  - ", stripped):
        return read_ris(text, name)
    if suffix == ".nbib" or re.match(r"PMID- ", stripped):
        return read_nbib(text, name)
    words = re.split(r"[\s,;]+", stripped.strip())
    if len(words) > MAX_ENTRIES:
        raise _too_large(name, f"more than {MAX_ENTRIES:,} entries")
    pmids = [pmid_from(w) for w in words if w]
    if pmids and all(p is not None for p in pmids):
        return [Reference(f"PMID {p}", pmid=p) for p in pmids]
    raise UsageError(
        f"{name}: not a reference list medsearch reads (BibTeX, RIS, MEDLINE .nbib or PMIDs)"
    )


# -- BibTeX -------------------------------------------------------------------------------

_SKIPPED_ENTRIES = frozenset({"comment", "string", "preamble"})


def read_bibtex(text: str, name: str = "-") -> list[Reference]:
    """``@article{key, title = {...}, doi = "...", year = 2020, pmid = {123}}`` entries."""
    out: list[Reference] = []
    for kind, key, fields in _bibtex_entries(text, name):
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


def _bibtex_entries(text: str, name: str) -> list[tuple[str, str, dict[str, str]]]:
    entries: list[tuple[str, str, dict[str, str]]] = []
    at = 0
    while (start := text.find("@", at)) != -1:
        head = re.compile(r"@\s*([A-Za-z]+)\s*([{(])").match(text, start)
        if head is None:
            at = start + 1
            continue
        kind, opener = head.group(1).lower(), head.group(2)
        body, at = _balanced(text, head.end(), opener)
        if kind in _SKIPPED_ENTRIES:
            entries.append((kind, "", {}))
            continue
        if len(entries) >= MAX_ENTRIES:
            raise _too_large(name, f"more than {MAX_ENTRIES:,} entries")
        key, _, rest = body.partition(",")
        entries.append((kind, key.strip(), _bibtex_fields(rest, name)))
    return entries


_NESTING = {"{": re.compile(r"[{}]"), "(": re.compile(r"[{}()]"), '"': re.compile(r'[{}"]')}
"""The characters that open and close what starts with each opener (found by the regex
engine: a Python loop over every character took a minute on a 50 MB field)."""


def _balanced(text: str, pos: int, opener: str) -> tuple[str, int]:
    """The text up to the closer matching an ``opener`` just before ``pos``: braces
    nest inside both ``{}`` and ``()`` entries; a quoted value ends at a ``"`` outside
    braces."""
    depth = 1
    for found in _NESTING[opener].finditer(text, pos):
        char = found.group()
        if opener == '"':
            if char == '"' and depth <= 1:
                return text[pos : found.start()], found.end()
            depth += {"{": 1, "}": -1}.get(char, 0)
            continue
        depth += 1 if char in "{(" else -1
        if depth == 0:
            return text[pos : found.start()], found.end()
    return text[pos:], len(text)  # an unclosed last entry: what is there


def _bibtex_fields(body: str, name: str = "-") -> dict[str, str]:
    fields: dict[str, str] = {}
    pos = 0
    name_re = re.compile(r"\s*,?\s*([A-Za-z][\w-]*)\s*=\s*")
    while (match := name_re.match(body, pos)) is not None:
        pos = match.end()
        parts = []
        while pos < len(body):
            char = body[pos]
            if char in '{"':
                value, pos = _balanced(body, pos + 1, char)
            else:
                bare = re.compile(r"[^,#\s]+").match(body, pos)
                value, pos = (bare.group(0), bare.end()) if bare else ("", pos)
            parts.append(value)
            if sum(map(len, parts)) > MAX_FIELD:
                raise _too_large(
                    name, f"a field ({match.group(1)}) longer than {MAX_FIELD:,} characters"
                )
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


def _lines(text: str, name: str) -> Iterator[str]:
    """``text``'s lines (as ``splitlines`` cuts them), refusing one past
    :data:`MAX_FIELD` characters (a 50 MB RIS line once passed 3 GB)."""
    start = 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        piece = text[start:end]
        start = end + 1
        lines = piece.splitlines() or [""]
        for line in lines:
            if len(line) > MAX_FIELD:
                raise _too_large(name, f"a line longer than {MAX_FIELD:,} characters")
            yield line


def read_ris(text: str, name: str = "-") -> list[Reference]:
    """``TY  - JOUR`` ... ``ER  - `` records. ``AN`` is a PMID only in a record from
    PubMed (a PubMed URL or database name in it): other databases number entries too."""
    out: list[Reference] = []
    fields: dict[str, list[str]] = {}
    for line in _lines(text, name):
        if len(out) >= MAX_ENTRIES:
            raise _too_large(name, f"more than {MAX_ENTRIES:,} entries")
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


def read_nbib(text: str, name: str = "-") -> list[Reference]:
    """PubMed's own export: every record has its PMID."""
    records: list[dict[str, list[str]]] = []
    last: list[str] | None = None
    for line in _lines(text, name):
        if line.startswith("      ") and last is not None:
            last[-1] += " " + line.strip()
            if len(last[-1]) > MAX_FIELD:
                raise _too_large(name, f"a field longer than {MAX_FIELD:,} characters")
            continue
        match = _NBIB_LINE.fullmatch(line.strip())
        if match is None:
            continue
        tag, value = match.groups()
        if tag == "PMID":
            if len(records) >= MAX_ENTRIES:
                raise _too_large(name, f"more than {MAX_ENTRIES:,} entries")
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
