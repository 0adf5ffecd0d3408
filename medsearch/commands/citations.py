"""``medsearch refs``, ``citedby`` and ``snowball``: following the citation graph."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from medsearch.commands.common import (
    emit_json,
    filter_options,
    make_filters,
    parse_pmid,
    paths_of,
)
from medsearch.errors import NotFoundError, StoreError, UsageError

if TYPE_CHECKING:
    from medsearch.index.citations import CitationGraph
    from medsearch.records import Filters, Hit
    from medsearch.retrieval.cite import CiteResult
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher
    from medsearch.store import Store


def export_options(fn: Any) -> Any:
    fn = click.option(
        "--output",
        "-o",
        type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
        default=None,
        help="With --export: the file to write (default and -: standard output).",
    )(fn)
    return click.option(
        "--export",
        "export_fmt",
        type=click.Choice(["bibtex", "ris", "nbib", "csv"]),
        default=None,
        help="Export the stored records of the list instead of printing it.",
    )(fn)


@contextmanager
def opened(ctx: click.Context) -> Iterator[tuple[Store, CitationGraph]]:
    from medsearch.retrieval.citations import open_graph
    from medsearch.store import Store

    paths = paths_of(ctx)
    if not paths.store.exists():
        raise StoreError(f"no corpus in {paths.home} yet; run `medsearch ingest PATH`")
    with Store(paths.store, readonly=True) as store:
        yield store, open_graph(paths.citations, store)


def finish(
    ctx: click.Context,
    result: SearchResult,
    k: int | None,
    export_fmt: str | None,
    output: Path | None,
    as_json: bool,
    header: str,
) -> None:
    """Print, ``--json`` or ``--export`` a citation list (``k``: the first k only)."""
    if output is not None and export_fmt is None:
        raise UsageError("-o/--output names the file of --export FORMAT")
    if k is not None:
        result = result.with_hits(result.hits[:k])
    if export_fmt is not None:
        from medsearch.commands.export import write_records

        stored = [h.pmid for h in result.hits if h.in_corpus]
        if not stored:
            raise NotFoundError("nothing to export: no article of the list is in the store")
        write_records(paths_of(ctx), stored, export_fmt, output)
        outside = len(result.hits) - len(stored)
        if outside:
            click.echo(f"note: {outside} article(s) outside the store were left out", err=True)
        return
    if as_json:
        emit_json(result.to_dict())
        return
    from medsearch.commands.render import print_hits

    print_hits(result.hits, header=f"[dim]{header}[/]", score=score_text(result))
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


def score_text(result: SearchResult) -> Callable[[Hit], str | None]:
    """What a citation list's score is, said as that: references keep their list's order
    (the score is the rank); cited-by by date shows the date (the score is it, as
    YYYYMMDD), by cited the count (shown already), by relevance the references shared;
    snowball's closeness to the seeds is a score only for an article stored here."""
    if result.mode == "references":
        return lambda hit: None
    if result.mode == "cited_by":
        if result.sort == "date":
            return lambda hit: f"published {date_text(int(hit.score))}"
        if result.sort == "relevance":
            return lambda hit: f"{int(hit.score)} reference(s) shared"
        return lambda hit: None
    if result.mode == "snowball":
        return lambda hit: f"score {hit.score:.3f}" if hit.in_corpus else None
    return lambda hit: f"score {hit.score:.3f}"


def date_text(value: int) -> str:
    """``20190305`` -> ``2019 Mar 5``; ``20190300`` -> ``2019 Mar``; 0 -> ``n.d.``."""
    from medsearch.records import PubDate

    year, month, day = value // 10_000, value // 100 % 100, value % 100
    if not year:
        return "n.d."
    return str(PubDate(year=year, month=month or None, day=day or None))


