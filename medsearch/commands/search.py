"""``medsearch search``: the query language, filters and modes, for people and scripts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from medsearch.errors import HomeError, NotFoundError, QuerySyntaxError, UsageError
from medsearch.records import Filters

if TYPE_CHECKING:
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher


def date_filter(value: str) -> Filters:
    """``--date A:B`` read as ``A:B[dp]`` is (the same forms, the same errors)."""
    from medsearch.query.tags import parse_date_range

    try:
        first, last = parse_date_range(value)
    except QuerySyntaxError:
        raise UsageError(
            f"--date expects YYYY, YYYY/MM or YYYY/MM/DD, or FROM:TO of them, not {value!r}"
        ) from None
    return Filters(date_from=first, date_to=last)


@click.command()
@click.argument("query", required=False)
@click.option(
    "--file",
    "strategy_file",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="Run a strategy of PubMed-style numbered lines (#1 ..., #3 AND #5; plain lines"
    " are numbered in order): print each line's count and record each in the history.",
)
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
@click.option(
    "--sort",
    type=click.Choice(["relevance", "date", "pubdate", "author", "journal", "cited"]),
    default="relevance",
    show_default=True,
    help="Order: relevance; date or pubdate (newest first); author (first author A-Z);"
    " journal (A-Z); cited (most cited in this corpus first). Other than relevance, the"
    " best 10,000 matches are sorted.",
)
@click.option("--count", "count_only", is_flag=True, help="Print only the number of matches.")
@click.option(
    "--export",
    "export_fmt",
    type=click.Choice(["bibtex", "ris", "nbib", "csv"]),
    default=None,
    help="Export the matching records (up to 10,000) instead of listing hits.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="With --export: the file to write (default and -: standard output).",
)
@click.option(
    "--explain",
    is_flag=True,
    help="Print the query as it runs (PubMed's search details: MeSH headings exploded,"
    " words mapped to headings, journals and authors).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def search(
    ctx: click.Context,
    query: str | None,
    strategy_file: Path | None,
    mode: str | None,
    k: int,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
    date: str | None,
    rerank: str | None,
    no_rerank: bool,
    profile: str | None,
    device: str,
    sort: str,
    count_only: bool,
    export_fmt: str | None,
    output: Path | None,
    explain: bool,
    as_json: bool,
) -> None:
    """Search with PubMed's query syntax: words, "phrases", AND/OR/NOT, field tags.

    \b
    Examples:
      medsearch search 'IL-6 cytokine storm COVID-19'
      medsearch search 'brca1[ti] AND review[pt]' --year 2015:2020
      medsearch search 'metformin' --journal 'N Engl J Med' --json
      medsearch search 'cataract[ti]' --count
      medsearch search 'cataract surgery' --sort date --export ris -o cataract.ris
      medsearch search 'heart attack AND aspirin' --explain
      medsearch search --file strategy.txt
    """
    from medsearch.history.recording import record_search, resolver
    from medsearch.retrieval.searcher import open_searcher

    if (query is None) == (strategy_file is None):
        raise UsageError("give a QUERY or --file STRATEGY (one of them)")
    if strategy_file is not None:
        if export_fmt is not None or explain or sort != "relevance":
            raise UsageError(
                "--file prints each line's count: --export, --sort and --explain take one QUERY"
            )
        filters = make_filters(year, journals, types, exclude_retracted)
        if date is not None:
            filters = filters.merge(date_filter(date))
        _strategy(ctx, strategy_file, filters, mode, profile, device, as_json=as_json)
        return
    assert query is not None
    if output is not None and export_fmt is None:
        raise UsageError("-o/--output names the file of --export FORMAT")
    if count_only and export_fmt is not None:
        raise UsageError("--count and --export contradict each other: choose one")
    filters = make_filters(year, journals, types, exclude_retracted)
    if date is not None:
        filters = filters.merge(date_filter(date))
    choice = rerank_choice(rerank, no_rerank)
    if (
        export_fmt is None
        and not explain
        and _served(ctx, query, mode, k, sort, choice, date, count_only, filters, as_json=as_json)
    ):
        return
    from medsearch.retrieval.citations import open_graph
    from medsearch.retrieval.run import run_search

    paths = paths_of(ctx)
    with open_searcher(paths, profile=profile, device=device) as searcher:
        ran = run_search(
            searcher,
            query,
            mode=mode,
            k=k,
            filters=filters,
            rerank=choice,
            sort=sort,
            count_only=count_only,
            export_limit=EXPORT_LIMIT if export_fmt is not None else None,
            history=resolver(paths),
            graph=open_graph(paths.citations, searcher.store),
        )
        result, suggestion = ran.result, ran.suggestion
        try:
            record_search(paths, searcher, query, result)
        except HomeError as exc:  # the search stands; the note says what was not kept
            click.echo(f"note: not recorded in the history: {exc}", err=True)
        explained = explain_result(result, searcher) if explain else None
        if explained is not None and not as_json:
            click.echo(explanation(explained, searcher.mesh() is not None), err=True)
    if count_only:  # the notes say how the query was read: a count needs them too
        if as_json:
            counted: dict[str, object] = {"count": result.total}
            if result.notes:  # as in the hits' JSON: present when there are any
                counted["notes"] = list(result.notes)
            if explained is not None:
                counted["explain"] = explained
            emit_json(counted)
        else:
            click.echo(result.total)
            for note in result.notes:
                click.echo(f"note: {note}", err=True)
        return
    if export_fmt is not None:
        _export(ctx, result, export_fmt, output, quiet=as_json)
        return
    result = result.with_hits(result.hits[:k])
    if as_json:
        out = result.to_dict()
        if explained is not None:
            out["explain"] = explained
        if suggestion is not None:
            out["did_you_mean"] = suggestion.query
        emit_json(out)
        return
    _print_hits(result, sort, suggestion.note if suggestion is not None else None)


def _print_hits(result: SearchResult, sort: str, suggestion: str | None) -> None:
    """The hits as text, the header first and the notes on stderr (run here or served)."""
    from medsearch.commands.render import print_hits

    header = f"[dim]{matching(result)} · mode {result.mode}"
    if result.rerankers:
        header += f" · reranked by {' + '.join(result.rerankers)}"
    if sort != "relevance":
        header += f" · sorted by {sort}"
    header += "[/]"
    print_hits(result.hits, header=header)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if suggestion is not None:
        click.echo(f"note: {suggestion}", err=True)


def _served(
    ctx: click.Context,
    query: str,
    mode: str | None,
    k: int,
    sort: str,
    choice: str | None,
    date: str | None,
    count_only: bool,
    filters: Filters,
    *,
    as_json: bool,
) -> bool:
    """Ask a running service for this home (:mod:`medsearch.serve.client`); True when it
    answered and the answer is printed, as the command prints its own, and recorded in
    this home's history from what the service sent (``record``: the service writes
    nothing). A query with ``#N`` reads this home's history, so it is run here."""
    from medsearch.history.recording import SearchRecord, record_kept
    from medsearch.retrieval.results import SearchResult
    from medsearch.serve.client import Param, ask, filter_params, usable

    profile, device = ctx.params.get("profile"), ctx.params.get("device", "auto")
    if "#" in query or not usable(profile, device):
        return False
    params: list[Param] = [("q", query), ("mode", mode), ("k", k), ("sort", sort)]
    params += [("rerank", choice), ("date", date), ("count", "true" if count_only else None)]
    got = ctx.params
    params += filter_params(
        got["year"], got["journals"], got["types"], bool(got["exclude_retracted"])
    )
    params.append(("record", "true"))
    paths = paths_of(ctx)
    answer = ask(paths, "/search", params)
    if answer is None:
        return False
    kept = answer.pop("record", None)
    if isinstance(kept, dict):
        try:
            record_kept(paths, query, SearchRecord.from_dict(kept), filters=filters)
        except HomeError as exc:  # the search stands; the note says what was not kept
            click.echo(f"note: not recorded in the history: {exc}", err=True)
    if as_json:
        emit_json(answer)
    elif count_only:
        click.echo(answer["count"])
        for note in answer.get("notes", ()):
            click.echo(f"note: {note}", err=True)
    else:
        result = SearchResult.from_dict(answer)
        suggested = answer.get("did_you_mean")
        _print_hits(result, sort, f"did you mean: {suggested}" if suggested else None)
    return True


