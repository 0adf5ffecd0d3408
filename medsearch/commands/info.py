"""``medsearch show`` and ``medsearch stats``: what is in the local store."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from medsearch.commands.common import emit_json, parse_pmid, paths_of

if TYPE_CHECKING:
    from rich.table import Table


@click.command()
@click.argument("pmid")
@click.option("--json", "as_json", is_flag=True, help="Print the full record as JSON.")
@click.pass_context
def show(ctx: click.Context, pmid: str, as_json: bool) -> None:
    """Show the stored record of one PMID."""
    from medsearch.serve.client import ask, pmid_path
    from medsearch.store import Store

    number = parse_pmid(pmid)
    paths = paths_of(ctx)
    answer = ask(paths, pmid_path("/articles", number))
    if answer is not None and as_json:  # a running service answered
        emit_json(answer)
        return
    if answer is not None:
        from medsearch.records import Article

        answer.pop("served")
        article = Article.from_dict(answer)
    else:
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
    """Corpus size, files ingested, each part's size on disk, and what PubMed would need.

    The last column scales each part by this corpus's own bytes per article (per
    sentence for sentence vectors) to all of PubMed, so the disk can be checked before
    a 40M-article ingest.
    """
    from medsearch.status import corpus_status

    info = corpus_status(paths_of(ctx))
    if as_json:
        emit_json(info)
        return
    from rich.table import Table

    from medsearch.commands.render import console

    footprint = info.pop("footprint")
    table = Table(show_header=False, box=None, padding=(0, 2))
    for key, value in info.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, int):
            value = f"{value:,}"
        table.add_row(key, str(value))
    console.print(table)
    console.print(footprint_table(footprint))


def footprint_table(footprint: dict[str, Any]) -> Table:
    """Parts by size, per article, and extrapolated to PubMed's 40.9M citations."""
    from rich.table import Table

    from medsearch.footprint import REPRESENTATIVE_CITATIONS, human

    target = footprint["target"]
    table = Table(
        title=f"Disk: this corpus and all of PubMed ({target['citations'] / 1e6:.1f}M "
        f"citations, {target['with_abstract'] / 1e6:.1f}M with an abstract, "
        f"~{target['sentences'] / 1e6:.0f}M sentences)",
        title_justify="left",
        box=None,
        padding=(0, 2),
    )
    for header in ("part", "size", "per article", "per sentence", "all of PubMed"):
        table.add_column(header, justify="left" if header == "part" else "right")
    for part in footprint["parts"]:
        table.add_row(
            part["part"],
            human(part["bytes"]),
            human(part["bytes_per_article"]),
            human(part["bytes_per_sentence"]),
            human(part["projected_bytes"]),
        )
    table.add_row(
        "total",
        human(footprint["total_bytes"]),
        human(footprint["bytes_per_article"]),
        "",
        footprint["projected_total"],
        style="bold",
    )
    table.caption = (
        f"{footprint['with_abstract_share']:.0%} of this corpus's citations have an abstract;"
        f" one without is ~{footprint['without_abstract_size_ratio']:.0%} the size"
        " (store, lexical index)"
    )
    if footprint.get("representative") is False:
        table.caption += (
            f"; under {REPRESENTATIVE_CITATIONS:,} articles the store and lexical index weigh"
            " more per article than at PubMed's size (the store trains its compression"
            " dictionary at 5,000), so their projection is high"
        )
    table.caption_justify = "left"
    return table
