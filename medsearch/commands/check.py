"""``medsearch check``: a manuscript's references against retractions, expressions of
concern and corrections."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.errors import UsageError
from medsearch.records import pmid_from
from medsearch.watches.model import Watch, check_name

if TYPE_CHECKING:
    from medsearch.paths import Paths
    from medsearch.references import Reference
    from medsearch.retrieval.check import Checked
    from medsearch.store import Store

FLAGGED = 4
"""Exit status: a reference is retracted or under an expression of concern."""
UNRESOLVED = 5
"""Exit status: nothing flagged, but some references were not found in the corpus."""


@click.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--watch",
    "watch_name",
    default=None,
    metavar="NAME",
    help="Also save the resolved references as the watch NAME: every `watch run` (and"
    " so every `update`) reports those that become retracted, under an expression of"
    " concern or corrected.",
)
@click.pass_context
def check(
    ctx: click.Context, sources: tuple[str, ...], as_json: bool, watch_name: str | None
) -> None:
    """Check a reference list (FILE.bib, .ris, .nbib, a file of PMIDs, - for standard
    input, or PMIDs) for retracted, corrected and concerning articles.

    Each reference is found by its PMID, else its DOI, else its title and year.

    \b
    Exit status: 0 nothing retracted or under an expression of concern and every
    reference found (corrections and updates are listed, they do not fail the check);
    4 a reference is retracted or under an expression of concern; 5 some references
    were not found (and none flagged); 1 and 2 errors, as every command.

    \b
    Examples:
      medsearch check manuscript.bib
      medsearch check refs.ris --json
      medsearch check 31541003 12345678
      medsearch check manuscript.bib --watch my-paper
    """
    from medsearch.retrieval.check import check as run_check
    from medsearch.retrieval.searcher import open_searcher

    paths = paths_of(ctx)
    if watch_name is not None:
        _free(paths, watch_name)
    references = _references(sources)
    if not references:
        raise UsageError("the reference list is empty")
    saved: Watch | None = None
    with open_searcher(paths) as searcher:
        checked = run_check(references, searcher.store, searcher.lexical)
        if watch_name is not None:
            saved = _watch(paths, watch_name, checked, sources, searcher.store)
    status = exit_status(checked)
    if as_json:
        out: dict[str, object] = {
            "references": [c.to_dict() for c in checked],
            "counts": counts(checked),
            "exit_status": status,
        }
        if saved is not None:
            out["watch"] = saved.to_dict()
        emit_json(out)
    else:
        _print(checked)
        if saved is not None:
            from medsearch.commands.render import console

            console.print(
                f"watching {saved.query} as {saved.name}: `medsearch watch run` (and"
                " `update`) reports those newly retracted, under an expression of concern"
                " or corrected"
            )
    ctx.exit(status)


def _free(paths: Paths, name: str) -> None:
    """Refuse a taken or malformed watch name before the check runs, not after."""
    from medsearch.errors import NotFoundError
    from medsearch.watches.book import WatchBook

    check_name(name)
    if not paths.watches_file.exists():
        return
    with WatchBook(paths.watches_file) as book:
        try:
            book.get(name)
        except NotFoundError:
            return
    raise UsageError(
        f"a watch called {name!r} exists; `medsearch watch rm {name}` first, or choose another name"
    )


def _watch(
    paths: Paths, name: str, checked: list[Checked], sources: tuple[str, ...], store: Store
) -> Watch:
    """Save the resolved references as a reference-list watch."""
    from medsearch.watches.book import WatchBook
    from medsearch.watches.references import make_reference_watch

    pmids = [c.pmid for c in checked if c.pmid is not None]
    if not pmids:
        raise UsageError(f"nothing to watch as {name!r}: no reference was found in the corpus")
    source = ", ".join("standard input" if s == "-" else Path(s).name for s in sources)
    if len(source) > 80:
        source = source[:77] + "..."
    made, known = make_reference_watch(name, pmids, source, store)
    with WatchBook(paths.ensure().watches_file) as book:
        book.add_references(made, known)
        return book.get(name)


def exit_status(checked: list[Checked]) -> int:
    if any(c.alarming for c in checked):
        return FLAGGED
    if any(c.pmid is None for c in checked):
        return UNRESOLVED
    return 0


def counts(checked: list[Checked]) -> dict[str, int]:
    out = {"references": len(checked), "resolved": sum(c.pmid is not None for c in checked)}
    for how in ("pmid", "doi", "title"):
        out[f"by_{how}"] = sum(c.resolved_by == how for c in checked)
    out["unresolved"] = out["references"] - out["resolved"]
    from medsearch.notice_links import STATUSES

    for status in STATUSES:
        out[status.replace(" ", "_")] = sum(c.notice == status for c in checked)
    return out


def _references(sources: tuple[str, ...]) -> list[Reference]:
    from medsearch.references import Reference, read_file, read_stream

    out: list[Reference] = []
    for source in sources:
        if source == "-":
            out += read_stream(sys.stdin.buffer, "-")
            continue
        path = Path(source)
        if path.is_file():
            try:
                out += read_file(path)
            except OSError as exc:
                raise UsageError(f"cannot read {source}: {exc}") from exc
        elif (pmid := pmid_from(source)) is not None:
            out.append(Reference(f"PMID {pmid}", pmid=pmid))
        else:
            raise UsageError(f"{source!r} is neither a file nor a PMID")
    return out


def _print(checked: list[Checked]) -> None:
    from rich.text import Text

    from medsearch.commands.render import console, notice_text
    from medsearch.safe_text import terminal_text

    got = counts(checked)
    console.print(
        f"{got['references']} references: {got['resolved']} found"
        f" ({got['by_pmid']} by PMID, {got['by_doi']} by DOI, {got['by_title']} by title),"
        f" {got['unresolved']} not found"
    )
    flagged = [c for c in checked if c.notices]
    for item in flagged:
        line = Text(f"{terminal_text(item.reference.label)}  PMID {item.pmid}  ")
        line.append_text(notice_text(item.notices))
        console.print(line, soft_wrap=True)
        console.print(Text(f"    {terminal_text(item.title or '')}", style="dim"), soft_wrap=True)
    if not flagged:
        console.print("no reference is retracted, corrected or under an expression of concern")
    for item in checked:
        if item.pmid is None:
            ref = item.reference
            what = ref.title or ref.doi or (f"PMID {ref.pmid}" if ref.pmid else "")
            console.print(
                Text("not found: ", style="yellow") + Text(terminal_text(f"{ref.label}  {what}")),
                soft_wrap=True,
            )
