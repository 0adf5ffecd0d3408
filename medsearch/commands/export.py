"""``medsearch export``: stored records as BibTeX, RIS, MEDLINE (nbib) or CSV."""

from __future__ import annotations

from pathlib import Path

import click

from medsearch.commands.common import parse_pmid, paths_of
from medsearch.errors import NotFoundError, UsageError


@click.command()
@click.argument("pmids", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["bibtex", "ris", "nbib", "csv"]),
    default="bibtex",
    show_default=True,
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="Write to a file instead of standard output (- is standard output).",
)
@click.pass_context
def export(ctx: click.Context, pmids: tuple[str, ...], fmt: str, output: Path | None) -> None:
    """Export the stored records of PMIDs for a reference manager."""
    from medsearch.export import export as render
    from medsearch.store import Store

    numbers = [parse_pmid(value) for value in pmids]
    with Store(paths_of(ctx).store, readonly=True) as store:
        found = store.get_many(numbers)
    missing = [p for p in numbers if p not in found]
    if missing:
        raise NotFoundError(f"not in the store: PMID {', '.join(map(str, missing))}")
    text = render([found[p] for p in numbers], fmt)  # type: ignore[arg-type]
    if output is None or str(output) == "-":
        click.echo(text, nl=False)
    else:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from exc
        click.echo(f"wrote {len(numbers)} record(s) to {output}", err=True)
