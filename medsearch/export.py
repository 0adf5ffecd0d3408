"""Citation export: BibTeX, RIS, MEDLINE (``.nbib``) and CSV from :class:`Article` values.

Each format is written for the program that will read it, not for the eye:

- BibTeX keys are stable (``lastname + year + first title word``, ASCII-folded) and
  unique within one export (``a``, ``b`` ... suffixes), LaTeX's special characters are
  escaped, and words whose capitals matter (``{COVID-19}``, ``{mRNA}``, proper nouns) are
  braced so bibliography styles that lower-case titles leave them alone;
- RIS is one ``TAG  - value`` per line, so values never contain a line break;
- MEDLINE follows PubMed's own display format: 4-character tag, ``- ``, values wrapped
  at PubMed's width with a 6-space continuation indent (what reference managers importing
  PubMed's "nbib" files expect);
- CSV goes through the ``csv`` module, so commas, quotes and newlines survive, and a
  text cell a spreadsheet would run as a formula gets a leading ``'``
  (:func:`medsearch.safe_text.csv_cell`).

MEDLINE abbreviates page ranges (``123-9``); BibTeX and RIS get them expanded
(``123--129``, ``SP 123``/``EP 129``).
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import string
import textwrap
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from medsearch.errors import UsageError
from medsearch.notices import MEDLINE_TAGS, describe, notices
from medsearch.records import Article, Author, Correction
from medsearch.safe_text import csv_cell

Format = Literal["bibtex", "ris", "nbib", "csv"]
FORMATS: tuple[Format, ...] = ("bibtex", "ris", "nbib", "csv")
_SUFFIXES: dict[str, str] = {"bibtex": ".bib", "ris": ".ris", "nbib": ".nbib", "csv": ".csv"}
CSV_HEADER = "pmid,title,authors,journal,year,volume,issue,pages,doi,pmcid,abstract,notice"
CSV_COLUMNS = tuple(CSV_HEADER.split(","))


def suffix_for(fmt: str) -> str:
    """The file suffix a reference manager expects for ``fmt`` (``.bib`` ...)."""
    try:
        return _SUFFIXES[fmt]
    except KeyError:
        raise UsageError(_unknown(fmt)) from None


def export(articles: Sequence[Article], fmt: str) -> str:
    """``articles`` as one document in ``fmt`` (one of :data:`FORMATS`)."""
    writers: dict[str, Callable[[Sequence[Article]], str]] = {
        "bibtex": to_bibtex,
        "ris": to_ris,
        "nbib": to_nbib,
        "csv": to_csv,
    }
    if fmt not in writers:
        raise UsageError(_unknown(fmt))
    return writers[fmt](articles)


def write_export(articles: Sequence[Article], fmt: str, path: Path) -> Path:
    """Write the export as UTF-8, byte for byte (CSV keeps its ``\\r\\n`` rows)."""
    path.write_text(export(articles, fmt), encoding="utf-8", newline="")
    return path


def _unknown(fmt: str) -> str:
    return f"unknown export format {fmt!r}: choose one of {', '.join(FORMATS)}"


# -- shared helpers -----------------------------------------------------------------------

_LINE_BREAKS = re.compile(r"\s+")
_PAGE_RANGE = re.compile(r"([A-Za-z]*)(\d+)\s*[-–]\s*([A-Za-z]*)(\d+)")


def _one_line(text: str) -> str:
    """Whitespace runs (newlines included, any Unicode kind) become one space."""
    return _LINE_BREAKS.sub(" ", text).strip()


def page_ranges(pages: str) -> list[tuple[str, str]]:
    """``"123-9, 145"`` -> ``[("123", "129"), ("145", "145")]``: MEDLINE's short ends expanded."""
    out: list[tuple[str, str]] = []
    for part in (p.strip() for p in pages.split(",")):
        if not part:
            continue
        match = _PAGE_RANGE.fullmatch(part)
        if match is None:
            first, _, last = part.partition("-")
            out.append((first.strip(), last.strip() or first.strip()))
            continue
        start_prefix, start, end_prefix, end = match.groups()
        if len(end) < len(start) and end_prefix in ("", start_prefix):
            end = start[: len(start) - len(end)] + end
        out.append((start_prefix + start, (end_prefix or start_prefix) + end))
    return out


