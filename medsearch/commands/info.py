"""``medsearch show`` and ``medsearch stats``: what is in the local store."""

from __future__ import annotations

import click

from medsearch.commands.common import emit_json, parse_pmid, paths_of


@click.command()
@click.argument("pmid")
@click.option("--json", "as_json", is_flag=True, help="Print the full record as JSON.")
@click.pass_context
def show(ctx: click.Context, pmid: str, as_json: bool) -> None:
    """Show the stored record of one PMID."""
    from medsearch.store import Store

    number = parse_pmid(pmid)
    paths = paths_of(ctx)
    with Store(paths.store, readonly=True) as store:
        article = store.get(number)
    if as_json:
        emit_json(article.to_dict())
    else:
        from medsearch.commands.render import print_article

        print_article(article)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def stats(ctx: click.Context, as_json: bool) -> None:
    """Corpus size, files ingested, index sizes and kinds."""
    from medsearch.status import corpus_status

    info = corpus_status(paths_of(ctx))
    if as_json:
        emit_json(info)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(show_header=False, box=None, padding=(0, 2))
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, int):
            value = f"{value:,}"
        table.add_row(key, str(value))
    Console().print(table)
