"""Human-readable output for the CLI (rich). JSON output never goes through here."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from medsearch.records import Article, Hit, Notice, SentenceMatch
from medsearch.retrieval.results import BEYOND, beyond

if TYPE_CHECKING:
    from ingest.summary import IngestSummary


PIPED_WIDTH = 10_000
"""The width output is laid out for when standard output is not a terminal: wide enough
that no line of ours wraps, so a pipe (``grep``, ``cut``, a file) reads one line per
line printed, not rich's 80 columns with ``score`` and its value split apart."""


class OutputConsole(Console):
    """Standard output's console. Rich's own answer to a closed pipe is exit status 1;
    the error goes on to the CLI instead, which ends every command the same quiet way
    (:func:`medsearch.cli.pipe_closed_is_quiet`). Piped, it does not wrap
    (:data:`PIPED_WIDTH`): whether it is piped is asked at each print, since the CLI's
    standard output may be swapped after import (tests, a redirected ``sys.stdout``)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or self._width is not None:
            return size
        return ConsoleDimensions(PIPED_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        self._width, self._height = new_size

    def print(self, *objects: Any, soft_wrap: bool | None = None, **options: Any) -> None:
        if soft_wrap is None and not self.is_terminal:
            soft_wrap = True  # no wrapping, and no padding to the wide width
        super().print(*objects, soft_wrap=soft_wrap, **options)


console = OutputConsole()


def highlighted(snippet: str) -> Text:
    """A snippet with the engine's highlight spans drawn bold, everything else literal."""
    from medsearch.index.lexical.snippets import snippet_spans

    plain, spans = snippet_spans(snippet)
    text = Text(plain)
    for start, end in spans:
        text.stylize("bold yellow", start, end)
    return text


def print_summary(summary: IngestSummary) -> None:
    table = Table(show_header=False, box=None, padding=(0, 2))
    if summary.files == 0 and not summary.failures:
        for note in summary.notes:
            console.print(f"[dim]note:[/] {escape(note)}", soft_wrap=True)
        if summary.encoded:
            n = summary.encoded
            console.print(f"encoded {n:,} new or changed article{'s' * (n != 1)}")
        console.print(f"time {run_time(summary)}", soft_wrap=True)
        return
    table.add_row(
        "files",
        f"{summary.files:,} ({summary.ingested:,} ingested, "
        f"{summary.skipped:,} already done, {len(summary.failures):,} failed)",
    )
    if summary.ignored:
        from ingest.inputs import describe

        table.add_row("ignored", escape(describe(summary.ignored)))
    table.add_row(
        "articles",
        f"{summary.articles:,} read: {summary.added:,} added, "
        f"{summary.replaced:,} replaced, {summary.deleted:,} deleted",
    )
    if summary.books:
        table.add_row("books", f"{summary.books:,} book records stored")
    if summary.encoded:
        table.add_row("encoded", f"{summary.encoded:,} new or changed vectors")
    table.add_row("time", run_time(summary))
    console.print(table)
    for note in summary.notes:
        console.print(f"[dim]note:[/] {escape(note)}", soft_wrap=True)
    for warning in summary.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    for name, error in summary.failures:
        message = error if name in error else f"{name}: {error}"
        console.print(f"[red]failed:[/] {escape(message)}", soft_wrap=True)


STAGES = {
    "prepare": "prepare",
    "download": "download",
    "ingest": "parse, store and index",
    "citations": "citation graph",
    "vectors": "vectors",
}
"""Each stage's name in the summary (``--json`` has the keys)."""


def run_time(summary: IngestSummary) -> str:
    """The whole run's time, then each stage's: the lexical ingest's articles/s alone
    would hide hours of encoding. A stage that took no visible time is left out."""
    parts = []
    for name, seconds in summary.stages.items():
        if seconds < 0.05:
            continue
        part = f"{STAGES.get(name, name)} {duration(seconds)}"
        if name == "ingest" and summary.articles:
            part += f" ({summary.articles / seconds:,.0f} articles/s)"
        elif name == "download" and "ingest" in summary.stages:
            part += " (beside the ingest)"
        parts.append(part)
    total = f"{duration(summary.seconds)} in all"
    return f"{total}: {', '.join(parts)}" if parts else total


