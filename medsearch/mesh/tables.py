"""MeSH in the corpus store: one transaction replaces it, and plain SQL reads it.

The tables are the store's (migration "NLM's MeSH" in :mod:`medsearch.store.schema`), so
``medsearch sql`` reads them too. Writing streams: rows go in batches of
:data:`BATCH` as the parser yields them, inside the one transaction that first empties
the tables a file replaces, so a failed import leaves last year's MeSH as it was.

Reading is by key (``field_keys.name_key``): a heading's UI by name or entry term, the
descriptors under a heading by a range of tree numbers (``C04.557`` itself, then
``C04.557.`` up to ``C04.557/``: ``/`` is the character after ``.``), one B-tree range
per tree number of the heading.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from dataclasses import replace as replace_counts
from itertools import islice

from medsearch.field_keys import name_key
from medsearch.mesh.records import (
    AllowedQualifier,
    Descriptor,
    MeshRecord,
    Subheading,
    Supplemental,
)

YEAR_KEY = "mesh_year"
"""``meta`` key: the MeSH year of the installed descriptors."""
BATCH = 5_000
DESCRIPTOR_TABLES = ("mesh_descriptors", "mesh_tree_numbers", "mesh_qualifiers")
SUPPLEMENTAL_TABLES = ("mesh_supplementals", "mesh_supplemental_headings")
SUBHEADING_TABLES = ("mesh_subheadings", "mesh_subheading_trees")
INSTALL_HINT = (
    "MeSH is not installed: `medsearch ingest --download mesh` (or `medsearch mesh import"
    " desc20XX.xml supp20XX.xml`) adds heading explosion and automatic term mapping"
)


@dataclass(frozen=True, slots=True)
class ImportCounts:
    descriptors: int = 0
    tree_numbers: int = 0
    terms: int = 0
    qualifiers: int = 0
    supplementals: int = 0
    actions: int = 0
    """Substance -> pharmacological action pairs (descriptors' and concepts')."""
    subheadings: int = 0
    """Subheadings of the qualifier file (the subheading tree)."""


@dataclass(frozen=True, slots=True)
class Heading:
    """One descriptor as the browser and the explainer show it."""

    ui: str
    name: str
    scope_note: str
    tree_numbers: tuple[str, ...]
    terms: tuple[str, ...]
    qualifiers: tuple[AllowedQualifier, ...]


def has_tables(conn: sqlite3.Connection) -> bool:
    """Whether this store has the MeSH tables (an older store, opened read-only, has not)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='mesh_descriptors'"
    ).fetchone()
    return found is not None


def installed_year(conn: sqlite3.Connection) -> int | None:
    """The installed MeSH's year; None when no descriptors are installed."""
    if not has_tables(conn) or conn.execute("SELECT 1 FROM mesh_descriptors").fetchone() is None:
        return None
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (YEAR_KEY,)).fetchone()
    return int(row[0]) if row and str(row[0]).isdigit() else 0


def replace(
    conn: sqlite3.Connection,
    descriptors: Iterable[MeshRecord] | None,
    supplementals: Iterable[MeshRecord] | None,
    year: int | None,
    subheadings: Iterable[MeshRecord] | None = None,
) -> ImportCounts:
    """Replace the descriptors (when given), the supplementary concepts (when given) and
    the subheading tree (when given), inside the caller's transaction. A substance's
    pharmacological actions go with its file: a descriptor file replaces those of
    descriptors, a supplementary file those of concepts."""
    counts = ImportCounts()
    if descriptors is not None:
        for table in DESCRIPTOR_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM mesh_terms WHERE ui NOT LIKE 'C%'")
        conn.execute("DELETE FROM mesh_actions WHERE ui NOT LIKE 'C%'")
        counts = _write_descriptors(conn, descriptors)
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (YEAR_KEY, str(year or 0)),
        )
    if supplementals is not None:
        for table in SUPPLEMENTAL_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM mesh_terms WHERE ui LIKE 'C%'")
        conn.execute("DELETE FROM mesh_actions WHERE ui LIKE 'C%'")
        supplemental, terms, actions = _write_supplementals(conn, supplementals)
        counts = replace_counts(
            counts,
            terms=counts.terms + terms,
            supplementals=supplemental,
            actions=counts.actions + actions,
        )
    if subheadings is not None:
        for table in SUBHEADING_TABLES:
            conn.execute(f"DELETE FROM {table}")
        counts = replace_counts(counts, subheadings=_write_subheadings(conn, subheadings))
    return counts


