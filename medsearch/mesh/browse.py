"""What the MeSH browser and the search bar's completion read (no UI here).

A heading is opened by name, entry term or UI and shown with its scope note, entry
terms, allowed subheadings and the headings one step above and below it in each tree;
walking the tree is opening those. ``heading_query`` writes the query a browser action
adds; :func:`complete` finishes a heading name typed before ``[mh`` or inside quotes.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

from medsearch.mesh import tables

TAGS = ("mh", "majr")


@dataclass(frozen=True, slots=True)
class HeadingView:
    heading: tables.Heading
    broader: tuple[tuple[str, str], ...]
    narrower: tuple[tuple[str, str], ...]


def open_heading(conn: sqlite3.Connection, name: str) -> HeadingView | None:
    """The heading ``name`` (a name, an entry term or a UI) names, or None."""
    key = name.strip()
    ui = key if tables.heading(conn, key) is not None else tables.descriptor_ui(conn, key)
    found = tables.heading(conn, ui) if ui is not None else None
    if found is None:
        return None
    return HeadingView(
        found, tuple(tables.broader(conn, found.ui)), tuple(tables.narrower(conn, found.ui))
    )


def heading_query(name: str, tag: str = "mh", *, noexp: bool = False, subheading: str = "") -> str:
    """``"Neoplasms"[mh]``, ``"Neoplasms/surgery"[majr:noexp]``: a heading as a query."""
    if tag not in TAGS:
        raise ValueError(f"a heading is searched with [mh] or [majr], not [{tag}]")
    value = f"{name}/{subheading}" if subheading else name
    return f'"{value}"[{tag}{":noexp" if noexp else ""}]'


def add_to_query(query: str, fragment: str) -> str:
    """``fragment`` ANDed to what is typed (the fragment alone when nothing is)."""
    return f"{query.strip()} AND {fragment}" if query.strip() else fragment


_IN_QUOTES = re.compile(r'(?P<head>.*)"(?P<words>[^"]+)$')
_BEFORE_TAG = re.compile(r'(?P<words>[^"()\[\]]+?)\s*\[(?:mh|majr|mesh)\]?$', re.IGNORECASE)
_OPERATOR = re.compile(r"\b(?:AND|OR|NOT)\b")
MIN_PREFIX = 3


def complete(conn: sqlite3.Connection, value: str) -> str | None:
    """``"neopl`` -> ``"Neoplasms"[mh]``: the search bar's value with the heading name
    being typed in quotes completed and tagged, or None. The name is the first heading
    (by its casefolded name) starting with what was typed; the completion keeps what was
    typed as its start, as an inline suggestion must."""
    quoted = _IN_QUOTES.match(value)
    if quoted is None or len(quoted["words"].strip()) < MIN_PREFIX:
        return None
    names = tables.matching_names(conn, quoted["words"], 1)
    if not names:
        return None
    return f'{quoted["head"]}"{quoted["words"]}{names[0][len(quoted["words"]) :]}"[mh]'


def typed_heading(value: str) -> str | None:
    """The heading name typed before ``[mh`` at the end of the search bar (``neopl[mh``),
    for the browser to open by its start; None when the bar does not end so."""
    found = _BEFORE_TAG.search(value)
    if found is None:
        return None
    words = _OPERATOR.split(found["words"])[-1].strip()  # the run the tag applies to
    return words or None


def open_by_start(conn: sqlite3.Connection, typed: str) -> HeadingView | None:
    """The heading ``typed`` names, else the first whose name starts with it."""
    found = open_heading(conn, typed)
    if found is None and len(typed.strip()) >= MIN_PREFIX:
        names = tables.matching_names(conn, typed, 1)
        found = open_heading(conn, names[0]) if names else None
    return found
