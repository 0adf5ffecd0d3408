"""``medsearch history``: the numbered search history, its PRISMA-S log, re-runs, clearing."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from collections.abc import Iterator

    from medsearch.history.entries import Entry


@click.group(name="history", invoke_without_command=True)
@click.option(
    "--export",
    "export_fmt",
    type=click.Choice(["prisma"]),
    default=None,
    help="Write a PRISMA-S search log (search-log.md and search-log.csv).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="With --export: the folder to write into (default: <home>/exports).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the lines.")
@click.pass_context
def history(ctx: click.Context, export_fmt: str | None, output: Path | None, as_json: bool) -> None:
    """Every search run here, numbered: #N in a query combines earlier searches.

    \b
    Examples:
      medsearch history
      medsearch search '#3 AND #5'
      medsearch history rerun 3
      medsearch history --export prisma -o review/
      medsearch history clear
    """
    if ctx.invoked_subcommand is not None:
        return
    from medsearch.history.store import open_history

    paths = paths_of(ctx)
    store = open_history(paths, write=False)
    entries = []
    if store is not None:
        with store:
            if export_fmt is None and not as_json and store.count() > TABLE_LINES:
                _stream(store.iter_entries())
                return
            entries = store.entries()
    if export_fmt is not None:
        from medsearch import __version__
        from medsearch.commands.export import replaced_note, write_output
        from medsearch.history.prisma import csv_text, markdown_text

        if not any(e.ran for e in entries):
            raise NotFoundError("the search history is empty: nothing to export")
        folder = output or paths.exports
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot write {folder}: {exc.strerror or exc}") from exc
        md, table = folder / "search-log.md", folder / "search-log.csv"
        replaced = write_output(md, markdown_text(entries, version=__version__))
        replaced = write_output(table, csv_text(entries)) or replaced
        if as_json:
            emit_json(
                {
                    "markdown": str(md),
                    "csv": str(table),
                    "lines": len(entries),
                    "replaced": replaced,
                }
            )
        else:  # never silently: an earlier log there is gone now, said as export says it
            click.echo(f"wrote {md} and {table}{replaced_note(replaced, 'the earlier log')}")
        return
    if as_json:
        emit_json({"history": str(paths.history_db), "lines": [e.to_dict() for e in entries]})
        return
    if not entries:
        click.echo("the search history is empty")
        return
    from rich.markup import escape
    from rich.table import Table

    from medsearch.commands.render import console

    listing = Table(box=None, padding=(0, 1))
    for column in ("#", "time (UTC)", "query", "count"):
        listing.add_column(column, justify="right" if column in ("#", "count") else "left")
    for e in entries:
        when, shown, count = _listed(e)
        listing.add_row(f"#{e.number}", when, escape(shown), count)
    console.print(listing)


TYPED_SHOWN = 120
TABLE_LINES = 2_000
"""Past this many searches the listing streams a plain line per search (no table, which
must hold every row to size its columns): 200K lines once took 69 s and 763 MB."""


def _listed(e: Entry) -> tuple[str, str, str]:
    """(when, what was typed and run, count) of one line of the listing."""
    from medsearch.safe_text import terminal_text

    count = "" if e.total is None else f"{e.total:,}"
    when = e.at.replace("T", " ").removesuffix("+00:00")
    typed = e.typed if len(e.typed) <= TYPED_SHOWN else e.typed[: TYPED_SHOWN - 1] + "…"
    run = e.shown  # a property that prints the query: once
    shown = typed if run is None or run == e.typed else f"{typed}  →  {run}"
    return when, terminal_text(shown), count


def _stream(entries: Iterator[Entry]) -> None:
    """A line per search as it is read: ``#N  time  query  count``."""
    lines: list[str] = []
    for e in entries:
        when, shown, count = _listed(e)
        lines.append(f"#{e.number}  {when}  {shown}" + (f"  {count}" if count else ""))
        if len(lines) == 1000:  # a write per thousand lines, not per line
            click.echo("\n".join(lines))
            lines = []
    if lines:
        click.echo("\n".join(lines))


"""The most characters of the text typed that the list shows (a paragraph given to
``cite`` is kept whole: ``--json`` and the PRISMA CSV print it)."""


@history.command(name="rerun")
@click.argument("number", type=click.IntRange(1))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the diff.")
@click.pass_context
def rerun_command(ctx: click.Context, number: int, as_json: bool) -> None:
    """Run search NUMBER again and say what changed since: articles added, removed or
    replaced, each with the update file that brought the change."""
    from medsearch.history.recording import rerun
    from medsearch.retrieval.searcher import open_searcher

    paths = paths_of(ctx)
    with open_searcher(paths) as searcher:
        report = rerun(paths, searcher, number)
    if as_json:
        emit_json(report.to_dict())
        return
    from medsearch.safe_text import terminal_text

    then, now = report.then, report.now
    click.echo(f"#{number}: {terminal_text(then.shown or '')}")
    click.echo(f"  then {then.at}: {_count(then.total)} · {_snapshot(then)}")
    label = f" (recorded as #{report.number})" if report.number is not None else ""
    click.echo(f"  now  {now.at}: {_count(now.total)} · {_snapshot(now)}{label}")
    if report.unavailable is not None:
        click.echo(f"  no article-level diff: {report.unavailable}")
        return
    for title, changes in (
        ("added", report.added),
        ("removed", report.removed),
        ("replaced", report.replaced),
    ):
        click.echo(f"  {title}: {len(changes)}")
        for c in changes:
            by = f" ({c.file})" if c.file else ""
            click.echo(f"    {c.pmid}  {c.why}{by}")


@history.command(name="clear")
@click.pass_context
def clear_command(ctx: click.Context) -> None:
    """Forget every search in the history (the file is rewritten, not only emptied)."""
    from medsearch.errors import HomeError
    from medsearch.history.store import open_history

    paths = paths_of(ctx)
    store = open_history(paths)
    if store is None:
        if paths.history_db.exists():
            raise HomeError(f"cannot clear {paths.history_db}: the data home is read-only")
        click.echo("the search history is empty")
        return
    with store:
        gone = store.clear()
    click.echo(f"cleared {gone:,} searches from {paths.history_db}")


def _count(total: int | None) -> str:
    if total is None:
        return "no count"
    return f"{total:,} article" + ("" if total == 1 else "s")


def _snapshot(entry: Entry) -> str:
    snap = entry.snapshot
    if snap is None:
        return "corpus unknown"
    baseline = f"baseline {snap.baseline_year}" if snap.baseline_year else "no baseline"
    return f"{baseline}, last file {snap.last_file or 'none'}, {snap.articles:,} in corpus"