def _batches(items: Iterable[MeshRecord], kind: type) -> Iterator[list[MeshRecord]]:
    it = iter(items)
    while batch := list(islice(it, BATCH)):
        wrong = next((r for r in batch if not isinstance(r, kind)), None)
        if wrong is not None:
            raise ValueError(f"a {type(wrong).__name__} among the {kind.__name__} records")
        yield batch


def _write_descriptors(conn: sqlite3.Connection, records: Iterable[MeshRecord]) -> ImportCounts:
    n = trees = terms = qualifiers = actions = 0
    for batch in _batches(records, Descriptor):
        found = [r for r in batch if isinstance(r, Descriptor)]
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_descriptors VALUES (?, ?, ?, ?, ?)",
            [(d.ui, d.name, name_key(d.name), d.scope_note, d.descriptor_class) for d in found],
        )
        tree_rows = [(t, d.ui) for d in found for t in d.tree_numbers]
        term_rows = [(name_key(t), d.ui, t) for d in found for t in d.terms]
        qualifier_rows = [(d.ui, q.ui, q.name, q.abbreviation) for d in found for q in d.qualifiers]
        action_rows = [(a, d.ui) for d in found for a in d.actions]
        conn.executemany("INSERT OR IGNORE INTO mesh_actions VALUES (?, ?)", action_rows)
        actions += len(action_rows)
        conn.executemany("INSERT OR REPLACE INTO mesh_tree_numbers VALUES (?, ?)", tree_rows)
        conn.executemany("INSERT OR IGNORE INTO mesh_terms VALUES (?, ?, ?)", term_rows)
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_qualifiers VALUES (?, ?, ?, ?)", qualifier_rows
        )
        n += len(found)
        trees += len(tree_rows)
        terms += len(term_rows)
        qualifiers += len(qualifier_rows)
    return ImportCounts(n, trees, terms, qualifiers, actions=actions)


def _write_supplementals(
    conn: sqlite3.Connection, records: Iterable[MeshRecord]
) -> tuple[int, int, int]:
    n = terms = actions = 0
    for batch in _batches(records, Supplemental):
        found = [r for r in batch if isinstance(r, Supplemental)]
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_supplementals VALUES (?, ?, ?, ?)",
            [(s.ui, s.name, name_key(s.name), s.note) for s in found],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_supplemental_headings VALUES (?, ?, ?, ?)",
            [
                (s.ui, h.descriptor_ui, h.qualifier_ui, int(h.major))
                for s in found
                for h in s.headings
            ],
        )
        term_rows = [(name_key(t), s.ui, t) for s in found for t in s.synonyms]
        conn.executemany("INSERT OR IGNORE INTO mesh_terms VALUES (?, ?, ?)", term_rows)
        action_rows = [(a, s.ui) for s in found for a in s.actions]
        conn.executemany("INSERT OR IGNORE INTO mesh_actions VALUES (?, ?)", action_rows)
        n += len(found)
        terms += len(term_rows)
        actions += len(action_rows)
    return n, terms, actions


def _write_subheadings(conn: sqlite3.Connection, records: Iterable[MeshRecord]) -> int:
    n = 0
    for batch in _batches(records, Subheading):
        found = [r for r in batch if isinstance(r, Subheading)]
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_subheadings VALUES (?, ?, ?, ?)",
            [(q.ui, q.name, name_key(q.name), q.abbreviation) for q in found],
        )
        conn.executemany(
            "INSERT OR REPLACE INTO mesh_subheading_trees VALUES (?, ?)",
            [(t, q.ui) for q in found for t in q.tree_numbers],
        )
        n += len(found)
    return n


# -- reading -----------------------------------------------------------------------------


def descriptor_ui(conn: sqlite3.Connection, name: str) -> str | None:
    """The descriptor ``name`` names: its own name first, else an entry term (PubMed
    searches ``heart attack[mh]`` as Myocardial Infarction)."""
    key = name_key(name)
    row = conn.execute("SELECT ui FROM mesh_descriptors WHERE name_key = ?", (key,)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT ui FROM mesh_terms WHERE term_key = ? AND ui LIKE 'D%' ORDER BY ui LIMIT 1",
            (key,),
        ).fetchone()
    return str(row[0]) if row else None


