"""Imports flow one way: down the layers, never up, never round in a circle.

The graph is read from the source with ``ast``, so an import inside a function counts as
much as one at the top of a module: it runs as soon as the function is called, and it
ties the two modules together just the same. An import under ``if TYPE_CHECKING:`` is
left out: it never runs, and a type named in an annotation does not make one module call
another. ``from pkg import name`` counts as an import of ``pkg.name`` when that is a
module, and of ``pkg`` (its ``__init__``) otherwise.

docs/architecture.md ("Layers") says what each layer holds; this file is the rule.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("medsearch", "ingest")

LAYERS: list[tuple[str, tuple[str, ...]]] = [
    # bottom first: a module may import from its own layer and the layers listed before it
    (
        "records, errors",
        (
            "medsearch.__init__",
            "medsearch.records",
            "medsearch.errors",
            "medsearch.field_keys",
            "medsearch.notice_links",
            "medsearch.safe_text",
        ),
    ),
    (
        "store, query, paths and the small base modules",
        (
            "medsearch.store",
            "medsearch.query",
            "medsearch.paths",
            "medsearch.mesh",
            "medsearch.notices",
            "medsearch.sentences",
            "medsearch.references",
            "medsearch.export",
            "medsearch.beir",
            "medsearch.lock",
            "medsearch.metrics",
            "medsearch.heap",
            "medsearch.progress",
            "medsearch.footprint",
            "medsearch.schedule",
        ),
    ),
    (
        "index, models, config",
        ("medsearch.index", "medsearch.models", "medsearch.config", "medsearch.status"),
    ),
    ("retrieval", ("medsearch.retrieval", "medsearch.rerank", "medsearch.screening")),
    ("training", ("medsearch.training",)),
    ("ingest", ("ingest",)),
    (
        "commands, UI, evaluation",
        (
            "medsearch.commands",
            "medsearch.serve",
            "medsearch.tui",
            "medsearch.evaluate",
            "medsearch.history",
            "medsearch.watches",
        ),
    ),
    ("cli", ("medsearch.cli",)),
]
"""Each module belongs to the layer of its longest matching prefix. ``medsearch.rerank``
(the Delta model as searches load and apply it) sits with retrieval; its trainer,
``medsearch.training``, runs searches and so sits a layer above."""


def module_files() -> dict[str, Path]:
    """Every module of the packages by dotted name (a package by its own name)."""
    out: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


IMPORT_LINE = re.compile(r"[ \t]*(?:import[ \t]|from[ \t]+[\w.]+[ \t]+import\b)")
TYPE_CHECKING_LINE = re.compile(r"([ \t]*)if (?:typing\.)?TYPE_CHECKING\s*:")
QUOTES = ('"""', "'''")


def import_statements(source: str) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``source`` at any depth, outside TYPE_CHECKING blocks.

    Parsing whole files costs a second of CPU for the two packages; this finds the
    lines that start an import (skipping triple-quoted strings), gathers each statement's
    continuation lines and parses only those. :func:`imports_by_ast` is the oracle.
    """
    lines = source.splitlines()
    in_string: str | None = None
    hidden_below: int | None = None  # indentation of an open ``if TYPE_CHECKING:``
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        code = stripped and not stripped.startswith("#")
        if code and hidden_below is not None and indent <= hidden_below:
            hidden_below = None
        if (match := TYPE_CHECKING_LINE.match(line)) is not None:
            hidden_below = len(match.group(1))
            continue
        if IMPORT_LINE.match(line) is None:
            for quote in QUOTES:
                if line.count(quote) % 2:
                    in_string = quote
                    break
            continue
        statement = [stripped]
        while (
            ("(" in statement[0] and ")" not in statement[-1]) or statement[-1].endswith("\\")
        ) and i < len(lines):
            statement.append(lines[i])
            i += 1
        if hidden_below is not None:
            continue
        try:
            tree = ast.parse("\n".join(statement))
        except SyntaxError:  # prose that happens to start with "import"
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                yield node


def imports_by_ast(source: str) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import outside ``if TYPE_CHECKING:``, from the whole parsed module."""
    tree = ast.parse(source)
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                hidden.update(id(n) for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in hidden:
            yield node


def _imported(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]
) -> Iterator[str]:
    """The dotted names ``node`` imports; ``from pkg import name`` gives ``pkg.name``
    when that is a module, else ``pkg``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the package holding ``module``
        here = module.split(".") if is_package else module.split(".")[:-1]
        here = here[: len(here) - (node.level - 1)]
        base = ".".join([*here, base] if base else here)
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        yield sub if sub in modules else base


def import_graph(
    modules: dict[str, Path],
    reader: Callable[[str], Iterator[ast.Import | ast.ImportFrom]] = import_statements,
) -> dict[str, set[str]]:
    """Module -> the modules of the packages it imports, anywhere but TYPE_CHECKING."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str] = set()
        for node in reader(path.read_text(encoding="utf-8")):
            for name in _imported(node, module, path.name == "__init__.py", modules):
                known = _known_prefix(name, modules)
                if known is not None and known != module:
                    targets.add(known)
        graph[module] = targets
    return graph


def _known_prefix(name: str, modules: dict[str, Path]) -> str | None:
    parts = name.split(".")
    while parts and ".".join(parts) not in modules:
        parts.pop()
    return ".".join(parts) or None


def layer_of(module: str) -> int | None:
    """The index in LAYERS of ``module``'s layer, by its longest matching prefix."""
    key = "medsearch.__init__" if module == "medsearch" else module
    best: tuple[int, int] | None = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (key == prefix or key.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[0]
            ):
                best = (len(prefix), index)
    return None if best is None else best[1]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


MODULES = module_files()
GRAPH = import_graph(MODULES)


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(m for m in MODULES if layer_of(m) is None)
    assert not unplaced, f"add these to a layer in LAYERS: {unplaced}"


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    upward = [
        f"{module} ({LAYERS[layer_of(module) or 0][0]}) imports {target}"
        f" ({LAYERS[layer_of(target) or 0][0]})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if (layer_of(target) or 0) > (layer_of(module) or 0)
    ]
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_no_import_circles() -> None:
    found = circles(GRAPH)
    assert not found, f"import circles: {found}"


def test_the_graph_sees_imports_inside_functions_and_from_imports_of_modules() -> None:
    """The reading itself: a lazy import counts, ``from pkg import module`` names the
    module, and a TYPE_CHECKING import does not count."""
    assert "medsearch.records" in GRAPH["medsearch.notices"]
    assert "medsearch.retrieval.searcher" in GRAPH["medsearch.training.train"]  # in a function
    assert "medsearch.notices" in GRAPH["medsearch.store.columns"]  # from medsearch import notices
    assert "medsearch.retrieval.searcher" not in GRAPH["medsearch.retrieval.cite"]


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


@pytest.mark.thorough
def test_the_line_reader_finds_what_parsing_each_whole_module_finds() -> None:
    assert import_graph(MODULES, imports_by_ast) == GRAPH
