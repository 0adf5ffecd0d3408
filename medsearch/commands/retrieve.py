"""``medsearch similar``, ``sentences`` and ``cite``: the dense-side commands."""

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
    parse_pmid,
    paths_of,
    rerank_choice,
    rerank_options,
)
from medsearch.errors import HomeError, UsageError

if TYPE_CHECKING:
    from medsearch.paths import Paths
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher


@click.command()
@click.argument("pmid", required=False)
@click.option("--text", default=None, help="Title and abstract text instead of a PMID.")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True)
@filter_options
@click.option("--keep-duplicates", is_flag=True, help="Keep articles with the same title.")
@click.option(
    "--by",
    type=click.Choice(["text", "citations", "text+citations"]),
    default="text",
    show_default=True,
    help="text: nearest article vectors; citations: co-cited with PMID or citing the same"
    " references (this corpus's citation graph; no vectors needed); text+citations: the"
    " two fused (docs/citations.md).",
)
@model_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def similar(
    ctx: click.Context,
    pmid: str | None,
    text: str | None,
    k: int,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
    keep_duplicates: bool,
    by: str,
    profile: str | None,
    device: str,
    as_json: bool,
) -> None:
    """Articles most similar to PMID (its stored vector, or --by citations), or to --text."""
    from medsearch.retrieval import neighbours
    from medsearch.retrieval.searcher import open_searcher

    if (pmid is None) == (text is None):
        raise UsageError("give either a PMID or --text 'title and abstract'")
    from medsearch.serve.client import Param, ask, filter_params, pmid_path, usable

    if pmid is not None and by != "text+citations" and usable(profile, device):
        params: list[Param] = [
            ("k", k),
            ("by", by),
            ("keep_duplicates", "true" if keep_duplicates else None),
            ("record", "true" if by == "text" else None),
        ]
        params += filter_params(year, journals, types, exclude_retracted)
        answer = ask(paths_of(ctx), pmid_path("/similar", parse_pmid(pmid)), params)
        if answer is not None:  # a running service answered
            from medsearch.retrieval.results import SearchResult

            kept = answer.pop("record", None)
            served = SearchResult.from_dict(answer)
            if isinstance(kept, dict):  # what similar records in the history, kept here
                _record_served(
                    ctx, parse_pmid(pmid), served, kept, year, journals, types, exclude_retracted
                )
            if as_json:
                emit_json(answer)
            else:
                _print(served, as_json=False)
            return
    if by == "citations":
        from medsearch.commands.citations import opened
        from medsearch.retrieval.citations import related

        if pmid is None:
            raise UsageError("--by citations needs a PMID, not --text")
        with opened(ctx) as (store, graph):
            found = related(store, graph, parse_pmid(pmid), k, make_filters(year, journals, types))
        _print(found, as_json)
        return
    with open_searcher(paths_of(ctx), profile=profile, device=device) as searcher:
        if by == "text+citations":
            from medsearch.commands.citations import similar_fused

            if pmid is None:
                raise UsageError("--by text+citations needs a PMID, not --text")
            filters = make_filters(year, journals, types, exclude_retracted)
            _print(similar_fused(ctx, searcher, parse_pmid(pmid), k, filters), as_json)
            return
        if pmid is not None:
            result = neighbours.similar(
                searcher,
                parse_pmid(pmid),
                k=k,
                filters=make_filters(year, journals, types, exclude_retracted),
                skip_duplicates=not keep_duplicates,
            )
            _record_similar(paths_of(ctx), searcher, parse_pmid(pmid), result)
        else:
            assert text is not None
            title, _, abstract = text.partition("\n")
            result = neighbours.similar_text(searcher, title, abstract, k=k)
    _print(result, as_json)


def _record_served(
    ctx: click.Context,
    pmid: int,
    result: SearchResult,
    kept: dict[str, Any],
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
) -> None:
    """Keep a served list in this home's history, as :func:`_record_similar` keeps one
    run here (the service sends the corpus snapshot; it writes nothing itself)."""
    from medsearch.history.recording import record_similar_kept
    from medsearch.store.snapshot import Snapshot

    filters = make_filters(year, journals, types, exclude_retracted)
    snapshot = Snapshot(**kept["snapshot"])
    try:
        record_similar_kept(paths_of(ctx), pmid, result, snapshot, filters=filters)
    except HomeError as exc:  # the list stands; the note says what was not kept
        click.echo(f"note: not recorded in the history: {exc}", err=True)


def _record_served_cite(
    paths: Paths, paragraph: str, answer: dict[str, Any], kept: dict[str, Any], k: int
) -> None:
    """Keep a served cite in this home's history, as a cite run here is kept (the
    service sends the corpus snapshot; the rest is its answer)."""
    import numpy as np

    from medsearch.history.recording import CiteKept, record_cite_kept
    from medsearch.store.snapshot import Snapshot

    citances = answer.get("citances", [])
    pmids = [int(h["pmid"]) for c in citances for h in c.get("hits", ())]
    cite_kept = CiteKept(
        pmids=np.array(pmids, dtype=np.int64),
        sentences=len(citances),
        before=answer.get("before"),
        modes=tuple(str(c["mode"]) for c in citances),
        snapshot=Snapshot(**kept["snapshot"]),
    )
    try:
        record_cite_kept(paths, paragraph, cite_kept, k=k)
    except HomeError as exc:  # the answer stands; the note says what was not kept
        click.echo(f"note: not recorded in the history: {exc}", err=True)


