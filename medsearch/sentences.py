"""Biomedical-aware sentence splitting, shared by ingest and the query side.

Ingest encodes each abstract sentence; sentence search, ``cite`` and the terminal UI
split the same abstracts again at query time to find a sentence's text from its id
(``pmid * 1000 + position``) and to split pasted paragraphs. Both sides must cut
identically, so the one splitter lives here in the core, which ``ingest`` imports and
never the other way round.

A sentence ends at ``.``, ``?`` or ``!`` (plus any closing quotes or brackets) followed
by a space and then something that can start a sentence: an upper-case letter, a digit,
an opening bracket or quote, or a Greek letter (``β-Blockers reduce ...``). A line break
is always a boundary, because :attr:`Article.abstract_text` puts each labelled section on
its own line. A period does *not* end a sentence after:

- abbreviations that are followed by more of the same sentence: ``e.g.``, ``i.e.``,
  ``et al.``, ``Fig. 2``, ``Figs.``, ``vs.``, ``approx.``, ``Dr.``, ``ca.``, ``cf.``,
  ``Ref.`` and their kin (:data:`ABBREVIATIONS`); ``No.`` only before a number;
- a single capital letter: initials (``J. Smith``) and abbreviated genera (``E. coli``,
  ``S. aureus``, ``H. sapiens``);
- dotted initialisms (``U.S. Food and Drug Administration``);
- list markers (``(i).``, ``(a).``).

A capital letter after ``vitamin``, ``hepatitis``, ``type``, ``group`` ... does end a
sentence (``levels of vitamin D. We``): see :data:`LETTER_NAMERS`.

A lower-case single letter is a unit (``for 2 h. The``) and may end a sentence.
Decimals and p-values (``p < 0.05``, ``P = .03``, ``2.5 mg``) never split because the
period is not followed by a space. Output is whitespace-normalised and loses nothing:
``" ".join(split_sentences(t)) == " ".join(t.split())``.

LitSense indexes abstract sentences, and so do we: :func:`article_sentences` covers the
abstract only. The title is encoded with the article (MedCPT's article encoder sees the
title and abstract as a pair) so a title sentence would duplicate the article match;
each sentence keeps its section label (``METHODS`` ...) for display.
"""

from __future__ import annotations

import re
import unicodedata

from medsearch.records import SENTENCES_PER_ARTICLE, Article, Sentence

# Not here on purpose: units that end sentences ("30 ms.", "2 min."), and "sp."/"spp."
# ("Bacillus spp. The ...") which end sentences more often than they continue them.
ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "al",
        "fig",
        "figs",
        "vs",
        "approx",
        "dr",
        "ca",
        "cf",
        "ref",
        "refs",
        "eq",
        "eqs",
        "tab",
        "vol",
        "pp",
        "mr",
        "mrs",
        "prof",
        "st",
        "jr",
        "sr",
        "inc",
        "ltd",
        "co",
        "resp",
        "subsp",
        "viz",
        "cit",
        "ed",
        "eds",
        "suppl",
        "dept",
        "univ",
    ]
)
NUMBER_ABBREVIATIONS = frozenset({"no", "nos"})  # "No. 5": only before a number
# A capital letter after these words is a name ending a sentence ("vitamin D. The"),
# not an initial or an abbreviated genus ("J. Smith", "S. Typhimurium").
LETTER_NAMERS = frozenset(
    [
        "vitamin",
        "vitamins",
        "hepatitis",
        "type",
        "types",
        "group",
        "groups",
        "class",
        "classes",
        "phase",
        "grade",
        "stage",
        "protein",
        "proteins",
        "complex",
        "factor",
        "influenza",
        "chain",
        "domain",
        "site",
        "region",
        "cluster",
    ]
)

_CANDIDATE = re.compile(r"[.?!]+[\"'”’)\]]* ")
_INITIALISM = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_LIST_MARKER = re.compile(r"\((?:[ivx]+|[a-z])\)")
_OPENERS = "([{\"'“‘"
_LEADING = _OPENERS


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text``, whitespace-normalised, in order."""
    out: list[str] = []
    for line in text.splitlines():
        normalised = " ".join(line.split())
        if normalised:
            out.extend(_split_line(normalised))
    return out


def article_sentences(article: Article) -> list[Sentence]:
    """The abstract's sentences as :class:`Sentence` records, positions 0, 1, ...

    Each section is split on its own (a section boundary is a sentence boundary) and
    keeps its label. Positions beyond ``SENTENCES_PER_ARTICLE - 1`` cannot be given an
    id of their own; PubMed's longest abstracts have ~100 sentences, so they are dropped.
    """
    out: list[Sentence] = []
    for section in article.abstract:
        for text in split_sentences(section.text):
            if len(out) >= SENTENCES_PER_ARTICLE:
                return out
            out.append(Sentence(article.pmid, len(out), text, section.label))
    return out


def _split_line(s: str) -> list[str]:
    out: list[str] = []
    start = 0
    for match in _CANDIDATE.finditer(s):
        nxt = s[match.end()] if match.end() < len(s) else ""
        if not _can_start(nxt) or _continues(s, match.start(), match.group(), nxt):
            continue
        out.append(s[start : match.end() - 1])
        start = match.end()
    out.append(s[start:])
    return out


def _can_start(char: str) -> bool:
    if not char:
        return False
    if char.isupper() or char.isdigit() or char in _OPENERS:
        return True
    return char.isalpha() and unicodedata.name(char, "").startswith("GREEK")


def _continues(s: str, end: int, terminator: str, nxt: str) -> bool:
    """Whether the period at ``s[end]`` belongs to an abbreviation, not a sentence end."""
    if not terminator.startswith(".") or terminator.startswith(".."):
        return False  # ? ! and ellipses end sentences
    space = s.rfind(" ", 0, end)
    raw = s[space + 1 : end]
    if _LIST_MARKER.fullmatch(raw):
        return True
    word = raw.lstrip(_LEADING)
    lower = word.lower()
    if lower in ABBREVIATIONS:
        return True
    if lower in NUMBER_ABBREVIATIONS:
        return nxt.isdigit()
    if len(word) == 1 and word.isupper():  # J. Smith, E. coli; not "vitamin D."
        before = s[s.rfind(" ", 0, max(space, 0)) + 1 : max(space, 0)].lower()
        return before not in LETTER_NAMERS
    return bool(_INITIALISM.fullmatch(word))
