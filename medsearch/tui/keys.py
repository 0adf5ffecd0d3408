"""Every key binding, by id, in one table: widgets build their ``BINDINGS`` from it, the
help screen lists it, and users remap it.

Remapping is a ``[keys]`` table in the config file (``paths.config_file``)::

    [keys]
    "article.mark" = "m"
    "main.export" = "ctrl+x,f12"

Textual applies it with ``App.set_keymap``; an unknown id is reported, not ignored, so a
typo does not silently leave the old key in place.

No default binding of the main screen is a letter, digit or sign: a researcher who types a
new query while the results list has focus is typing, and every character they type goes
to the search bar (see ``TypesIntoQuery``). Space marks (no query starts with one) and
``/`` returns to the query. A user who remaps an action to a printable key gets that key
as an action, as asked.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from textual.binding import Binding, BindingType

from medsearch.config import read_config
from medsearch.paths import Paths


@dataclass(frozen=True, slots=True)
class KeySpec:
    id: str
    key: str
    action: str
    description: str
    where: str
    show: bool = True
    priority: bool = False


SPECS: tuple[KeySpec, ...] = (
    KeySpec("app.help", "f1", "help", "Help", "everywhere", priority=True),
    KeySpec("app.quit", "ctrl+q", "quit", "Quit", "everywhere", priority=True),
    KeySpec("app.watches", "f6", "watches", "Watches: saved searches", "everywhere", False, True),
    KeySpec("app.screening", "f9", "screening", "Screening projects", "everywhere", False, True),
    KeySpec("main.mode_search", "f2", "mode('search')", "Search mode", "main", False, True),
    KeySpec(
        "main.mode_similar", "f3", "mode('similar')", "Similar articles mode", "main", False, True
    ),
    KeySpec(
        "main.mode_sentences",
        "f4",
        "mode('sentences')",
        "Similar sentences mode",
        "main",
        False,
        True,
    ),
    KeySpec(
        "main.mode_cite", "f5", "mode('cite')", "Cite mode: paste a paragraph", "main", False, True
    ),
    KeySpec("main.filters", "ctrl+f", "filters", "Filters", "main", priority=True),
    KeySpec("main.export", "ctrl+s", "export", "Export basket", "main", priority=True),
    KeySpec("main.sort", "ctrl+b", "cycle_sort", "Sort: relevance/date/author/journal", "main"),
    KeySpec(
        "main.run_cite", "ctrl+r", "run_cite", "Suggest references", "cite editor", False, True
    ),
    KeySpec(
        "main.focus_search", "slash", "focus_search", "Back to the query", "results, detail", False
    ),
    KeySpec("article.mark", "space", "mark", "Mark", "results, detail"),
    KeySpec("article.open_pubmed", "ctrl+o", "open('pubmed')", "Open PubMed", "results, detail"),
    KeySpec("article.open_doi", "ctrl+d", "open('doi')", "Open DOI", "results, detail", False),
    KeySpec("article.copy", "ctrl+y", "copy_citation", "Copy citation", "results, detail"),
    KeySpec("article.similar", "ctrl+n", "similar", "Similar articles", "results, detail"),
    KeySpec("article.sentences", "ctrl+t", "pick_sentence", "Sentences like…", "results, detail"),
    KeySpec("main.mesh", "f7", "mesh", "MeSH browser", "main", priority=True),
    KeySpec(
        "main.watch_basket",
        "f8",
        "watch_basket",
        "Watch the basket for retractions",
        "main",
        False,
        True,
    ),
    KeySpec("mesh.search", "s", "search", "Search this heading", "MeSH browser"),
    KeySpec("mesh.add", "a", "add", "Add to the query", "MeSH browser"),
    KeySpec("mesh.major", "m", "major", "[mh] / [majr]", "MeSH browser"),
    KeySpec("mesh.noexp", "x", "noexp", "Explode / :noexp", "MeSH browser"),
    KeySpec(
        "article.references", "ctrl+e", "references", "Its references", "results, detail", False
    ),
    KeySpec(
        "article.cited_by", "ctrl+g", "cited_by", "Articles citing it", "results, detail", False
    ),
    KeySpec(
        "main.back", "backspace", "back", "Back along the citation trail", "results, detail", False
    ),
    KeySpec("search.older", "up", "older", "Older query (history)", "search bar", False),
    KeySpec("search.newer", "down", "newer", "Newer query (history)", "search bar", False),
)

_BY_ID = {spec.id: spec for spec in SPECS}


def bindings(prefix: str) -> list[BindingType]:
    """The textual bindings whose id starts with ``prefix`` (``"main."``, ``"article."``)."""
    return [
        Binding(
            spec.key,
            spec.action,
            spec.description,
            show=spec.show,
            priority=spec.priority,
            id=spec.id,
            tooltip=f"{spec.description} ({spec.id})",
        )
        for spec in SPECS
        if spec.id.startswith(prefix)
    ]


@dataclass(frozen=True, slots=True)
class Keymap:
    """The user's remapping, plus what was wrong with the ``[keys]`` table (if anything)."""

    keys: Mapping[str, str]
    problems: tuple[str, ...] = ()

    def key_for(self, spec: KeySpec) -> str:
        return self.keys.get(spec.id, spec.key)


def parse_keymap(table: Mapping[str, Any]) -> Keymap:
    """Validate a ``[keys]`` table: known ids, string values."""
    keys: dict[str, str] = {}
    problems: list[str] = []
    for binding_id, value in table.items():
        if binding_id not in _BY_ID:
            problems.append(f"unknown key binding id {binding_id!r} in [keys]")
        elif not isinstance(value, str) or not value.strip():
            problems.append(f'[keys] {binding_id} must be a key name such as "ctrl+x"')
        else:
            keys[binding_id] = value.replace(" ", "")
    return Keymap(keys=keys, problems=tuple(problems))


def load_keymap(paths: Paths) -> Keymap:
    """The ``[keys]`` table of the config file; problems (not exceptions) for bad entries."""
    table = read_config(paths).get("keys", {})
    if not isinstance(table, dict):
        return Keymap(keys={}, problems=("[keys] in the config file must be a table",))
    return parse_keymap(table)
