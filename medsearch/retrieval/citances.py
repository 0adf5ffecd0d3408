"""Citation sentences ("citances") from a pasted manuscript paragraph.

``medsearch cite`` takes a paragraph a researcher is writing and suggests references for
each sentence (the CiteRec recipe: the sentence is the query). A sentence copied from a
manuscript carries its citation markers, and they must go before the sentence becomes a
query: ``[3-5]`` and ``(Smith et al., 2019)`` are noise to BM25 and to the encoder, and
worse, the ``et al.`` inside a marker is a full stop to a sentence splitter. So markers
are found and removed from the whole paragraph FIRST, the tidy text is split into
sentences, and each sentence is mapped back to the stretch of the paragraph it came
from (``original``) and the markers found there.

Recognised markers (everything else is left alone):

- numeric brackets ``[12]``, ``[3-5,8]``, ``[3–5, 8]``, chains ``[1], [2]``/``[1]–[3]``,
  and the same wrapped in parentheses with an optional lead-in, ``(see [1])``;
- parenthetical author-year ``(Smith et al., 2019; Lee 2020)``, ``(Smith and Jones,
  2001)``, ``(Smith & Jones 2001a)``, ``(e.g., Smith et al., 2019)``, ``(see Lee,
  2020)``, organisations ``(American Cancer Society, 2007)``; also in square brackets,
  and closing a parenthesis after other content: ``(IL-6; Smith 2019)`` -> ``(IL-6)``;
- narrative author-year ``Smith et al. (2019)``: the surnames stay in the text (they
  carry the sentence's grammar, and the lexical index matches them against authors),
  ``et al.`` and ``(2019)`` go; the marker recorded is the whole ``Smith et al. (2019)``.
  ``et al.`` directly before a numeric marker goes too (``Lee et al. [4] found``), so
  ``et al.`` is never left where a splitter could mistake it for a full stop;
- Unicode superscript numbers ``¹²``, ``³⁻⁵`` after punctuation or after a word of three
  or more letters (so ``mg/m²``, ``cm³``, ``I²``, ``10⁵`` and ``s⁻¹`` stay);
- numbers glued to punctuation, ``disease.12,13 Next`` (after a full stop, only at the
  end of a sentence) and ``cells,3-5 which`` (after a comma), only after a word of
  three or more letters that is not ``Fig``/``Table``/``Ref``...

Never stripped: ``(p < 0.05)``, ``(n = 12)``, ``(95% CI 1.2-3.4)``, ``IL-6``,
``COVID-19``, ``[Ca2+]i``, ``(2019-nCoV)``, years in prose. Parenthesised bare numbers
``(1, 2)`` are not taken for citations: they cannot be told from enumerations ``(1)``
and equation numbers.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from medsearch.sentences import split_sentences


@dataclass(frozen=True, slots=True)
class Citance:
    """One sentence of the pasted paragraph.

    ``text`` is the query (markers removed, whitespace tidy); ``original`` is the
    sentence as pasted, markers included (a marker right after a full stop, as in
    ``disease.¹²``, belongs to the sentence it follows).
    """

    text: str
    original: str
    markers: tuple[str, ...] = ()
    has_citation: bool = False  # the sentence carried at least one marker


# ---------------------------------------------------------------- marker patterns

_UPPER = "A-ZÀ-ÖØ-ÞĀ-ž"  # Latin-1 capitals and Latin Extended-A (Łukasz, Šimić)
_NAME_CHAR = r"(?:[^\W\d_]|['’\-])"
_NOT_NAME = (
    # "(September 2019)" is a date, but "(August et al. 2000)" is a citation.
    r"(?!(?:January|February|March|April|May|June|July|August|September|October|"
    r"November|December|Spring|Summer|Autumn|Fall|Winter),?\s+\d)"
    r"(?!(?:Table|Tables|Figure|Figures|Fig|Figs|Supplementary|Phase|Stage|Grade|Type|"
    r"Version|Since|In|From|Until)\b)"
)
_PARTICLE = r"(?:(?:van|von|de|der|den|del|della|da|di|du|dos|le|la|ten|ter)\s+)"
_SURNAME = rf"{_NOT_NAME}{_PARTICLE}*[{_UPPER}]{_NAME_CHAR}+"
_JOIN = r"(?:\s*,\s*(?:and\s+|&\s*)?|\s+(?:and|&)\s+|\s+(?:of|for|the|on)\s+|\s+)"
_INITIALS = rf"(?:\s+(?:[{_UPPER}]\.?){{1,3}}(?![\w]))?"  # Vancouver style: "Lema SC"
_ET_AL = r"(?:,?\s+(?:et\s+al\.?|and\s+(?:co-?workers|colleagues)))"
# Atomic: "Smith AB" is a surname with initials, never re-read as two surnames. Without
# it a run of short capitals ("(WHO CDC FDA ...") backtracks exponentially.
_AUTHOR = rf"(?>{_SURNAME}{_INITIALS})"
_AUTHORS = rf"{_AUTHOR}(?:{_JOIN}{_AUTHOR})*{_ET_AL}?"
_YEAR = r"(?:1[6-9]|20)\d{2}[a-z]?"
_YEAR_LIKE = rf"(?:{_YEAR}|in\s+press|submitted|unpublished(?:\s+data)?|n\.d\.)"
_YEARS = rf"{_YEAR_LIKE}(?:\s*,\s*(?:{_YEAR}|[a-z]\b))*"
_PAGES = r"(?:,?\s*pp?\.\s*\d+(?:\s*[-–]\s*\d+)?)?"
_LEAD = (
    r"(?i:e\.\s?g\.,?|i\.\s?e\.,?|see(?:\s+also)?|cf\.|reviewed\s+(?:in|by)|"
    r"for\s+(?:a\s+)?reviews?,?\s+see|as\s+reviewed\s+in|and|also)"
)
_ITEM = rf"(?:{_LEAD}\s+)?{_AUTHORS},?\s+{_YEARS}{_PAGES}"
_SEP = r"(?:\s*[;,]\s*|\s+and\s+)"
_AUTHOR_YEAR_GROUP = (
    rf"\(\s*{_ITEM}(?:{_SEP}{_ITEM})*\s*\)|\[\s*{_ITEM}(?:{_SEP}{_ITEM})*\s*\]"
    # citations closing a parenthesis that holds something else first:
    # "(Pan troglodytes; Chimpanzee Sequencing Consortium 2005)" -> "(Pan troglodytes)"
    rf"|(?<=[^\s(\[])\s*[;,]\s*{_ITEM}(?:{_SEP}{_ITEM})*(?=\s*\))"
)

_NUM = r"\d{1,4}"
_NUM_LIST = rf"{_NUM}(?:\s*[-–—,;]\s*{_NUM})*"
_LOCATOR = (  # "[17, Theorem 3 and Corollary 1]", "[15, Chapter 4]", "[12, p. 5]"
    r"(?:,\s*(?i:chapters?|ch\.|sections?|sec\.|theorems?|lemmas?|corollar(?:y|ies)|"
    r"pages?|pp?\.|tables?|fig(?:ure)?s?\.?|eqs?\.|equations?|appendix)"
    r"\s*[\w.]+(?:\s+and\s+[\w.]+(?:\s+[\w.]+)?)?)"
)
_NUM_BRACKET = rf"\[\s*(?:(?i:refs?\.?)\s*)?{_NUM_LIST}{_LOCATOR}?\s*\]"
_NUM_CHAIN = rf"{_NUM_BRACKET}(?:\s*[-–—,]\s*{_NUM_BRACKET})*"
# Not glued to a word ("[1,4]-dioxane") nor followed by "=" ("F[1,12] = 8.42").
_NOT_AFTER_NUMERIC = r"(?![\w+\-])(?!\s*[=<>≤≥])"
_NUMERIC = (
    rf"\(\s*(?:{_LEAD}\s+)?{_NUM_CHAIN}\s*\){_NOT_AFTER_NUMERIC}|{_NUM_CHAIN}{_NOT_AFTER_NUMERIC}"
)

_NARRATIVE = (
    rf"(?<![\w\-])(?P<names>{_SURNAME}(?:(?:\s*,\s*|\s*,?\s+(?:and|&)\s+){_SURNAME})*)"
    rf"(?:(?P<etal>{_ET_AL})?(?P<year>\s*\(\s*{_YEARS}\s*\))"
    # Springer's narrative style has no parentheses: "Sait et al. 2006"; without the
    # parentheses only the unmistakable "et al." form is taken.
    rf"|(?P<etal2>{_ET_AL})(?P<year2>,?\s+{_YEARS})(?![\w\-]))"
)
_ET_AL_BEFORE = re.compile(r",?\s+(?:et\s+al\.?|and\s+(?:co-?workers|colleagues)),?\s*$")

_SUP = "⁰¹²³⁴⁵⁶⁷⁸⁹"
_UNICODE_SUPERSCRIPT = re.compile(
    rf"(?:(?<=[.,;:)\]])|(?<=[^\W\d_]{{3}}))[{_SUP}]+(?:\s*[,⁻–\-]\s*[{_SUP}]+)*(?![{_SUP}\w])"
)
_GLUED_AFTER_STOP = re.compile(
    r"(?<=[^\W\d_]{3}\.)\d{1,3}(?:[,\-–]\d{1,3})*(?=\s+[\"“(\[A-Z]|\s*$)"
)
_GLUED_AFTER_COMMA = re.compile(r"(?<=[^\W\d_]{3},)\d{1,3}(?:[,\-–]\d{1,3})*(?=\s|$|[.;:])")
_WORD_BEFORE = re.compile(r"([^\W\d_]+)[.,]$")
_NOT_CITING_WORDS = frozenset(
    {"fig", "figs", "figure", "table", "tables", "ref", "refs", "eq", "eqs", "vol", "chap"}
    | {"sec", "suppl", "step", "stage", "phase", "grade", "type", "version", "day", "week"}
)


@dataclass(frozen=True, slots=True)
class _Marker:
    start: int
    end: int
    removals: tuple[tuple[int, int], ...]  # spans of the paragraph to delete


@functools.cache
def _compiled(source: str) -> re.Pattern[str]:
    """The big marker patterns compile on first use (~60 ms), not on import."""
    return re.compile(source)


def find_markers(paragraph: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every citation marker in ``paragraph``, in order."""
    return [(m.start, m.end) for m in _markers(paragraph)]


