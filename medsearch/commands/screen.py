"""``medsearch screen``: screening projects, from a strategy's records to the included
studies (docs/screening.md).

The commands are thin: the project, its decisions, the ranking, the stopping rule, the
simulation and PRISMA live in :mod:`medsearch.screening`. ``screen review NAME`` opens
the TUI's screening screen, where the model refits in the background as you decide.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.commands.screen_gather import JSON, REVIEWER, _gather, _open, _report
from medsearch.commands.screen_outputs import OUTPUT_COMMANDS
from medsearch.errors import UsageError

if TYPE_CHECKING:
    pass


@click.group()
def screen() -> None:
    """Screen a strategy's records: decisions, active-learning order, stopping rule, PRISMA.

    \b
    Examples:
      medsearch screen start statins --from '#5'
      medsearch screen start statins --import records.ris --import more.nbib
      medsearch screen review statins            (the TUI screen)
      medsearch screen status statins --json
      medsearch screen prisma statins -o report/
      medsearch screen simulate labelled.csv --seed 1 --json
    """


@screen.command()
@click.argument("name")
@click.option("--from", "from_line", metavar="#N", help="A history line's search.")
@click.option("--query", metavar="QUERY", help="A search in PubMed's syntax.")
@click.option(
    "--import",
    "imports",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="RIS, .nbib, BibTeX or ASReview CSV (repeat for several files).",
)
@click.option("--question", default="", help="The review question (shown while screening).")
@JSON
@click.pass_context
def start(
    ctx: click.Context,
    name: str,
    from_line: str | None,
    query: str | None,
    imports: tuple[Path, ...],
    question: str,
    as_json: bool,
) -> None:
    """Start the project NAME from a history line, a query or files."""
    from medsearch.screening.project import Project

    paths = paths_of(ctx)
    if not (from_line or query or imports):
        raise UsageError("give --from '#N', --query QUERY or --import FILE")
    paths.ensure()
    notes: list[str] = []
    batches = _gather(paths, from_line, query, imports, notes)
    project = Project.create(paths.screening, name, question=question or (query or ""))
    with project:
        _report(project, batches, as_json, notes)


@screen.command()
@click.argument("name")
@click.option("--from", "from_line", metavar="#N", help="A history line's search.")
@click.option("--query", metavar="QUERY", help="A search in PubMed's syntax.")
@click.option(
    "--import",
    "imports",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
)
@JSON
@click.pass_context
def add(
    ctx: click.Context,
    name: str,
    from_line: str | None,
    query: str | None,
    imports: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Add another strategy's records to NAME (deduplicated against those in)."""
    paths = paths_of(ctx)
    if not (from_line or query or imports):
        raise UsageError("give --from '#N', --query QUERY or --import FILE")
    notes: list[str] = []
    batches = _gather(paths, from_line, query, imports, notes)
    with _open(paths, name) as project:
        _report(project, batches, as_json, notes)


@screen.command(name="list")
@JSON
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """The screening projects in this data home."""
    from medsearch.screening.project import list_projects

    names = list_projects(paths_of(ctx).screening)
    if as_json:
        emit_json({"projects": names})
    else:
        click.echo("\n".join(names) if names else "no screening projects yet")


@screen.command(name="next")
@click.argument("name")
@REVIEWER
@JSON
@click.pass_context
def next_(ctx: click.Context, name: str, reviewer: str, as_json: bool) -> None:
    """The record to screen next (the model fitted on the decisions so far)."""
    from medsearch.screening.session import Session

    with _open(paths_of(ctx), name) as project:
        session = Session(project, reviewer)
        session.ranker.wait(120)
        record_id = session.next()
        if record_id is None:
            if as_json:
                emit_json({"record": None})
            else:
                click.echo("every record is screened")
            return
        item = session.record(record_id)
        data = {"record": record_id, "pmid": item.pmid, "title": item.title,
                "year": item.year, "journal": item.journal, "abstract": item.abstract,
                "ranked_by": "model" if session.ranker.modelled else "strategy"}  # fmt: skip
        if as_json:
            emit_json(data)
        else:
            click.echo(f"[{record_id}] {item.title} ({item.journal} {item.year or ''})")
            if item.abstract:
                click.echo(item.abstract)