def _record_similar(paths: Paths, searcher: Searcher, pmid: int, result: SearchResult) -> None:
    """Keep the list in the search history (nothing in a read-only home)."""
    from medsearch.history.recording import record_similar

    try:
        record_similar(paths, searcher, pmid, result, filters=result.filters)
    except HomeError as exc:  # the list stands; the note says what was not kept
        click.echo(f"note: not recorded in the history: {exc}", err=True)


@click.command()
@click.argument("text")
@click.option("-k", "k", type=click.IntRange(1, 1000), default=10, show_default=True)
@model_options
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def sentences(
    ctx: click.Context, text: str, k: int, profile: str | None, device: str, as_json: bool
) -> None:
    """Abstract sentences closest in meaning to TEXT, with their neighbours for context."""
    from medsearch.retrieval import neighbours
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.serve.client import ask, usable

    if as_json and usable(profile, device):
        answer = ask(paths_of(ctx), "/sentences", [("q", text), ("k", k)])
        if answer is not None:  # a running service answered
            emit_json(answer)
            return

    with open_searcher(paths_of(ctx), profile=profile, device=device) as searcher:
        result = neighbours.sentences(searcher, text, k=k)
    _print(result, as_json)


@click.command()
@click.argument("text", nargs=-1)
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A text file with the paragraph (default: TEXT, else standard input).",
)
@click.option(
    "--all-sentences",
    is_flag=True,
    help="Search every sentence, also those without a marker when others have one.",
)
@click.option("-k", "k", type=click.IntRange(1, 100), default=5, show_default=True)
@click.option("--before", type=int, default=None, help="Only work published before YEAR.")
@click.option(
    "--cited",
    default=None,
    help="PMIDs the manuscript already cites (comma-separated): candidates co-cited with"
    " them or citing the same references rank higher (off unless given; docs/citations.md).",
)
@rerank_options
@model_options
@click.option("--json", "as_json", is_flag=True, help="One object with a citances list.")
@click.pass_context
def cite(
    ctx: click.Context,
    text: tuple[str, ...],
    file: Path | None,
    all_sentences: bool,
    k: int,
    before: int | None,
    cited: str | None,
    rerank: str | None,
    no_rerank: bool,
    profile: str | None,
    device: str,
    as_json: bool,
) -> None:
    """Suggest references for each citing sentence of a manuscript paragraph.

    The paragraph is TEXT (the words given, joined by spaces), --file, or standard
    input. Citation markers such as [12], [3-5,8] and (Smith et al., 2019) are
    recognised and removed before searching. When some sentences carry a marker, only
    those are searched, and a note names the others (--all-sentences searches them too).

    \b
    Examples:
      medsearch cite 'IL-6 blockade lowers mortality in severe COVID-19.'
      medsearch cite --file paragraph.txt --before 2021
      pbpaste | medsearch cite --json
    """
    from medsearch.history.recording import record_cite
    from medsearch.retrieval.cite import suggest
    from medsearch.retrieval.searcher import open_searcher

    if file is not None and text:
        raise UsageError("give the paragraph as TEXT or with --file, not both")
    if text:
        paragraph = " ".join(text)
    elif file is not None:
        try:
            paragraph = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from exc
    else:
        paragraph = sys.stdin.read()
    paths = paths_of(ctx)
    from medsearch.serve.client import Param, ask, usable

    if as_json and cited is None and usable(profile, device):
        params: list[Param] = [
            ("k", k),
            ("before", before),
            ("rerank", rerank_choice(rerank, no_rerank)),
            ("all_sentences", "true" if all_sentences else None),
            ("record", "true"),
        ]
        answer = ask(paths, "/cite", params, body=paragraph)
        if answer is not None:  # a running service answered
            kept = answer.pop("record", None)
            if isinstance(kept, dict):
                _record_served_cite(paths, paragraph, answer, kept, k)
            emit_json(answer)
            return
    with open_searcher(paths, profile=profile, device=device) as searcher:
        depth = k if cited is None else max(k, 50)  # the graph reorders a deeper pool
        result = suggest(
            searcher,
            paragraph,
            k=depth,
            before=before,
            rerank=rerank_choice(rerank, no_rerank) or True,
            all_sentences=all_sentences,
        )
        if cited is not None:
            from medsearch.commands.citations import cite_fused

            result = cite_fused(ctx, result, cited, k)
        try:
            record_cite(paths, searcher, paragraph, result, k=k)
        except HomeError as exc:  # the suggestions stand; the note says what was not kept
            click.echo(f"note: not recorded in the history: {exc}", err=True)
    if as_json:
        emit_json(result.to_dict())
        return
    from rich.text import Text

    from medsearch.commands.render import console, print_hits

    for item in result.citances:
        console.print(Text(f"» {item.citance.text}", style="bold"), highlight=False)
        print_hits(item.result.hits)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


def _print(result: object, as_json: bool) -> None:
    from medsearch.retrieval.results import SearchResult

    assert isinstance(result, SearchResult)
    if as_json:
        emit_json(result.to_dict())
        return
    from medsearch.commands.render import print_hits

    print_hits(result.hits)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