def duration(seconds: float) -> str:
    """``7.0 s``, ``7 min 32 s``, ``2 h 05 min``: hours of encoding read at a glance."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def print_hits(
    hits: Sequence[Hit],
    *,
    header: str | None = None,
    score: Callable[[Hit], str | None] | None = None,
) -> None:
    """The hits as text. ``score``: what a hit's score means in this list (None: left
    out, as where the score is a rank or a count shown already); default ``score N``."""
    if header:
        console.print(header)
    if not hits:
        console.print("[dim]no results[/]")
        return
    for hit in hits:
        line = Text()
        line.append(f"{hit.rank:>3}. ", style="bold")
        line.append(f"{hit.year or '    '}  ", style="cyan")
        outside = hit.in_corpus is False
        line.append(
            hit.title or ("(not in this corpus)" if outside else "(no title)"), style="bold"
        )
        console.print(line)
        if hit.notices:
            console.print(Text("     ") + notice_text(hit.notices))
        if hit.notice_for:
            from medsearch.notices import describe_for

            console.print(Text(f"     {describe_for(hit.notice_for)}", style="bold"))
        meta = Text("     ")
        if hit.authors:
            meta.append(hit.authors[0] + (" et al." if len(hit.authors) > 1 else "") + " · ")
        meta.append(hit.journal or "", style="italic")
        meta.append(f" · PMID {hit.pmid}", style="green")
        if hit.sources:
            meta.append(f" · {'+'.join(hit.sources)}", style="dim")
        said = f"score {hit.score:.3f}" if score is None else score(hit)
        if said:
            meta.append(f" · {said}", style="dim")
        if hit.cited_by is not None:
            meta.append(f" · cited by {hit.cited_by} in this corpus", style="magenta")
        if beyond(hit):
            meta.append(f" · {BEYOND}", style="yellow")
        console.print(meta)
        if hit.snippet:
            snippet = Text("     ")
            snippet.append_text(highlighted(hit.snippet))
            console.print(snippet)
        if hit.sentence is not None:
            print_in_context(hit.sentence)
        for key, value in text_fields(hit):
            console.print(Text(f"     {key}: ", style="dim") + Text(value))
        console.print()


NOTICE_STYLES = {"retracted": "bold white on red", "expression of concern": "bold yellow"}
"""How a notice reads in a terminal: a retraction must not be missed; an erratum is a note."""


def notice_text(found: Sequence[Notice]) -> Text:
    """``RETRACTED (retraction PMID 32167152)``, styled by its strongest status."""
    from medsearch.notices import describe

    return Text(describe(tuple(found)), style=NOTICE_STYLES.get(found[0].status, "yellow"))


def print_in_context(sentence: SentenceMatch) -> None:
    """A sentence hit between its neighbours, dimmed, as it reads in the abstract: a
    sentence alone often cannot be judged ("This was not the case in mice."). The hit
    is marked, not only bold, so it stands out in a pipe too."""
    if sentence.before:
        console.print(Text(f"     {sentence.before}", style="dim"))
    console.print(Text("   » ", style="bold") + Text(sentence.text, style="bold"))
    if sentence.after:
        console.print(Text(f"     {sentence.after}", style="dim"))


def text_fields(hit: Hit) -> list[tuple[str, str]]:
    """A hit's own text fields, named as in ``--json``, each on a line of its own (the
    sentence itself is shown between its neighbours)."""
    named = (
        ("label", hit.sentence.label if hit.sentence else None),
        ("doi", hit.doi),
        ("citation", hit.citation),
        ("source", hit.reference_source),
        ("evidence", hit.evidence.text if hit.evidence else None),
        ("evidence_label", hit.evidence.label if hit.evidence else None),
    )
    return [(key, value) for key, value in named if value]


def print_article(article: Article) -> None:
    from medsearch import notices as nt

    console.print(Text(article.title or "(no title)", style="bold"))
    if found := nt.notices(article):
        console.print(notice_text(found))
    if about := nt.notice_for(article):
        console.print(Text(nt.describe_for(about), style="bold"))
    authors = ", ".join(a.display for a in article.authors)
    if authors:
        console.print(Text(authors))
    console.print(Text(article.journal_citation, style="italic"))
    ids = [f"PMID {article.pmid}"]
    if article.doi:
        ids.append(f"doi:{article.doi}")
    if article.pmcid:
        ids.append(article.pmcid)
    console.print(Text(" · ".join(ids), style="green"))
    console.print()
    for section in article.abstract:
        if section.label:
            console.print(Text(section.label, style="bold cyan"))
        console.print(Text(section.text))
        console.print()
    if article.mesh:
        terms = [(("*" if m.is_major else "") + m.descriptor) for m in article.mesh]
        console.print(Text("MeSH: ", style="bold") + Text("; ".join(terms)))
    if article.publication_types:
        console.print(Text("Type: ", style="bold") + Text("; ".join(article.publication_types)))
    if article.keywords:
        console.print(Text("Keywords: ", style="bold") + Text("; ".join(article.keywords)))


def print_schema(tables: list[dict[str, Any]]) -> None:
    """``medsearch sql --schema``: each public table, its columns and indexes."""
    from medsearch.store.sql_schema import NOTE

    for table in tables:
        console.print(f"[bold]{table['name']}[/]  {escape(table['description'])}")
        grid = Table(show_header=False, box=None, padding=(0, 2))
        for column in table["columns"]:
            grid.add_row(f"  {column['name']}", column["type"], escape(column["description"]))
        console.print(grid)
        indexes = [f"{i['name']} ({', '.join(i['columns'])})" for i in table["indexes"]]
        keys = f"primary key ({', '.join(table['primary_key'])})"
        console.print(f"  [dim]{escape('; '.join([keys, *indexes]))}[/]\n")
    console.print(escape(NOTE), soft_wrap=True)