@screen.command()
@click.argument("name")
@click.argument("record")
@click.argument("decision", type=click.Choice(["include", "exclude", "maybe"]))
@click.option("--reason", default=None, help="Why excluded (one of `screen reasons NAME`).")
@click.option("--note", default=None, help="A note kept with the record.")
@click.option("--tag", "tags", multiple=True, help="A tag (repeat for several).")
@REVIEWER
@click.pass_context
def decide(
    ctx: click.Context,
    name: str,
    record: str,
    decision: str,
    reason: str | None,
    note: str | None,
    tags: tuple[str, ...],
    reviewer: str,
) -> None:
    """Record a DECISION on RECORD (its id in the project, or PMID N)."""
    with _open(paths_of(ctx), name) as project:
        record_id = project.id_of(record)
        if reason is not None and reason not in project.reasons():
            raise UsageError(
                f"{reason!r} is not one of the project's reasons ({'; '.join(project.reasons())});"
                f" add it with: medsearch screen reasons {name} --add '{reason}'"
            )
        made = project.decide(record_id, decision, reviewer=reviewer, reason=reason)
        if note:
            project.annotate(record_id, "note", note, reviewer=reviewer)
        for tag in tags:
            project.annotate(record_id, "tag", tag, reviewer=reviewer)
        click.echo(f"record {record_id}: {made.decision}" + (f" ({reason})" if reason else ""))


@screen.command()
@click.argument("name")
@REVIEWER
@click.pass_context
def undo(ctx: click.Context, name: str, reviewer: str) -> None:
    """Take back the reviewer's latest decision."""
    with _open(paths_of(ctx), name) as project:
        undone = project.undo(reviewer)
    if undone is None:
        raise UsageError(f"{reviewer} has no decision to undo in {name}")
    click.echo(f"undone: record {undone.record_id} {undone.decision}")


@screen.command()
@click.argument("name")
@REVIEWER
@click.option("--recall", default=0.95, show_default=True, help="Recall target.")
@click.option("--confidence", default=0.95, show_default=True, help="Confidence.")
@JSON
@click.pass_context
def status(
    ctx: click.Context, name: str, reviewer: str, recall: float, confidence: float, as_json: bool
) -> None:
    """Progress and whether screening can stop (hypergeometric test; knee method)."""
    from medsearch.screening.session import progress

    if not (0 < recall < 1 and 0 < confidence < 1):
        raise UsageError("--recall and --confidence take a fraction between 0 and 1")
    with _open(paths_of(ctx), name) as project:
        p = progress(project, reviewer, recall, confidence)
    if as_json:
        emit_json(
            {
                "project": name,
                "reviewer": reviewer,
                "records": p.total,
                "screened": p.screened,
                "included": p.included,
                "excluded": p.excluded,
                "maybe": p.maybe,
                "stopping": p.estimate.to_dict(),
            }
        )
    else:
        click.echo(p.line)


@screen.command()
@click.argument("name")
@click.option("--restore", "restore", type=int, multiple=True, help="Undo a duplicate flag.")
@click.option("--mark", nargs=2, type=int, default=None, metavar="ID OF", help="Flag by hand.")
@JSON
@click.pass_context
def duplicates(
    ctx: click.Context,
    name: str,
    restore: tuple[int, ...],
    mark: tuple[int, int] | None,
    as_json: bool,
) -> None:
    """The records flagged as duplicates on the way in; restore or flag one."""
    with _open(paths_of(ctx), name) as project:
        for record_id in restore:
            project.restore_duplicate(record_id)
        if mark:
            project.mark_duplicate(*mark)
        rows = project.duplicates()
    if as_json:
        emit_json(
            {"duplicates": [{"record": r, "of": of, "key": k, "title": t} for r, of, k, t in rows]}
        )
        return
    for r, of, key, title in rows:
        click.echo(f"{r}\tduplicate of {of}\t{key}\t{title}")
    if not rows:
        click.echo("no duplicates flagged")


@screen.command()
@click.argument("name")
@click.option("--add", "added", multiple=True, help="A reason to add.")
@click.option("--remove", "removed", multiple=True, help="A reason to remove.")
@click.pass_context
def reasons(
    ctx: click.Context, name: str, added: tuple[str, ...], removed: tuple[str, ...]
) -> None:
    """The project's exclusion reasons (editable)."""
    with _open(paths_of(ctx), name) as project:
        if added or removed:
            current = [r for r in project.reasons() if r not in removed]
            project.set_reasons([*current, *added])
        click.echo("\n".join(project.reasons()))


@screen.command()
@click.argument("name")
@REVIEWER
@click.pass_context
def review(ctx: click.Context, name: str, reviewer: str) -> None:
    """Screen NAME in the terminal UI, one record at a time."""
    paths = paths_of(ctx)
    _open(paths, name).close()  # a missing project is one line here, not a UI error
    from medsearch.tui.screens.screening import run_screening

    run_screening(paths, name, reviewer)


for _command in OUTPUT_COMMANDS:
    screen.add_command(_command)
