"""``medsearch eval``: retrieval quality on a BEIR-format corpus."""

from __future__ import annotations

from pathlib import Path

import click

from medsearch.commands.common import emit_json, paths_of


@click.command(name="eval")
@click.argument("beir_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--mode",
    type=click.Choice(["lexical", "dense", "hybrid", "rerank"]),
    default="lexical",
    show_default=True,
)
@click.option("--split", default="test", show_default=True, help="qrels/SPLIT.tsv to score.")
@click.option("--models", "profile", default=None, help="Model profile for dense modes.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N queries.")
@click.option(
    "--rerank",
    type=click.Choice(["auto", "delta", "cross", "none"]),
    default="none",
    show_default=True,
    help="Reranker over the first stage; delta trains the collection's own model first.",
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="auto, cpu, cuda[:N] or mps (auto on a CPU encodes within ingest's CPU guard).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def evaluate(
    ctx: click.Context,
    beir_dir: Path,
    mode: str,
    split: str,
    profile: str | None,
    limit: int | None,
    rerank: str,
    device: str,
    as_json: bool,
) -> None:
    """nDCG@10, Recall@100, MAP@10 and MRR@10 on BEIR_DIR (corpus/queries/qrels).

    The corpus goes through the same ingest, encoders and searcher as PubMed; the built
    collection and its vectors are cached, so a second run only searches. On a machine
    without a GPU the encoding is timed first and kept within ingest's CPU limit
    (--device cpu encodes anyway).

    \b
    Examples:
      medsearch eval assets/beir/tiny
      medsearch eval scifact --mode hybrid --device cpu
    """
    from medsearch.commands.progress import cli_progress
    from medsearch.evaluate import evaluate as run_eval

    paths = paths_of(ctx).ensure()
    try:
        with cli_progress(enabled=not as_json) as progress:
            report = run_eval(
                beir_dir,
                paths,
                mode=mode,
                split=split,
                profile=profile,
                limit=limit,
                rerank=rerank,
                progress=progress,
                device=device,
            )
    except (Exception, KeyboardInterrupt) as exc:
        if as_json and not isinstance(exc, click.ClickException):  # as ingest --json does
            emit_json(_failed_json(beir_dir, mode, split, profile, exc))
        raise
    if as_json:
        emit_json({**report.to_dict(), "error": None, "exit_status": 0})
        return
    models = f" profile={report.profile}" if report.profile else ""  # lexical reads none
    click.echo(
        f"{report.corpus} [{report.split}] mode={report.mode}{models}"
        f" queries={report.queries} ({report.seconds:.1f} s)"
    )
    for name, value in report.metrics.items():
        click.echo(f"  {name:<11} {value:.4f}")
    for note in report.notes:
        click.echo(f"note: {note}", err=True)


def _failed_json(
    beir_dir: Path, mode: str, split: str, profile: str | None, error: BaseException
) -> dict[str, object]:
    """``--json``'s object for a run that stopped: the report's shape with no figures,
    and the one line and exit status the command ends with (``update`` and ``ingest``
    do the same), so a script reads one shape whatever happened."""
    from medsearch.commands.common import failure

    message, status = failure(error)
    return {
        "corpus": str(beir_dir),
        "split": split,
        "mode": mode,
        "profile": profile,
        "queries": 0,
        "metrics": {},
        "seconds": None,
        "notes": [],
        "error": message,
        "exit_status": status,
    }