def _abstract(article: Article) -> str:
    return _one_line(
        " ".join(f"{s.label}: {s.text}" if s.label else s.text for s in article.abstract)
    )


def note(article: Article) -> str:
    """``RETRACTED (retraction PMID 32167152)``: what every format carries as its note, so
    a retracted reference stays visible in the reference manager and the manuscript."""
    return describe(notices(article))


def _full_name(author: Author) -> str:
    """``Last, Fore`` (reference managers split on the comma), or the collective name."""
    if author.collective_name:
        return author.collective_name
    return ", ".join(p for p in (author.last_name, author.fore_name or author.initials) if p)


# -- BibTeX -------------------------------------------------------------------------------

_LATEX = str.maketrans(
    {
        "\\": r"\textbackslash{}",
        "{": r"\{",
        "}": r"\}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
)
_FOLD = str.maketrans(
    {"ø": "o", "Ø": "O", "æ": "ae", "Æ": "AE", "ß": "ss", "đ": "d", "Đ": "D", "ł": "l"}
    | {"Ł": "L", "þ": "th", "Þ": "Th", "œ": "oe", "Œ": "OE", "ı": "i"}
)
_KEY_STOPWORDS = frozenset({"a", "an", "the", "of", "on", "in", "for", "to", "and", "with", "how"})


def latex_escape(text: str) -> str:
    return text.translate(_LATEX)


def ascii_fold(text: str) -> str:
    """``Sørensen-Müller`` -> ``SorensenMuller``: letters and digits only, accents dropped."""
    decomposed = unicodedata.normalize("NFKD", text.translate(_FOLD))
    return "".join(c for c in decomposed if c.isascii() and c.isalnum())


def _base_key(article: Article) -> str:
    author = ""
    if article.authors:
        first = article.authors[0]
        name = first.last_name or (first.collective_name or "").split(" ")[0]
        author = ascii_fold(name).lower()
    words = [ascii_fold(t).lower() for t in article.title.split()]
    words = [w for w in words if w]
    word = next((w for w in words if w not in _KEY_STOPWORDS), words[0] if words else "")
    year = str(article.year) if article.year else ""
    if not (author or word):
        return f"pmid{article.pmid}"
    return f"{author or 'anon'}{year}{word}"


def _suffixes() -> Iterator[str]:
    """a, b, ..., z, aa, ab, ...: the author-year convention for clashes."""
    for length in itertools.count(1):
        for letters in itertools.product(string.ascii_lowercase, repeat=length):
            yield "".join(letters)


def bibtex_keys(articles: Sequence[Article]) -> list[str]:
    """One key per article, unique in the list; every member of a clash gets a suffix."""
    bases = [_base_key(a) for a in articles]
    counts = Counter(bases)
    used = {b for b, n in counts.items() if n == 1}
    keys: list[str] = []
    pending: dict[str, Iterator[str]] = {}
    for base in bases:
        if counts[base] == 1:
            keys.append(base)
            continue
        suffixes = pending.setdefault(base, _suffixes())
        key = base + next(suffixes)
        while key in used:
            key = base + next(suffixes)
        used.add(key)
        keys.append(key)
    return keys


def _protected_title(title: str) -> str:
    """Escape, and brace each word whose capitals carry meaning (acronyms, names)."""
    words = _one_line(title).split(" ")
    if words and words[-1].endswith(".") and not words[-1].endswith(".."):
        words[-1] = words[-1][:-1]  # styles add their own full stop
    out = []
    for index, word in enumerate(words):
        escaped = latex_escape(word)
        capital_inside = any(c.isupper() for c in word[1:])
        capital_start = index > 0 and word[:1].isupper()
        out.append("{" + escaped + "}" if capital_inside or capital_start else escaped)
    return " ".join(w for w in out if w)


def _bibtex_author(author: Author) -> str:
    if author.collective_name:
        return "{" + latex_escape(_one_line(author.collective_name)) + "}"
    # a bare "and" inside a name would split it into two authors
    return latex_escape(_one_line(_full_name(author))).replace(" and ", " {and} ")


def _bibtex_entry(article: Article, key: str) -> str:
    pages = page_ranges(article.pages or "")
    fields: list[tuple[str, str]] = [
        ("author", " and ".join(_bibtex_author(a) for a in article.authors)),
        ("title", _protected_title(article.title)),
        ("journal", latex_escape(_one_line(article.journal))),
        ("year", str(article.year) if article.year else ""),
        ("volume", latex_escape(_one_line(article.volume or ""))),
        ("number", latex_escape(_one_line(article.issue or ""))),
        ("pages", latex_escape(", ".join(a if a == b else f"{a}--{b}" for a, b in pages))),
        ("doi", latex_escape(_one_line(article.doi or ""))),
        ("pmid", str(article.pmid)),
        ("pmcid", latex_escape(_one_line(article.pmcid or ""))),
        ("abstract", latex_escape(_abstract(article))),
        ("note", latex_escape(note(article))),
    ]
    kind = "book" if article.kind == "book" else "article"
    body = ",\n".join(f"  {name} = {{{value}}}" for name, value in fields if value)
    return f"@{kind}{{{key},\n{body}\n}}\n"


def to_bibtex(articles: Sequence[Article]) -> str:
    keys = bibtex_keys(articles)
    return "\n".join(_bibtex_entry(a, k) for a, k in zip(articles, keys, strict=True))


# -- RIS ----------------------------------------------------------------------------------


def _ris_date(article: Article) -> str | None:
    """RIS ``DA``: ``YYYY/MM/DD`` or ``YYYY/MM/`` when the day is unknown."""
    date = article.pub_date
    if not (date.year and date.month):
        return None
    return f"{date.year}/{date.month:02d}/" + (f"{date.day:02d}" if date.day else "")


def _ris_record(article: Article) -> str:
    pages = page_ranges(article.pages or "")
    date = article.pub_date
    fields: list[tuple[str, str | None]] = [("TY", "BOOK" if article.kind == "book" else "JOUR")]
    fields += [("AU", _full_name(a)) for a in article.authors]
    fields += [
        ("TI", article.title),
        ("T2", article.journal),
        ("JO", article.journal),
        ("JA", article.journal_abbrev),
        ("PY", str(date.year) if date.year else None),
        ("DA", _ris_date(article)),
        ("VL", article.volume),
        ("IS", article.issue),
        ("SP", pages[0][0] if pages else None),
        ("EP", pages[-1][1] if pages and pages[-1][1] != pages[0][0] else None),  # not 1 page
        ("SN", article.issn),
        ("DO", article.doi),
        ("AN", str(article.pmid)),
        ("UR", f"https://pubmed.ncbi.nlm.nih.gov/{article.pmid}/"),
        ("AB", _abstract(article)),
        ("N1", note(article)),
    ]
    fields += [("LA", lang) for lang in article.languages]
    keywords = dict.fromkeys([*article.keywords, *(m.descriptor for m in article.mesh)])
    fields += [("KW", k) for k in keywords]
    lines = [f"{tag}  - {_one_line(value)}" for tag, value in fields if value and _one_line(value)]
    return "\n".join([*lines, "ER  - "]) + "\n"


def to_ris(articles: Sequence[Article]) -> str:
    return "\n".join(_ris_record(a) for a in articles)


# -- MEDLINE (nbib) -----------------------------------------------------------------------

# PubMed's MEDLINE display puts at most 81 characters of text after the 6-column tag,
# so lines reach 87 columns (measured on PubMed output; the often-quoted "80" is loose).
MEDLINE_WIDTH = 87
_CONTINUATION = " " * 6


def medline_field(tag: str, value: str) -> list[str]:
    """``TAG - value`` wrapped as PubMed does: 87 columns, 6-space continuation lines.

    Words are never split (a long URL overflows rather than breaks), so joining the
    continuation lines with single spaces gives the value back.
    """
    text = _one_line(value)
    if not text:
        return []
    wrapper = textwrap.TextWrapper(
        width=MEDLINE_WIDTH,
        initial_indent=f"{tag:<4}- ",
        subsequent_indent=_CONTINUATION,
        break_long_words=False,
        break_on_hyphens=False,
    )
    return wrapper.wrap(text)


def _mesh_line(article: Article) -> Iterator[str]:
    for heading in article.mesh:
        parts = [("*" if heading.major else "") + heading.descriptor]
        parts += [("*" if q.major else "") + q.name for q in heading.qualifiers]
        yield "/".join(parts)


def _source(article: Article) -> str | None:
    """PubMed's ``SO`` line: ``J Abbrev. 2020 Mar;12(3):123-9. doi: 10.x/y.``"""
    if not (article.journal_abbrev or article.journal):
        return None
    where = article.volume or ""
    if article.issue:
        where += f"({article.issue})"
    if article.pages:
        where += f":{article.pages}"
    out = f"{article.journal_abbrev or article.journal}. {article.pub_date}"
    out += f";{where}." if where else "."
    return out + (f" doi: {article.doi}." if article.doi else "")


def _nbib_record(article: Article) -> str:
    fields: list[tuple[str, str | None]] = [
        ("PMID", str(article.pmid)),
        ("IS", article.issn),
        ("VI", article.volume),
        ("IP", article.issue),
        ("DP", str(article.pub_date)),
        ("TI", article.title),
        ("PG", article.pages),
        ("LID", f"{article.doi} [doi]" if article.doi else None),
        ("AB", _abstract(article)),
    ]
    for author in article.authors:
        if author.collective_name:
            fields.append(("CN", author.collective_name))
            continue
        fields += [("FAU", _full_name(author)), ("AU", author.display)]
        fields += [("AD", affiliation) for affiliation in author.affiliations]
    fields += [("LA", lang) for lang in article.languages]
    fields += [("PT", kind) for kind in article.publication_types]
    fields += [("TA", article.journal_abbrev), ("JT", article.journal)]
    fields += [("MH", line) for line in _mesh_line(article)]
    fields += [("OT", keyword) for keyword in article.keywords]
    pmcid = article.pmcid
    if pmcid:
        fields.append(("PMC", pmcid if pmcid.upper().startswith("PMC") else f"PMC{pmcid}"))
    fields += [
        (tag, _link(c)) for c in article.corrections if (tag := MEDLINE_TAGS.get(c.ref_type))
    ]
    fields += [("AID", f"{article.doi} [doi]" if article.doi else None), ("SO", _source(article))]
    lines = [line for tag, value in fields if value for line in medline_field(tag, value)]
    return "\n".join(lines) + "\n"


def _link(correction: Correction) -> str:
    """``Biosci Rep. 2020;40(3):. PMID: 32167152``, as PubMed writes a link line."""
    pmid = f"PMID: {correction.pmid}" if correction.pmid else ""
    source = (correction.source or "").rstrip(".")
    return f"{source}. {pmid}" if source and pmid else source or pmid


def to_nbib(articles: Sequence[Article]) -> str:
    return "\n".join(_nbib_record(a) for a in articles)


# -- CSV ----------------------------------------------------------------------------------


def to_csv(articles: Sequence[Article]) -> str:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(CSV_COLUMNS)
    for a in articles:
        texts = [
            a.title,
            "; ".join(author.display for author in a.authors),
            a.journal,
        ]
        writer.writerow(
            [
                a.pmid,
                *map(csv_cell, texts),
                a.year or "",
                *(csv_cell(t or "") for t in (a.volume, a.issue, a.pages, a.doi, a.pmcid)),
                csv_cell(a.abstract_text),
                csv_cell(note(a)),
            ]
        )
    return buffer.getvalue()
