"""The options the ``screen`` commands share, opening a project, and bringing records
into one for ``screen start`` and ``screen add``: a history line's or a query's records
in their BM25 order, imported files matched to the store, and the report of what was
added (split from :mod:`medsearch.commands.screen` to keep each module short)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from medsearch.commands.common import emit_json
from medsearch.errors import UsageError

if TYPE_CHECKING:
    from medsearch.paths import Paths
    from medsearch.screening.items import Item
    from medsearch.screening.project import Project, Strategy

REVIEWER = click.option(
    "--reviewer", default="reviewer1", show_default=True, help="Whose decisions these are."
)
JSON = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
LIMIT = 100_000
"""The most records a strategy brings into a project."""


def _open(paths: Paths, name: str) -> Project:
    from medsearch.screening.project import Project

    return Project.open(paths.screening, name)


def _report(
    project: Project,
    batches: list[tuple[Strategy, list[Item]]],
    as_json: bool,
    notes: list[str],
) -> None:
    """Print what was added; ``notes`` (what was read differently or left out) go to
    standard error and, under ``--json``, into the object too."""
    from medsearch.screening.dedup import counts

    out: list[dict[str, Any]] = []
    for strategy, items in batches:
        added = project.add(items, strategy)
        matched: dict[str, int] = {}
        for item in items:
            key = item.matched_by or "kept as imported"
            matched[key] = matched.get(key, 0) + 1
        out.append(
            {
                "strategy": strategy.label,
                "identified": len(items),
                "added": added.added,
                "duplicates": counts(added.duplicates),
                "matched_by": matched,
            }
        )
    result = {
        "project": project.name,
        "records": project.count(),
        "strategies": out,
        "notes": notes,
    }
    for note in notes:
        click.echo(note, err=True)
    if as_json:
        emit_json(result)
        return
    for s in out:
        dups = ", ".join(f"{k} {v}" for k, v in s["duplicates"].items() if v) or "none"
        how = ", ".join(f"{k} {v}" for k, v in s["matched_by"].items())
        click.echo(
            f"{s['strategy']}: {s['identified']:,} identified, {s['added']:,} added;"
            f" duplicates: {dups}; found in the store by: {how}"
        )
    click.echo(
        f"{project.name}: {project.count():,} records to screen"
        f" (review the duplicates: medsearch screen duplicates {project.name})"
    )


def _gather(
    paths: Paths,
    from_line: str | None,
    query: str | None,
    imports: tuple[Path, ...],
    notes: list[str],
) -> list[tuple[Strategy, list[Item]]]:
    from medsearch.screening.project import Strategy
    from medsearch.screening.readers import read_file

    out: list[tuple[Strategy, list[Item]]] = []
    if from_line or query:
        out.append(_from_search(paths, from_line, query, notes))
    for path in imports:
        items = read_file(path)
        if not items:
            raise UsageError(f"{path}: no records in it")
        empty = sum(1 for i in items if not i.title and not i.abstract)
        if empty:
            notes.append(f"{path.name}: {empty:,} records have neither title nor abstract")
        out.append((Strategy(f"file {path.name}"), _matched(paths, items)))
    return out


def _from_search(
    paths: Paths, from_line: str | None, query: str | None, notes: list[str]
) -> tuple[Strategy, list[Item]]:
    """A strategy's records in its BM25 order (the ranking before the first include)."""
    from medsearch.history.recording import parsed_as_run
    from medsearch.history.store import open_history
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.screening.items import from_article
    from medsearch.screening.project import Strategy

    number: int | None = None
    if from_line is not None:
        text = from_line.strip().lstrip("#")
        if not text.isdigit():
            raise UsageError(f"--from takes a history line such as '#5', not {from_line!r}")
        number = int(text)
        history = open_history(paths, write=False)
        entry = None
        if history is not None:
            with history:
                entry = history.get(number)
        if entry is None or entry.line is None:
            raise UsageError(f"no search #{number} in the history (see: medsearch history)")
        query = entry.line
    assert query is not None
    with open_searcher(paths) as searcher:
        parsed = parsed_as_run(query, paths)
        ranked = searcher.lexical.rank(parsed, k=LIMIT, count=True)
        pmids = list(ranked.pmids)
        if ranked.total > LIMIT:
            notes.append(
                f"the strategy finds {ranked.total:,} records; the {LIMIT:,} best are screened"
            )
        articles: dict[int, Any] = {}
        for start in range(0, len(pmids), 2000):
            articles.update(searcher.store.get_many(pmids[start : start + 2000]))
    items = [from_article(articles[p], row=i + 1) for i, p in enumerate(pmids) if p in articles]
    label = f"history #{number}" if number is not None else "query"
    return Strategy(label, query, number), items


def _matched(paths: Paths, items: list[Item]) -> list[Item]:
    """Imported records found in the store (PMID, then DOI, then title and year) take the
    store's fields where theirs are empty; the rest are kept as imported."""
    if not paths.store.exists():
        return items
    from medsearch.references import Reference
    from medsearch.retrieval.check import check
    from medsearch.retrieval.searcher import open_searcher

    refs = [
        Reference(f"record {i}", pmid=it.pmid, doi=it.doi, title=it.title or None, year=it.year)
        for i, it in enumerate(items)
    ]
    with open_searcher(paths) as searcher:
        checked = check(refs, searcher.store, searcher.lexical)
        found = [c.pmid for c in checked if c.pmid is not None]
        articles = searcher.store.get_many(found)
    out = []
    for item, c in zip(items, checked, strict=True):
        article = articles.get(c.pmid) if c.pmid is not None else None
        out.append(item if article is None else item.with_article(article, c.resolved_by or ""))
    return out
