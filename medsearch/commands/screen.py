"""``medsearch screen``: screening projects, from a strategy's records to the included
studies (docs/screening.md).

The commands are thin: the project, its decisions, the ranking, the stopping rule, the
simulation and PRISMA live in :mod:`medsearch.screening`. ``screen review NAME`` opens
the TUI's screening screen, where the model refits in the background as you decide.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from medsearch.commands.common import emit_json, paths_of
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


def _open(paths: Paths, name: str) -> Project:
    from medsearch.screening.project import Project

    return Project.open(paths.screening, name)


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


@screen.command(name="export")
@click.argument("name")
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "ris", "asreview"]), default="csv",
    show_default=True,
)  # fmt: skip
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None)
@REVIEWER
@click.pass_context
def export_(ctx: click.Context, name: str, fmt: str, output: Path | None, reviewer: str) -> None:
    """The records with the reviewer's decisions: CSV, RIS with labels, ASReview CSV."""
    from medsearch.screening import exports

    with _open(paths_of(ctx), name) as project:
        writer = {"csv": exports.to_csv, "ris": exports.to_ris, "asreview": exports.to_asreview_csv}
        text = writer[fmt](project, reviewer)
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@screen.command()
@click.argument("name")
@click.option("--reviewers", required=True, metavar="A,B", help="The two reviewers to compare.")
@JSON
@click.pass_context
def conflicts(ctx: click.Context, name: str, reviewers: str, as_json: bool) -> None:
    """Where two reviewers disagree, and Cohen's kappa."""
    from medsearch.screening.agreement import compare

    pair = [r.strip() for r in reviewers.split(",") if r.strip()]
    if len(pair) != 2:
        raise UsageError("--reviewers takes two names: A,B")
    with _open(paths_of(ctx), name) as project:
        agreement = compare(project, pair[0], pair[1])
    if as_json:
        emit_json(agreement.to_dict())
        return
    kappa = "n/a" if agreement.kappa is None else f"{agreement.kappa:.3f}"
    click.echo(
        f"{agreement.both:,} records screened by both; {agreement.agreed:,} agreed;"
        f" Cohen's kappa {kappa}; {len(agreement.conflicts):,} conflicts"
    )
    for record_id, a, b in agreement.conflicts:
        click.echo(f"{record_id}\t{pair[0]}: {a}\t{pair[1]}: {b}")


@screen.command(name="import-decisions")
@click.argument("name")
@click.argument("source", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--reviewer", required=True, help="Whose decisions to copy from SOURCE.")
@click.option("--as", "as_reviewer", default=None, help="Record them under this name.")
@click.pass_context
def import_decisions_(
    ctx: click.Context, name: str, source: Path, reviewer: str, as_reviewer: str | None
) -> None:
    """Copy a reviewer's decisions from another copy of the project (its .sqlite file)."""
    from medsearch.screening.agreement import import_decisions
    from medsearch.screening.project import Project

    with _open(paths_of(ctx), name) as project, Project.open(source.parent, source.stem) as other:
        copied = import_decisions(project, other, reviewer, as_reviewer=as_reviewer)
    click.echo(f"copied {copied:,} decisions of {reviewer}")


@screen.command()
@click.argument("name")
@click.option(
    "-o", "--output", type=click.Path(file_okay=False, path_type=Path), default=None,
    help="Folder for prisma.md, prisma.csv and prisma.svg (default: the current one).",
)  # fmt: skip
@JSON
@click.pass_context
def prisma(ctx: click.Context, name: str, output: Path | None, as_json: bool) -> None:
    """PRISMA 2020 counts: Markdown, CSV and an SVG flow diagram."""
    from medsearch.screening import prisma as flow

    with _open(paths_of(ctx), name) as project:
        written = flow.write(project, output or Path.cwd())
        counts = flow.counts(project)
    if as_json:
        emit_json({"counts": counts.to_dict(), "files": [str(p) for p in written]})
    else:
        click.echo(flow.markdown(counts, name), nl=False)
        click.echo("wrote " + ", ".join(str(p) for p in written), err=True)


@screen.command()
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--prior-included", default=1, show_default=True)
@click.option("--prior-excluded", default=1, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--model", type=click.Choice(["logistic", "nb", "ridge", "svm"]), default="logistic",
    show_default=True,
)  # fmt: skip
@click.option("--recall", default=0.95, show_default=True)
@click.option("--confidence", default=0.95, show_default=True)
@JSON
def simulate(
    file: Path,
    prior_included: int,
    prior_excluded: int,
    seed: int,
    model: str,
    recall: float,
    confidence: float,
    as_json: bool,
) -> None:
    """Run a whole screening on a labelled data set (ASReview's CSV) and score it."""
    import numpy as np

    from medsearch.screening import simulate as sim
    from medsearch.screening.features import tfidf
    from medsearch.screening.readers import read_file

    items = read_file(file)
    unlabelled = sum(1 for i in items if i.label is None)
    if unlabelled:
        raise UsageError(f"{file}: {unlabelled:,} records have no label_included")
    labels = np.asarray([i.label for i in items], dtype=np.int64)
    priors = sim.random_priors(labels, included=prior_included, excluded=prior_excluded, seed=seed)
    matrix = tfidf([i.text for i in items]).matrix
    result = sim.simulate(
        matrix, labels, priors, model=model, recall_target=recall, confidence=confidence
    )
    names: list[str | int] = [
        i.pmid if i.pmid is not None else (i.row if i.row is not None else n)
        for n, i in enumerate(items)
    ]
    data = {"file": str(file), "seed": seed, "model": model, **result.to_dict(names)}
    if as_json:
        emit_json(data)
        return
    stop = data["stopping"]
    click.echo(
        f"{data['records']:,} records, {data['relevant']:,} relevant: WSS@95"
        f" {data['wss@95']:.3f}, recall@10% {data['recall@10%']:.3f}, loss {data['loss']:.3f},"
        f" last relevant at {data['last_relevant']:,}; the stopping rule stops at"
        f" {stop['screened']} (recall {stop['recall']})"
    )


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