@click.command()
@click.argument("pmid")
@click.option("-k", "k", type=click.IntRange(1, None), default=None, help="Show the first K only.")
@filter_options
@export_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def refs(
    ctx: click.Context,
    pmid: str,
    k: int | None,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
    export_fmt: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """The references of PMID: its record's reference list, then the Open Citation
    Collection's further edges. Works for any PMID; a reference outside the store is
    listed by its PMID (and DOI where its citing record gives one)."""
    from medsearch.retrieval.citations import references

    wanted = parse_pmid(pmid)
    with opened(ctx) as (store, graph):
        result = references(
            store, graph, wanted, make_filters(year, journals, types, exclude_retracted)
        )
    outside = sum(1 for h in result.hits if not h.in_corpus)
    header = f"PMID {wanted} cites {result.total:,} ({outside:,} outside this corpus)"
    finish(ctx, result, k, export_fmt, output, as_json, header)


@click.command()
@click.argument("pmid")
@click.option(
    "--sort",
    type=click.Choice(["date", "cited", "relevance"]),
    default="date",
    show_default=True,
    help="date: newest first; cited: most cited first; relevance: most references"
    " shared with PMID first.",
)
@click.option("-k", "k", type=click.IntRange(1, None), default=None, help="Show the first K only.")
@filter_options
@export_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def citedby(
    ctx: click.Context,
    pmid: str,
    sort: str,
    k: int | None,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
    export_fmt: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """The articles citing PMID in this corpus (stored or not: a PMID that only appears
    in others' reference lists answers too)."""
    from medsearch.retrieval.citations import cited_by

    wanted = parse_pmid(pmid)
    with opened(ctx) as (store, graph):
        result = cited_by(
            store, graph, wanted, make_filters(year, journals, types, exclude_retracted), sort
        )
    header = f"PMID {wanted} is cited by {result.total:,} in this corpus · sorted by {sort}"
    finish(ctx, result, k, export_fmt, output, as_json, header)


@click.command()
@click.argument("pmids", nargs=-1, required=True)
@click.option("--backward", is_flag=True, help="Follow the seeds' references.")
@click.option("--forward", is_flag=True, help="Follow the articles citing the seeds.")
@click.option(
    "--depth",
    type=click.IntRange(1, 2),
    default=1,
    show_default=True,
    help="2: follow the same directions again from what depth 1 found.",
)
@click.option(
    "--exclude",
    "exclude",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Already screened: a file of PMIDs, or a BibTeX/RIS/MEDLINE export (PMIDs or DOIs).",
)
@click.option("-k", "k", type=click.IntRange(1, None), default=None, help="Show the first K only.")
@export_options
@click.option("--json", "as_json", is_flag=True, help="One object: PRISMA counts and hits.")
@click.pass_context
def snowball(
    ctx: click.Context,
    pmids: tuple[str, ...],
    backward: bool,
    forward: bool,
    depth: int,
    exclude: Path | None,
    k: int | None,
    export_fmt: str | None,
    output: Path | None,
    as_json: bool,
) -> None:
    """Citation chasing from seed PMIDs: their references (--backward) and citing
    articles (--forward; both when neither is given), deduplicated, without what
    --exclude lists, ranked by closeness to the seeds (hybrid over their text: words,
    and vectors when the corpus has them), with PRISMA-style counts (found, duplicates,
    excluded, new)."""
    from medsearch.retrieval.snowball import read_exclusions
    from medsearch.retrieval.snowball import snowball as chase

    seeds = [parse_pmid(p) for p in pmids]
    if not backward and not forward:
        backward = forward = True
    from medsearch.retrieval.searcher import open_searcher

    with opened(ctx) as (store, graph), open_searcher(paths_of(ctx)) as searcher:
        screened = read_exclusions(exclude, store) if exclude is not None else set()
        done = chase(
            store,
            graph,
            seeds,
            backward=backward,
            forward=forward,
            depth=depth,
            exclude=screened,
            searcher=searcher,
        )
    c = done.counts
    counts = (
        f"found {c.found:,} · duplicates {c.duplicates:,} · excluded {c.excluded:,} · new {c.new:,}"
    )
    if as_json and export_fmt is None:
        result = done.result
        if k is not None:
            result = result.with_hits(result.hits[:k])
        emit_json({"counts": c.to_dict(), **result.to_dict()})
        return
    if export_fmt is not None:
        click.echo(counts, err=True)
    finish(ctx, done.result, k, export_fmt, output, as_json, f"{c.seeds} seed(s): {counts}")


def similar_fused(
    ctx: click.Context, searcher: Searcher, pmid: int, k: int, filters: Filters
) -> SearchResult:
    """``similar --by text+citations`` (see :mod:`medsearch.retrieval.citation_signals`)."""
    from medsearch.retrieval.citation_signals import similar_fused as fused

    with opened(ctx) as (_, graph):
        return fused(searcher, graph, pmid, k=k, filters=filters)


def cite_fused(ctx: click.Context, result: CiteResult, cited: str, k: int) -> CiteResult:
    """``cite --cited PMIDS``: each citance's candidates reordered with the citation
    neighbourhood of the references the manuscript already cites."""
    from medsearch.retrieval.citation_signals import cite_fused as fused

    pmids = [parse_pmid(p) for p in cited.replace(",", " ").split()]
    if not pmids:
        raise UsageError("--cited takes PMIDs, separated by commas")
    with opened(ctx) as (_, graph):
        return fused(result, graph, pmids, k)
