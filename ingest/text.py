"""String helpers for the PubMed parser: inline-markup flattening and date strings.

PubMed titles and abstracts carry inline markup (``<i> <b> <sup> <sub> <u>``, MathML).
A search engine needs the text exactly as a reader sees it: ``The <i>BRCA1</i> gene``
is "The BRCA1 gene" and ``CO<sub>2</sub>`` is "CO2". Joining every text node and tail
in document order does that; what breaks parsers that lose word boundaries is
stripping each piece before joining. Dates are the other messy string: ``MedlineDate``
holds free text such as ``1998 Dec-1999 Jan`` or ``2000 Spring``.
"""

from __future__ import annotations

import re

from lxml import etree

from medsearch.records import MONTHS, PubDate

MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"

# A bold run that is a section heading glued to the previous sentence ("fungus.<b>
# IMPORTANCE</b> The"): the only place where markup, not a space, marks a word boundary.
_HEADING = re.compile(r"[A-Z][A-Z /&-]{2,}:?")
_SENTENCE_END = (".", ":", ";", "!", "?", ")")

SEASONS = {
    "spring": "Spring",
    "summer": "Summer",
    "autumn": "Autumn",
    "fall": "Fall",
    "winter": "Winter",
}
_FULL_MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_INDEX = {name: i + 1 for i, name in enumerate(MONTHS)}
_YEAR = re.compile(r"(?<!\d)(\d{4})(?!\d)")
_WORD = re.compile(r"[A-Za-z]+|\d+")
MIN_YEAR, MAX_YEAR = 1000, 2999


def normalise_space(text: str) -> str:
    """Collapse every run of whitespace (including no-break spaces) to one space.

    Most field texts need no change, and a record has ~40 of them, so that case is
    recognised first: every whitespace character ``str.split`` knows except the ASCII
    space is non-printable, so printable text without a double, leading or trailing
    space is already normal (a third of the cost of splitting and joining it).
    """
    if text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text
    return " ".join(text.split())


def flatten(elem: etree._Element) -> str:
    """The element's text with inline markup removed and word boundaries kept."""
    if len(elem) == 0:  # the common case: no markup at all
        return normalise_space(elem.text or "")
    parts: list[str] = []
    _walk(elem, parts, in_math=False)
    return normalise_space("".join(parts))


def _walk(elem: etree._Element, parts: list[str], *, in_math: bool) -> None:
    """Append ``elem``'s text and its children's text and tails, in document order.

    Inside MathML the whitespace-only text nodes are indentation, not spaces between
    symbols (``<mml:mi>V</mml:mi> <mml:mi>O</mml:mi>`` is "VO"), so they are dropped.
    """
    text = elem.text
    if text and not (in_math and text.isspace()):
        parts.append(text)
    for child in elem:
        tag = child.tag
        if not isinstance(tag, str):  # comments and processing instructions
            _append_tail(child, parts, in_math)
            continue
        child_in_math = in_math or tag.startswith(MATHML_NS)
        if tag == "b" and _needs_space_before(child, parts):
            parts.append(" ")
        _walk(child, parts, in_math=child_in_math)
        if tag == "b" and _is_heading(child) and child.tail and child.tail[0].isalnum():
            parts.append(" ")
        _append_tail(child, parts, in_math)


def _append_tail(child: etree._Element, parts: list[str], in_math: bool) -> None:
    tail = child.tail
    if tail and not (in_math and tail.isspace()):
        parts.append(tail)


def _is_heading(elem: etree._Element) -> bool:
    return len(elem) == 0 and bool(elem.text) and _HEADING.fullmatch(elem.text or "") is not None


def _needs_space_before(elem: etree._Element, parts: list[str]) -> bool:
    if not _is_heading(elem) or not parts:
        return False
    previous = parts[-1]
    return bool(previous) and previous.endswith(_SENTENCE_END)


def first_children(elem: etree._Element | None) -> dict[object, etree._Element]:
    """Each tag's first child element (what ``elem.find(tag)`` would return), in one pass.

    lxml's ``find`` and ``findtext`` go through ElementPath, ~2 us a call, and a record
    asked ~50 of them (one per field, two per MeSH heading): about a third of the
    parse. One loop over the children costs about as much as one call.
    """
    found: dict[object, etree._Element] = {}
    if elem is not None:
        for child in elem:
            found.setdefault(child.tag, child)
    return found


