"""An Ovid MEDLINE strategy written out in PubMed's syntax, for the user to check.

``medsearch translate --from ovid`` reads a numbered Ovid strategy and writes each line
in PubMed form (``#N`` lines, as PubMed's Advanced page numbers them). What has an exact
PubMed form is rewritten (headings, explosion, major topics, field suffixes, ``$``
truncation, line combinations, lower-case operators); what has none (``adjN`` between
anything but two plain words, ``?``/``#`` wildcards, subheading abbreviations) is left
as typed with a note, so the line is refused when searched rather than run another way.
Ovid's syntax: its MEDLINE field guide (https://ospguides.ovid.com/OSPguides/medline.htm).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from medsearch.query.ovid import _SUFFIX_TAGS

_NUMBERED = re.compile(r"^\s*(?:#\s*)?([0-9]+)[.)\s]\s*(.*?)\s*(?:\([0-9,]+\))?\s*$")
_COMBINE = re.compile(r"^(or|and)/([0-9]+(?:\s*[-,]\s*[0-9]+)*)$", re.IGNORECASE)
_LINE_REFS = re.compile(r"^[0-9\s()]+(?:\s(?:or|and|not)\s[0-9\s()]+)*$", re.IGNORECASE)
_GROUP_SUFFIX = re.compile(r"\)\.((?:[a-z]{2},)*[a-z]{2})\.?(?=\s|$|\))", re.IGNORECASE)
_WORD_SUFFIX = re.compile(r"(\S+?)\.((?:[a-z]{2},)*[a-z]{2})\.?(?=\s|$|\))", re.IGNORECASE)
_HEADING = re.compile(r"^(exp\s+)?(\*)?(.+?)/([a-z]{2})?$", re.IGNORECASE)
_OPERATOR = re.compile(r"(?<![\w\"])(or|and|not)(?![\w\"])", re.IGNORECASE)
_TOP_SPLIT = re.compile(r"\s+(OR|AND|NOT)\s+")
_ADJ = re.compile(
    r"\(\s*([A-Za-z][\w-]*)\s+adj([0-9]*)\s+([A-Za-z][\w-]*)\s*\)(?:\.((?:[a-z]{2},)*[a-z]{2})\.?)?"
    r"|(?<![\w(])([A-Za-z][\w-]*)\s+adj([0-9]*)\s+([A-Za-z][\w-]*)(?![\w)])",
    re.IGNORECASE,
)
_FIELD_ECHO = re.compile(r"\s*\[(mp=[^\]]*)\]")
_DOLLAR = re.compile(r"([A-Za-z])\$[0-9]?")
_WILDCARD = re.compile(r"[A-Za-z][?#][A-Za-z]")


@dataclass(frozen=True, slots=True)
class Translated:
    """The strategy's lines in PubMed form (``#N text``) and what could not be carried."""

    lines: tuple[str, ...]
    notes: tuple[str, ...]


def translate_ovid(text: str) -> Translated:
    """Each numbered line of an Ovid strategy in PubMed form, with notes."""
    lines: list[str] = []
    notes: list[str] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        numbered = _NUMBERED.match(raw)
        number = int(numbered.group(1)) if numbered else len(lines) + 1
        body = numbered.group(2) if numbered else raw.strip()
        pubmed, problems = _line(body)
        lines.append(f"#{number} {pubmed}")
        notes.extend(f"#{number}: {p}" for p in problems)
    return Translated(tuple(lines), tuple(notes))


def _line(body: str) -> tuple[str, list[str]]:
    problems: list[str] = []
    if (combine := _COMBINE.match(body)) is not None:
        return _combined(combine.group(1).upper(), combine.group(2)), problems
    if _LINE_REFS.match(body):
        refs = re.sub(r"[0-9]+", lambda m: f"#{m.group()}", body)
        return _OPERATOR.sub(lambda m: m.group().upper(), refs), problems
    if (echo := _FIELD_ECHO.search(body)) is not None:
        body = _FIELD_ECHO.sub("", body).rstrip()
        problems.append(f"Ovid's field list [{echo.group(1)[:20]}...] left out (not a query)")
    body = _ADJ.sub(_near, body)
    body = _GROUP_SUFFIX.sub(lambda m: ")" + _tag(m.group(1), problems), body)
    body = _WORD_SUFFIX.sub(lambda m: m.group(1) + _tag(m.group(2), problems), body)
    body = _DOLLAR.sub(lambda m: m.group(1) + "*", body)
    if _WILDCARD.search(body):
        problems.append("Ovid's ?/# wildcard has no PubMed form: write each spelling, joined by OR")
    if re.search(r"\badj[0-9]*\b", body, re.IGNORECASE):
        problems.append(
            "Ovid's adjN has no PubMed form here (PubMed's proximity takes plain words in"
            " quotes, no truncation or groups): left as typed"
        )
    body = _OPERATOR.sub(lambda m: m.group().upper(), body)
    units = _TOP_SPLIT.split(body)
    return "".join(
        _heading(u, problems) if i % 2 == 0 else f" {u} " for i, u in enumerate(units)
    ), (problems)


def _combined(op: str, spec: str) -> str:
    numbers: list[int] = []
    for part in spec.replace(" ", "").split(","):
        first, _, last = part.partition("-")
        numbers += range(int(first), int(last or first) + 1)
    return f" {op} ".join(f"#{n}" for n in numbers)


def _tag(fields: str, problems: list[str]) -> str:
    tag = _SUFFIX_TAGS.get(fields.lower())
    if tag is None:
        parts = [_SUFFIX_TAGS.get(f) for f in fields.lower().split(",")]
        if all(parts) and set(parts) <= {"ti", "ab", "tiab"}:
            return "[tiab]"
        problems.append(f"Ovid's fields .{fields}. read as [tw] (PubMed's text words)")
        return "[tw]"
    return f"[{tag}]"


def _near(match: re.Match[str]) -> str:
    """``(heart adj3 failure).ti.`` -> ``"heart failure"[ti:~3]``: two plain words only;
    anything else is left as typed (and noted by the caller)."""
    first, gap, second, fields = match.group(1), match.group(2), match.group(3), match.group(4)
    if first is None:
        first, gap, second, fields = match.group(5), match.group(6), match.group(7), None
    tag = "ti" if fields is not None and fields.lower() == "ti" else "tiab"
    return f'"{first} {second}"[{tag}:~{gap or "1"}]'


def _heading(unit: str, problems: list[str]) -> str:
    core = unit.strip()
    opened = len(core) - len(core.lstrip("("))
    closed = len(core) - len(core.rstrip(")"))
    inner = core[opened : len(core) - closed if closed else None]
    heading = _HEADING.match(inner)
    if heading is None or "[" in inner:
        return unit
    exp, star, name, sub = heading.groups()
    if sub:
        problems.append(f"subheading abbreviation /{sub} in '{inner}': write its full name")
        return unit
    tag = ("majr" if star else "mh") + ("" if exp else ":noexp")
    return f'{"(" * opened}"{name.strip()}"[{tag}]{")" * closed}'