def tree_numbers(conn: sqlite3.Connection, ui: str) -> list[str]:
    rows = conn.execute(
        "SELECT tree_number FROM mesh_tree_numbers WHERE ui = ? ORDER BY tree_number", (ui,)
    )
    return [r[0] for r in rows]


def exploded_keys(conn: sqlite3.Connection, ui: str, *, noexp: bool = False) -> list[str]:
    """The name keys of ``ui`` and, unless ``noexp``, of every descriptor under any of its
    tree numbers: one range of the tree-number key per tree number, joined to the keys."""
    row = conn.execute("SELECT name_key FROM mesh_descriptors WHERE ui = ?", (ui,)).fetchone()
    found = [row[0]] if row else []
    if noexp:
        return found
    for tree in tree_numbers(conn, ui):
        rows = conn.execute(
            "SELECT d.name_key FROM mesh_tree_numbers t JOIN mesh_descriptors d ON d.ui = t.ui"
            " WHERE t.tree_number > ? AND t.tree_number < ?",
            (tree + ".", tree + "/"),
        )
        found.extend(r[0] for r in rows)
    return found


def has_subheading_tree(conn: sqlite3.Connection) -> bool:
    """Whether NLM's subheading tree (the qualifier file) is installed."""
    if not _table(conn, "mesh_subheading_trees"):
        return False
    found = conn.execute("SELECT 1 FROM mesh_subheading_trees LIMIT 1").fetchone()
    return found is not None


def has_actions(conn: sqlite3.Connection) -> bool:
    """Whether MeSH's pharmacological actions are installed (a MeSH imported before
    they were read has none until it is imported again)."""
    if not _table(conn, "mesh_actions"):
        return False
    return conn.execute("SELECT 1 FROM mesh_actions LIMIT 1").fetchone() is not None