def _markers(paragraph: str) -> list[_Marker]:
    found: list[_Marker] = []
    for pattern in (_compiled(_AUTHOR_YEAR_GROUP), _compiled(_NUMERIC), _UNICODE_SUPERSCRIPT):
        found.extend(
            _Marker(m.start(), m.end(), ((m.start(), m.end()),))
            for m in pattern.finditer(paragraph)
        )
    for pattern in (_GLUED_AFTER_STOP, _GLUED_AFTER_COMMA):
        for m in pattern.finditer(paragraph):
            word = _WORD_BEFORE.search(paragraph, 0, m.start())
            if word is None or word.group(1).casefold() not in _NOT_CITING_WORDS:
                found.append(_Marker(m.start(), m.end(), ((m.start(), m.end()),)))
    for m in _compiled(_NARRATIVE).finditer(paragraph):
        etal, year = ("etal", "year") if m.group("year") else ("etal2", "year2")
        removals = [m.span(year)]
        if m.group(etal):
            removals.insert(0, m.span(etal))
        found.append(_Marker(m.start(), m.end(), tuple(removals)))
    accepted: list[_Marker] = []
    for marker in sorted(found, key=lambda mk: (mk.start, -mk.end)):
        if accepted and marker.start < accepted[-1].end:
            continue
        accepted.append(_with_et_al(paragraph, marker))
    return accepted