def child_text(children: dict[object, etree._Element], tag: str) -> str | None:
    """``elem.findtext(tag)`` from :func:`first_children`: the first such child's own
    text, ``""`` when it has none, ``None`` when there is no such child."""
    child = children.get(tag)
    return None if child is None else child.text or ""


def pub_date(elem: etree._Element | None) -> PubDate:
    """``PubDate``/``ArticleDate``: Year/Month/Day, Season, or a free-text MedlineDate."""
    if elem is None:
        return PubDate()
    parts = first_children(elem)
    medline_date = child_text(parts, "MedlineDate")
    if medline_date and medline_date.strip():
        return parse_medline_date(medline_date)
    month_text = child_text(parts, "Month")
    month = month_number(month_text)
    season = season_name(child_text(parts, "Season"))
    if month is None and month_text and month_text.strip():
        season = season or season_name(month_text)  # "Jul-Aug" written as a Month
    return PubDate(
        year=year_number(child_text(parts, "Year")),
        month=month,
        day=day_number(child_text(parts, "Day")) if month else None,
        season=season,
    )


def history_date(data: etree._Element | None) -> PubDate:
    """The ``PubMedPubDate[@PubStatus='pubmed']`` of a ``PubmedData``: the last fallback."""
    if data is None:
        return PubDate()
    for entry in data.iterfind("History/PubMedPubDate"):
        if entry.get("PubStatus") == "pubmed":
            return pub_date(entry)
    return PubDate()


def month_number(text: str | None) -> int | None:
    """``Sep``, ``Sept``, ``September``, ``09`` and ``9`` are all 9; ``Jul-Aug`` is ``None``."""
    if not text:
        return None
    text = text.strip()
    if text.isdigit():
        value = int(text)
        return value if 1 <= value <= 12 else None
    return _month_word(text.rstrip(".")) if text.isalpha() or text.endswith(".") else None


def day_number(text: str | None) -> int | None:
    if not text or not text.strip().isdigit():
        return None
    value = int(text)
    return value if 1 <= value <= 31 else None


def year_number(text: str | None) -> int | None:
    """The first plausible four-digit year in ``text``."""
    if not text:
        return None
    if len(text) == 4 and text.isascii() and text.isdigit():  # <Year>2021</Year>: no regex
        value = int(text)
        return value if MIN_YEAR <= value <= MAX_YEAR else None
    for match in _YEAR.finditer(text):
        value = int(match.group(1))
        if MIN_YEAR <= value <= MAX_YEAR:
            return value
    return None


def season_name(text: str | None) -> str | None:
    """``Spring`` etc. as PubMed spells them; month ranges (``May-Jun``) kept verbatim."""
    if not text or not text.strip():
        return None
    text = normalise_space(text)
    return SEASONS.get(text.lower(), text)


def parse_medline_date(raw: str) -> PubDate:
    """Read a free-text ``MedlineDate``, keeping ``raw`` verbatim.

    The year is the first year mentioned (``1975-1976`` -> 1975). The month is set only
    when exactly one month is named (``2000 Dec 15-31`` -> December), and the day only
    when one single day follows that month; a range such as ``1998 Dec-1999 Jan`` or
    ``2015 Oct-Dec`` leaves both unset. A season word is kept as the season.
    """
    raw = normalise_space(raw)
    year = year_number(raw)
    tokens = _WORD.findall(raw)
    months = [(i, m) for i, tok in enumerate(tokens) if tok.isalpha() and (m := _month_word(tok))]
    seasons = [SEASONS[tok.lower()] for tok in tokens if tok.lower() in SEASONS]
    month = day = None
    if len(months) == 1:
        index, month = months[0]
        following = tokens[index + 1 : index + 3]
        if len(following) == 1 and following[0].isdigit():
            day = day_number(following[0])
    season = seasons[0] if len(seasons) == 1 and not months else None
    return PubDate(year=year, month=month, day=day, season=season, raw=raw or None)


def _month_word(token: str) -> int | None:
    """A month name or its abbreviation (``Sept`` too); not any word starting ``mar``."""
    lowered = token.lower()
    number = _MONTH_INDEX.get(lowered[:3])
    if number is None:
        return None
    full = _FULL_MONTHS[number - 1]
    return number if full.startswith(lowered) else None
