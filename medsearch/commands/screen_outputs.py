"""``medsearch screen`` commands that take a project's decisions out: exports, the
second reviewer's conflicts and imported decisions, PRISMA, and simulation on a labelled
data set (split from :mod:`medsearch.commands.screen` to keep each module short; that
module adds them to the ``screen`` group)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.commands.screen_gather import JSON, REVIEWER, _open
from medsearch.errors import UsageError


@click.command(name="export")
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


@click.command()
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


@click.command(name="import-decisions")
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


@click.command()
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


@click.command()
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


OUTPUT_COMMANDS = (export_, conflicts, import_decisions_, prisma, simulate)
