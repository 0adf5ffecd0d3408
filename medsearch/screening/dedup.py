"""Duplicates found on the way in: the same PMID, the same DOI, or the same normalised
title, year and first author's surname (in that order of strength).

The first record of a group is kept; each later one is marked as a duplicate of it with
the key that matched, so the user can review the list and undo any of them
(:meth:`medsearch.screening.project.Project.restore_duplicate`). Nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from medsearch.screening.items import Item, doi_key, title_year_author

KEYS = ("pmid", "doi", "title_year_author")


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Record ``index`` (in the list given) repeats record ``of``, found by ``key``."""

    index: int
    of: int
    key: str


def find_duplicates(items: Sequence[Item], known: Sequence[Item] = ()) -> list[Duplicate]:
    """The duplicates among ``items``; with ``known`` (a project's records already in),
    ``of`` is negative for a known record: ``-1 - position`` in ``known``."""
    seen: dict[tuple[str, str], int] = {}
    for position, item in enumerate(known):
        for key, value in _keys(item):
            seen.setdefault((key, value), -1 - position)
    out: list[Duplicate] = []
    for index, item in enumerate(items):
        keys = _keys(item)
        match = next(((key, seen[(key, v)]) for key, v in keys if (key, v) in seen), None)
        if match is not None:
            out.append(Duplicate(index, match[1], match[0]))
            continue
        for key, value in keys:
            seen[(key, value)] = index
    return out


def _keys(item: Item) -> list[tuple[str, str]]:
    keys = []
    if item.pmid is not None:
        keys.append(("pmid", str(item.pmid)))
    if (doi := doi_key(item.doi)) is not None:
        keys.append(("doi", doi))
    if (tya := title_year_author(item)) is not None:
        keys.append(("title_year_author", tya))
    return keys


def counts(duplicates: Sequence[Duplicate]) -> dict[str, int]:
    """Duplicates removed, by the key that found them (every key present, 0 or more)."""
    out = dict.fromkeys(KEYS, 0)
    for d in duplicates:
        out[d.key] += 1
    return out