def _table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the store has table ``name`` (an older one opened read-only has not)."""
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)
    ).fetchone()
    return found is not None


def subheading_keys(conn: sqlite3.Connection, name: str, *, noexp: bool = False) -> list[str]:
    """The name keys of the subheading ``name`` and, unless ``noexp``, of every one under
    any of its tree numbers (``therapy`` Y04.010 -> ``drug therapy`` Y04.010.xxx ...):
    the subheading tree's key ranges, as :func:`exploded_keys` walks the headings'."""
    key = name_key(name)
    found = [key]
    row = conn.execute("SELECT ui FROM mesh_subheadings WHERE name_key = ?", (key,)).fetchone()
    if row is None or noexp:
        return found
    trees = conn.execute("SELECT tree_number FROM mesh_subheading_trees WHERE ui = ?", (row[0],))
    for (tree,) in trees.fetchall():
        rows = conn.execute(
            "SELECT s.name_key FROM mesh_subheading_trees t"
            " JOIN mesh_subheadings s ON s.ui = t.ui"
            " WHERE t.tree_number > ? AND t.tree_number < ?",
            (tree + ".", tree + "/"),
        )
        found.extend(r[0] for r in rows)
    return list(dict.fromkeys(found))


@dataclass(frozen=True, slots=True)
class Substances:
    """What a pharmacological action's ``[pa]`` searches: the name keys of the
    descriptors (``headings``) and of the supplementary concepts (``concepts``) MeSH
    gives that action."""

    headings: tuple[str, ...] = ()
    concepts: tuple[str, ...] = ()


def action_substances(conn: sqlite3.Connection, action_ui: str) -> Substances:
    """The substances MeSH lists under the pharmacological action ``action_ui``."""
    heading_rows = conn.execute(
        "SELECT d.name_key FROM mesh_actions a JOIN mesh_descriptors d ON d.ui = a.ui"
        " WHERE a.action_ui = ?",
        (action_ui,),
    )
    headings = sorted({r[0] for r in heading_rows})
    concept_rows = conn.execute(
        "SELECT s.name_key FROM mesh_actions a JOIN mesh_supplementals s ON s.ui = a.ui"
        " WHERE a.action_ui = ?",
        (action_ui,),
    )
    return Substances(tuple(headings), tuple(sorted({r[0] for r in concept_rows})))


def names(conn: sqlite3.Connection, uis: Iterable[str]) -> dict[str, str]:
    """UI -> heading name, for those of ``uis`` that are descriptors."""
    wanted = list(uis)
    out: dict[str, str] = {}
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT ui, name FROM mesh_descriptors WHERE ui IN ({marks})", chunk)
        out.update((r[0], r[1]) for r in rows)
    return out


def qualifiers(conn: sqlite3.Connection, ui: str) -> tuple[AllowedQualifier, ...]:
    rows = conn.execute(
        "SELECT qualifier_ui, name, abbreviation FROM mesh_qualifiers WHERE ui = ? ORDER BY name",
        (ui,),
    )
    return tuple(AllowedQualifier(*r) for r in rows)


def heading(conn: sqlite3.Connection, ui: str) -> Heading | None:
    row = conn.execute(
        "SELECT name, scope_note FROM mesh_descriptors WHERE ui = ?", (ui,)
    ).fetchone()
    if row is None:
        return None
    terms = [r[0] for r in conn.execute("SELECT term FROM mesh_terms WHERE ui = ?", (ui,))]
    return Heading(
        ui=ui,
        name=row[0],
        scope_note=row[1],
        tree_numbers=tuple(tree_numbers(conn, ui)),
        terms=tuple(t for t in sorted(terms, key=str.casefold) if t != row[0]),
        qualifiers=qualifiers(conn, ui),
    )


def broader(conn: sqlite3.Connection, ui: str) -> list[tuple[str, str]]:
    """(UI, name) of the headings directly above ``ui`` in each of its trees."""
    parents = [t.rsplit(".", 1)[0] for t in tree_numbers(conn, ui) if "." in t]
    found: list[str] = []
    for parent in parents:
        row = conn.execute(
            "SELECT ui FROM mesh_tree_numbers WHERE tree_number = ?", (parent,)
        ).fetchone()
        if row is not None and row[0] not in found:
            found.append(row[0])
    named = names(conn, found)
    return [(u, named[u]) for u in found if u in named]


def narrower(conn: sqlite3.Connection, ui: str) -> list[tuple[str, str]]:
    """(UI, name) of the headings directly below ``ui``, by name."""
    found: set[str] = set()
    for tree in tree_numbers(conn, ui):
        depth = tree.count(".") + 1
        rows = conn.execute(
            "SELECT tree_number, ui FROM mesh_tree_numbers"
            " WHERE tree_number > ? AND tree_number < ?",
            (tree + ".", tree + "/"),
        )
        found.update(u for t, u in rows if t.count(".") == depth)
    named = names(conn, found)
    return sorted(named.items(), key=lambda item: item[1].casefold())


def matching_names(conn: sqlite3.Connection, prefix: str, limit: int = 20) -> list[str]:
    """Heading names starting with ``prefix`` (casefolded), for completion."""
    key = name_key(prefix)
    rows = conn.execute(
        "SELECT name FROM mesh_descriptors WHERE name_key >= ? AND name_key < ? "
        "ORDER BY name_key LIMIT ?",
        (key, key + "\U0010ffff", limit),
    )
    return [r[0] for r in rows]


@dataclass(frozen=True, slots=True)
class Mapped:
    """What an untagged phrase maps to in the MeSH translation table: (UI, name) of the
    descriptors it is an entry term of, then of the headings of the supplementary
    concepts it names (``supplementals``: their names)."""

    headings: tuple[tuple[str, str], ...] = ()
    supplementals: tuple[str, ...] = ()


def translate(conn: sqlite3.Connection, phrase: str) -> Mapped | None:
    """The MeSH translation table's entry for ``phrase`` (one index lookup), or None."""
    rows = conn.execute("SELECT ui FROM mesh_terms WHERE term_key = ?", (name_key(phrase),))
    uis = [r[0] for r in rows]
    if not uis:
        return None
    headings = [u for u in uis if not u.startswith("C")]
    concepts = [u for u in uis if u.startswith("C")]
    concept_names: list[str] = []
    for ui in concepts:
        row = conn.execute("SELECT name FROM mesh_supplementals WHERE ui = ?", (ui,)).fetchone()
        if row is not None:
            concept_names.append(row[0])
        targets = conn.execute(
            "SELECT descriptor_ui FROM mesh_supplemental_headings WHERE ui = ?", (ui,)
        )
        headings.extend(t[0] for t in targets)
    named = names(conn, dict.fromkeys(headings))
    return Mapped(
        headings=tuple((u, named[u]) for u in dict.fromkeys(headings) if u in named),
        supplementals=tuple(concept_names),
    )
