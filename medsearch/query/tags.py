"""Field tags applied to what they follow: ``apply_tag`` checks each value the field
cannot take (a truncated PMID, an unknown subset, a bad date) and builds the tagged node;
the date forms of ``[dp]`` and the other date tags, and ``--date``'s range, read here.

Split from :mod:`medsearch.query.parser`, which applies a tag as it reads one.
"""

from __future__ import annotations

import re
from dataclasses import replace

from medsearch.errors import QuerySyntaxError
from medsearch.field_keys import SUBSETS, date_bounds, subset_key
from medsearch.query.lexer import PROXIMITY_TAGS, is_noexp, split_proximity
from medsearch.query.nodes import (
    DATE_TAGS,
    EXACT_TAGS,
    And,
    Node,
    Not,
    Or,
    Phrase,
    Prefix,
    Tagged,
    Term,
    YearRange,
)

MAX_NEAR_WORDS = 5  # a proximity search is one phrase per order of its words: 5! = 120
# DATE_TAGS (nodes.py): PubMed's quoted range form "A"[tag] : "B"[tag] reads as A:B[tag]
# for each (help page, "Searching for a date range").
_DATE = re.compile(r"\s*([0-9]{4})(?:[/-]([0-9]{1,2})(?:[/-]([0-9]{1,2}))?)?\s*")
_PMID = re.compile(r"[0-9]{1,18}")  # fits tantivy's i64
LANGUAGE_CODES = {
    "english": "eng",
    "french": "fre",
    "german": "ger",
    "spanish": "spa",
    "italian": "ita",
    "japanese": "jpn",
    "chinese": "chi",
    "russian": "rus",
    "portuguese": "por",
    "dutch": "dut",
    "polish": "pol",
    "korean": "kor",
}


def apply_tag(tag: str, node: Node, pos: int) -> Node:
    """Restrict ``node`` to the tagged field, checking values the field cannot take."""
    if isinstance(node, Tagged | YearRange):
        return node  # the innermost tag wins: ("x"[ti])[ab] searches the title
    noexp = is_noexp(tag)
    tag, near = split_proximity(tag)
    if noexp:
        return _noexp(tag, node, pos)
    if near is not None:
        return _proximity(tag, near, node, pos)
    if isinstance(node, And | Or):
        return replace(node, children=tuple(apply_tag(tag, child, pos) for child in node.children))
    if isinstance(node, Not):
        return Not(apply_tag(tag, node.child, pos))
    if tag in DATE_TAGS:
        return _year_range(node, pos, tag)
    if isinstance(node, Prefix) and tag in (
        *EXACT_TAGS,
        "pmid",
        "sh",
        "aid",
        "sb",
        "nm",
        "rn",
        "pa",
    ):
        raise QuerySyntaxError(f"truncation (*) does not work with [{tag}] at {pos}", pos)
    if tag == "pmid":
        return _pmids(node, pos)
    if tag == "au" and "," in node.text:  # "Smith, John A"[au]: PubMed's full-name form
        tag = "fau"
    if tag == "sb" and subset_key(node.text) not in {subset_key(s) for s in SUBSETS}:
        known = ", ".join(SUBSETS)
        raise QuerySyntaxError(
            f"unknown subset '{node.text}' for [sb] at {pos} (known: {known})", pos
        )
    if tag == "la":
        code = LANGUAGE_CODES.get(node.text.strip().casefold(), node.text.strip())
        return Tagged(tag, Term(code, node.pos), pos)
    return Tagged(tag, node, pos)


def _pmids(node: Term | Phrase | Prefix, pos: int) -> Node:
    """``1 2 3[pmid]`` and ``1,2[pmid]``: any of the listed PMIDs (PubMed takes lists)."""
    ids = node.text.replace(",", " ").split()
    if not ids or not all(_PMID.fullmatch(i) for i in ids):
        raise QuerySyntaxError(f"[pmid] needs a number, not '{node.text}' at {pos}", pos)
    tagged = tuple(Tagged("pmid", Term(i, node.pos), pos) for i in ids)
    return tagged[0] if len(tagged) == 1 else Or(tagged)


def _noexp(tag: str, node: Node, pos: int) -> Node:
    """``[mh:noexp]``: the heading alone, each heading of a group alone."""
    if isinstance(node, And | Or):
        return replace(node, children=tuple(_noexp(tag, child, pos) for child in node.children))
    if isinstance(node, Not):
        return Not(_noexp(tag, node.child, pos))
    tagged = apply_tag(tag, node, pos)
    return replace(tagged, noexp=True) if isinstance(tagged, Tagged) else tagged


def _proximity(tag: str, near: int, node: Node, pos: int) -> Node:
    """``"hip pain"[tiab:~2]``: PubMed's proximity search, for quoted words in the
    title, title/abstract or affiliation (help page, "Proximity searching")."""
    if tag not in PROXIMITY_TAGS:
        shown = ", ".join(f"[{t}:~N]" for t in PROXIMITY_TAGS)
        raise QuerySyntaxError(f"proximity search works only as {shown}, not [{tag}] at {pos}", pos)
    if isinstance(node, Term):
        return Tagged(tag, node, pos)  # one word: nothing to be near
    if not isinstance(node, Phrase) or node.near is not None:
        raise QuerySyntaxError(f"[{tag}:~{near}] needs quoted words before it at {pos}", pos)
    if len(node.text.split()) > MAX_NEAR_WORDS:
        raise QuerySyntaxError(
            f"proximity search takes at most {MAX_NEAR_WORDS} words at {node.pos}", node.pos
        )
    return Tagged(tag, replace(node, near=near), pos)


def _year_range(node: Term | Phrase | Prefix, pos: int, tag: str = "dp") -> YearRange:
    """``YYYY``, ``YYYY/MM`` or ``YYYY/MM/DD``, or a range ``A:B`` of any of them; an
    open end (``2015:``) runs to the last date ingest keeps. ``tag``: the date tag
    (:data:`~medsearch.query.nodes.DATE_TAGS`) the range searches."""
    text = node.text
    parts = text.split(":")
    if len(parts) == 2 and not parts[1].strip():
        parts[1] = "2999"
    if len(parts) == 2 and not parts[0].strip():
        parts[0] = "1000"
    matches = [_DATE.fullmatch(p) for p in parts]
    if len(parts) > 2 or isinstance(node, Prefix) or not all(matches):
        raise QuerySyntaxError(f"bad date '{text}' for [{tag}] at {pos}", pos)
    dates = [
        (
            int(m.group(1)),
            _part(m.group(2), 12, text, pos, tag),
            _part(m.group(3), 31, text, pos, tag),
        )
        for m in matches
        if m
    ]
    first = date_bounds(*dates[0])[0]
    last = date_bounds(*dates[-1])[1]
    if last < first:
        raise QuerySyntaxError(f"date range '{text}' ends before it starts at {pos}", pos)
    if all(month is None for _, month, _ in dates):
        return YearRange(dates[0][0], dates[-1][0], node.pos, tag=tag)
    return YearRange(dates[0][0], dates[-1][0], node.pos, first, last, tag)


def parse_date_range(text: str) -> tuple[int, int]:
    """``--date A:B`` (or one date) as ``YYYYMMDD`` bounds, read as ``A:B[dp]`` is."""
    return _year_range(Term(text), 0).bounds


def _part(text: str | None, most: int, value: str, pos: int, tag: str = "dp") -> int | None:
    if text is None:
        return None
    number = int(text)
    if not 1 <= number <= most:
        raise QuerySyntaxError(f"bad date '{value}' for [{tag}] at {pos}", pos)
    return number