def _with_et_al(paragraph: str, marker: _Marker) -> _Marker:
    """Also remove an ``et al.`` right before a numeric marker: ``Lee et al. [4]``."""
    if paragraph[marker.start] not in "[(" or len(marker.removals) != 1:
        return marker
    before = _ET_AL_BEFORE.search(paragraph, 0, marker.start)
    if before is None:
        return marker
    return _Marker(marker.start, marker.end, ((before.start(), marker.end),))


# ---------------------------------------------------------------- stripping and splitting


def strip_citations(paragraph: str) -> str:
    """``paragraph`` with every citation marker removed and whitespace tidied."""
    text, _ = _strip(paragraph, _markers(paragraph))
    return text


def split_citances(paragraph: str, *, citing_only: bool = False) -> list[Citance]:
    """The paragraph's sentences, each with its markers removed and listed.

    By default every sentence comes back, with ``has_citation`` telling the ones that
    cited something, so the UI can show both; ``citing_only=True`` keeps only those.
    """
    markers = _markers(paragraph)
    stripped, origin = _strip(paragraph, markers)
    spans = _sentence_spans(stripped)
    if not spans:
        return []
    bounds = [0] + [origin[start] for start, _ in spans[1:]] + [len(paragraph)]
    out: list[Citance] = []
    for i, (start, end) in enumerate(spans):
        lo, hi = bounds[i], bounds[i + 1]
        found = tuple(paragraph[m.start : m.end] for m in markers if lo <= m.start < hi)
        if citing_only and not found:
            continue
        out.append(
            Citance(
                text=stripped[start:end],
                original=paragraph[lo:hi].strip(),
                markers=found,
                has_citation=bool(found),
            )
        )
    return out