_NUMBERS = ("", "one", "both", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def matching(result: SearchResult) -> str:
    """The header's count. Plain words count the articles holding every word, but rank
    the closest even when none does: "0 matching" over ten hits reads as no results
    (issue 42), so that case says what the 0 counts."""
    from medsearch.retrieval.results import ALL_WORDS

    shown = len(result.hits)
    if result.total or not shown or result.counted != ALL_WORDS:
        return f"{result.total:,} matching · showing {shown}"
    typed = len((result.query or "").split())
    words = (
        "both words"
        if typed == 2
        else f"all {_NUMBERS[typed] if typed < len(_NUMBERS) else typed} words"
    )
    return f"no article has {words}; {shown} closest shown"


def explain_result(result: SearchResult, searcher: Searcher) -> dict[str, Any]:
    """``--explain``: the query as run (PubMed's search details, by the one printer) and
    the strategy as a tree with every clause's count (:mod:`medsearch.retrieval.explain`),
    as ``--json`` prints them (``explain.details``, ``explain.tree``)."""
    from medsearch.retrieval.explain import details, explain_tree

    assert result.plan is not None, "a search's result carries its plan"
    tree = explain_tree(result.plan, searcher.lexical, total=result.total)
    return {"details": details(result.plan), "tree": tree.to_dict()}


def explanation(explained: dict[str, Any], mesh_installed: bool) -> str:
    """``--explain`` as text: the search details, then each clause's count, indented
    as the strategy nests (the count first, as PubMed's history table and Ovid's lines
    put it), and how to install MeSH when it is not."""
    from medsearch.mesh.tables import INSTALL_HINT
    from medsearch.retrieval.explain import tree_lines

    lines = [f"search details: {explained['details']}"]
    if not mesh_installed:
        lines.append(f"note: as typed, MeSH not applied; {INSTALL_HINT}")
    lines.append("clause counts (each clause alone; NOT: the articles it excludes):")
    lines.extend(tree_lines(explained["tree"]))
    return "\n".join(lines)


def _strategy(
    ctx: click.Context,
    source: Path,
    filters: Filters,
    mode: str | None,
    profile: str | None,
    device: str,
    *,
    as_json: bool,
) -> None:
    """``search --file``: each numbered line counted and recorded
    (:mod:`medsearch.history.strategy`), listed as PubMed's Advanced page lists them."""
    from medsearch.history.strategy import read_strategy, run_strategy, strategy_text
    from medsearch.retrieval.searcher import open_searcher

    try:
        text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{source} is not UTF-8 text") from None
    lines = read_strategy(text)
    notes: list[str] = []
    paths = paths_of(ctx)
    with open_searcher(paths, profile=profile, device=device) as searcher:
        rows = run_strategy(paths, searcher, lines, filters=filters, mode=mode, notes=notes)
    if as_json:
        emit_json({"lines": [r.to_dict() for r in rows], "notes": notes})
        return
    click.echo(strategy_text(rows))
    for row in rows:
        for note in row.result.notes:
            click.echo(f"note: #{row.line.number}: {note}", err=True)
    for note in notes:
        click.echo(f"note: {note}", err=True)


EXPORT_LIMIT = 10_000
"""The most records ``search --export`` writes (the searcher's deepest list); a larger set
is cut, with a note, after its best matches (or its first in --sort order)."""


def _export(
    ctx: click.Context, result: SearchResult, fmt: str, output: Path | None, *, quiet: bool
) -> None:
    """Write the result's records through ``medsearch export``'s one code path."""
    from medsearch.commands.export import PROGRESS_FROM, write_records
    from medsearch.commands.progress import cli_progress

    pmids = [hit.pmid for hit in result.hits]
    if not pmids:
        raise NotFoundError("nothing to export: the search matched no articles")
    with cli_progress(enabled=not quiet and len(pmids) >= PROGRESS_FROM) as progress:
        write_records(paths_of(ctx), pmids, fmt, output, progress)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if result.total > len(pmids):
        click.echo(
            f"note: exported the first {len(pmids):,} of {result.total:,} matches"
            f" (the limit); narrow the query for the rest",
            err=True,
        )
