"""``medsearch rerank train|status`` and ``medsearch mark``: the Delta reranker and the
user's own relevance signals."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import click

from medsearch.commands.common import emit_json, parse_pmid, paths_of
from medsearch.paths import Paths


@click.group()
def rerank() -> None:
    """The Delta reranker: a fast learned ranking trained on this corpus."""


@rerank.command()
@click.option(
    "--queries",
    type=click.IntRange(min=10),
    default=20_000,
    show_default=True,
    help="Pseudo-queries from the corpus's keywords, MeSH and titles.",
)
@click.option("--epochs", type=click.IntRange(min=1), default=8, show_default=True)
@click.option(
    "--signals",
    default=None,
    help="Comma-separated training signals: keywords, titles, sentences, cross, marks"
    " (default: keywords,titles,marks; cross too on a GPU profile with a cross-encoder).",
)
@click.option("--device", default="auto", show_default=True, help="Device for the encoders.")
@click.option("--json", "as_json", is_flag=True, help="Print the training report as JSON.")
@click.pass_context
def train(
    ctx: click.Context,
    queries: int,
    epochs: int,
    signals: str | None,
    device: str,
    as_json: bool,
) -> None:
    """Train (or resume training) the Delta reranker on this corpus.

    Word vectors come from the corpus's own titles and abstracts; training queries from
    its author keywords, major MeSH headings and titles, with the first stage's results
    as negatives, plus the articles you opened, marked, exported or cited (see
    `medsearch mark`). An interrupted run resumes where it stopped.
    """
    from medsearch.commands.progress import cli_progress
    from medsearch.training.train import train_corpus

    paths = paths_of(ctx).ensure()
    chosen = tuple(s.strip() for s in signals.split(",") if s.strip()) if signals else None
    from medsearch.index.lexical.catch_up import catch_up
    from medsearch.lock import write_lock

    with cli_progress(enabled=not as_json) as progress, write_lock(paths, "rerank train"):
        catch_up(paths, progress)  # train searches: first mend what a stopped run left
        report = train_corpus(
            paths, queries=queries, epochs=epochs, signals=chosen, device=device, progress=progress
        )
    if as_json:
        emit_json(report.to_dict())
        return
    v = report.validation
    click.echo(
        f"trained the Delta reranker on {sum(report.queries.values()):,} queries"
        f" ({', '.join(f'{k} {n:,}' for k, n in report.queries.items())}),"
        f" {report.pairs:,} pairs, {report.epochs} epochs, {report.seconds:.0f} s"
    )
    click.echo(
        f"held-out nDCG@10 ({report.judged_on}): first stage {v.get('first_stage', 0):.4f},"
        f" Delta {v.get('blend_1.0', 0):.4f}, chosen blend {report.blend}"
        f" {v.get(f'blend_{report.blend}', v.get('first_stage', 0)):.4f}"
    )
    click.echo(f"saved to {report.directory}")
    if report.blend <= 0:
        click.echo(
            "the Delta model did not beat the first stage on held-out queries: searches keep"
            " the first-stage order (training again can change that once the corpus has grown"
            " or shrunk by a quarter)"
        )
    for note in report.notes:
        click.echo(f"note: {note}", err=True)


@rerank.command()
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """Whether this corpus has a usable Delta model, and what it was trained on."""
    from medsearch.retrieval.searcher import open_searcher

    with open_searcher(paths_of(ctx)) as searcher:
        found = searcher.delta_model()
    info: dict[str, Any] = {"usable": found.scorer is not None, "problem": found.problem}
    if found.scorer is not None:
        meta = found.scorer.meta
        info.update({k: meta.get(k) for k in ("trained_at", "corpus", "signals", "blend")})
        info["validation"] = meta.get("validation")
    if as_json:
        emit_json(info)
        return
    if found.scorer is None:
        click.echo(f"no usable Delta model: {found.problem}")
        return
    click.echo(
        f"Delta model trained {info['trained_at']} on {info['corpus']['articles']:,} articles;"
        f" signals {info['signals']}; blend {info['blend']}"
    )


@click.command()
@click.argument("pmids", nargs=-1)
@click.option("--query", default=None, help="The query the articles answer.")
@click.option(
    "--signal",
    type=click.Choice(["opened", "marked", "exported", "cited"]),
    default="marked",
    show_default=True,
)
@click.option("--list", "show", is_flag=True, help="Print the recorded marks.")
@click.option("--clear", is_flag=True, help="Delete every recorded mark.")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def mark(
    ctx: click.Context,
    pmids: tuple[str, ...],
    query: str | None,
    signal: str,
    show: bool,
    clear: bool,
    as_json: bool,
) -> None:
    """Record that PMIDs are relevant to a query (for `medsearch rerank train`).

    The TUI records the articles you open, mark, export or cite; scripts use this. The
    log (signals.jsonl in the data home) stays on this machine; --clear deletes it.
    """
    from medsearch.errors import UsageError
    from medsearch.rerank import marks

    paths = paths_of(ctx)
    if clear:
        removed = marks.clear(paths.signals_file)
        emit_json({"cleared": removed}) if as_json else click.echo(f"deleted {removed:,} marks")
        return
    if show:
        found = list(marks.read(paths.signals_file))
        if as_json:
            emit_json({"marks": [asdict(m) for m in found]})
            return
        for m in found:
            click.echo(f"{m.pmid}\t{m.signal}\t{m.query}")
        return
    if not pmids or query is None:
        raise UsageError("give PMIDs and --query (or --list / --clear)")
    numbers = [parse_pmid(p) for p in pmids]
    refuse_missing(paths, numbers)
    written = marks.record(paths.ensure().signals_file, query, numbers, signal)
    if as_json:
        emit_json({"recorded": written, "signal": signal, "query": query})
    else:
        click.echo(f"recorded {written} {signal} mark(s) for {query!r}")


def refuse_missing(paths: Paths, pmids: list[int]) -> None:
    """A mark of a PMID the store lacks (a typo, another corpus) would train the reranker
    on an article it can never rank, so none of the marks is recorded: the user fixes
    the list and runs the same command again."""
    from medsearch.errors import NotFoundError
    from medsearch.store import Store

    with Store(paths.store, readonly=True) as store:
        found = store.existing(pmids)
    missing = [p for p in dict.fromkeys(pmids) if p not in found]
    if missing:
        raise NotFoundError(
            f"not in the store: PMID {', '.join(map(str, missing))}; no marks were recorded"
        )
