"""``medsearch search``: the query language, filters and modes, for people and scripts."""

from __future__ import annotations

import click

from medsearch.commands.common import (
    emit_json,
    filter_options,
    make_filters,
    model_options,
    paths_of,
    rerank_choice,
    rerank_options,
)
from medsearch.errors import QuerySyntaxError, UsageError
from medsearch.records import Filters


def date_filter(value: str) -> Filters:
    """``--date A:B`` read as ``A:B[dp]`` is (the same forms, the same errors)."""
    from medsearch.query.parser import parse_date_range

    try:
        first, last = parse_date_range(value)
    except QuerySyntaxError:
        raise UsageError(
            f"--date expects YYYY, YYYY/MM or YYYY/MM/DD, or FROM:TO of them, not {value!r}"
        ) from None
    return Filters(date_from=first, date_to=last)


@click.command()
@click.argument("query")
@click.option(
    "--mode",
    type=click.Choice(["lexical", "dense", "hybrid"]),
    default=None,
    help="Retrieval mode (default: hybrid when vectors exist, else lexical).",
)
@click.option(
    "-k", "k", type=click.IntRange(1, 10_000), default=10, show_default=True, help="Number of hits."
)
@filter_options
@click.option(
    "--date",
    "date",
    default=None,
    help="Publication date or range, as [dp]: 2019/08, 2019/08/01:2020/03 (beside --year).",
)
@rerank_options
@model_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    mode: str | None,
    k: int,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    date: str | None,
    rerank: str | None,
    no_rerank: bool,
    profile: str | None,
    device: str,
    as_json: bool,
) -> None:
    """Search with PubMed's query syntax: words, "phrases", AND/OR/NOT, field tags.

    \b
    Examples:
      medsearch search 'IL-6 cytokine storm COVID-19'
      medsearch search 'brca1[ti] AND review[pt]' --year 2015:2020
      medsearch search 'metformin' --journal 'N Engl J Med' --json
    """
    from medsearch.retrieval.searcher import open_searcher

    filters = make_filters(year, journals, types)
    if date is not None:
        filters = filters.merge(date_filter(date))
    choice = rerank_choice(rerank, no_rerank)
    with open_searcher(paths_of(ctx), profile=profile, device=device) as searcher:
        result = searcher.search(query, mode=mode, k=k, filters=filters, rerank=choice)
        if result.mode != "lexical" and searcher.rerank_plan(choice).cross:
            result = searcher.rerank(result)
    if as_json:
        emit_json(result.to_dict())
        return
    from medsearch.commands.render import print_hits

    shown = len(result.hits)
    header = f"[dim]{result.total:,} matching · showing {shown} · mode {result.mode}"
    if result.rerankers:
        header += f" · reranked by {' + '.join(result.rerankers)}"
    header += "[/]"
    print_hits(result.hits, header=header)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