def _strip(paragraph: str, markers: Sequence[_Marker]) -> tuple[str, list[int]]:
    """Remove the markers' spans; return the tidy text and each character's origin.

    A removal takes the whitespace before it along (``cells [1].`` -> ``cells.``), and
    punctuation left doubled at the seam is merged (``mice,3.`` -> ``mice.``,
    ``cells, [1], and`` -> ``cells, and``).
    """
    removed = bytearray(len(paragraph))
    seams: list[int] = []
    for marker in markers:
        for start, end in marker.removals:
            while start > 0 and paragraph[start - 1].isspace():
                start -= 1
            removed[start:end] = b"\x01" * (end - start)
            seams.append(end)
    for seam in seams:
        left = _kept_before(paragraph, removed, seam)
        right = _kept_after(paragraph, removed, seam)
        if left is None or right is None:
            continue
        lc, rc = paragraph[left], paragraph[right]
        if rc in ".,;:!?)]":  # no space before punctuation: "mice [2] ." -> "mice."
            removed[seam:right] = b"\x01" * (right - seam)
        if lc in ",;:" and rc in ".,;:":
            removed[left] = 1
        elif lc == "." and rc == ".":
            removed[right] = 1
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(paragraph):
        if removed[index]:
            continue
        if char.isspace():
            if not chars or chars[-1] == " ":
                continue
            char = " "
        chars.append(char)
        origin.append(index)
    if chars and chars[-1] == " ":
        chars.pop()
        origin.pop()
    return "".join(chars), origin


def _kept_before(text: str, removed: bytearray, index: int) -> int | None:
    i = index - 1
    while i >= 0 and (removed[i] or text[i].isspace()):
        i -= 1
    return i if i >= 0 else None


def _kept_after(text: str, removed: bytearray, index: int) -> int | None:
    i = index
    while i < len(text) and (removed[i] or text[i].isspace()):
        i += 1
    return i if i < len(text) else None


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """Sentence spans in ``text``, cut by the splitter abstracts are indexed with.

    ``text`` is tidy (one space between words, no line breaks), so the sentences of
    :func:`medsearch.sentences.split_sentences` are consecutive stretches of it, one
    space apart: the splitter loses nothing (its property test says so).
    """
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in split_sentences(text):
        start = text.index(sentence, cursor)
        spans.append((start, start + len(sentence)))
        cursor = start + len(sentence)
    return spans
