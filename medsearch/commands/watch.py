"""``medsearch watch``: saved searches that report the articles each update brings."""

from __future__ import annotations

from datetime import date

import click

from medsearch.commands.common import emit_json, filter_options, make_filters, paths_of
from medsearch.errors import BusyError, UsageError
from medsearch.paths import Paths
from medsearch.safe_text import terminal_text
from medsearch.watches.model import REFERENCES


@click.group()
def watch() -> None:
    """Saved searches ("watches"): the new articles each update brings for a query.

    \b
    A set query (operators, field tags, "phrases", truncation*) reports the articles
    that entered its set; plain words report new articles scoring at least as well as
    the watch's 50th hit did when it was made (its threshold, shown by `watch list`).

    \b
    A reference list (`medsearch check FILE --watch NAME`) reports its references
    that become retracted, under an expression of concern or corrected.

    \b
    Examples:
      medsearch watch add statins-hf 'statin* AND "heart failure"[ti]'
      medsearch watch add sglt2 'SGLT2 inhibitors kidney outcomes' --year 2020:
      medsearch watch run
      medsearch watch show statins-hf --new
    """


@watch.command("add")
@click.argument("name")
@click.argument("query")
@click.option(
    "--mode",
    type=click.Choice(["lexical", "dense", "hybrid"]),
    default=None,
    help="The mode `watch show --search` and the TUI search it with (new hits are found"
    " lexically).",
)
@filter_options
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="Plain-word watches: the BM25 score a new article must reach (default: the"
    " score of the 50th hit now).",
)
@click.option(
    "--replaced", is_flag=True, help="Also report revised records (replacements) that match."
)
@click.option("--json", "as_json", is_flag=True, help="Print the watch as JSON.")
@click.pass_context
def add(
    ctx: click.Context,
    name: str,
    query: str,
    mode: str | None,
    year: str | None,
    journals: tuple[str, ...],
    types: tuple[str, ...],
    exclude_retracted: bool,
    threshold: float | None,
    replaced: bool,
    as_json: bool,
) -> None:
    """Save QUERY as the watch NAME; what the corpus holds now is never new to it."""
    from medsearch.index.lexical.shards import open_lexical
    from medsearch.store import Store
    from medsearch.watches.book import WatchBook
    from medsearch.watches.finder import make_watch

    paths = _corpus(ctx)
    filters = make_filters(year, journals, types, exclude_retracted)
    with (
        Store(paths.store, readonly=True) as store,
        open_lexical(paths.lexical_index, create=False) as lexical,
    ):
        made = make_watch(
            name,
            query,
            store=store,
            lexical=lexical,
            mode=mode,
            filters=filters,
            threshold=threshold,
            replaced=replaced,
        )
    with WatchBook(paths.watches_file) as book:
        book.add(made)
        saved = book.get(name)
    if as_json:
        emit_json(saved.to_dict())
        return
    click.echo(f"watch {saved.name}: {_describe(saved.kind, saved.threshold)}")


@watch.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the watches as JSON.")
@click.pass_context
def list_(ctx: click.Context, as_json: bool) -> None:
    """The watches, with unread and total hits."""
    from medsearch.watches.book import WatchBook

    book = WatchBook.reading(paths_of(ctx).watches_file)  # writes nothing: a read-only home lists
    watches = []
    if book is not None:
        with book:
            watches = book.all()
    if as_json:
        emit_json({"watches": [w.to_dict() for w in watches]})
        return
    if not watches:
        click.echo("no watches yet: `medsearch watch add NAME 'query'`")
        return
    for w in watches:
        ran = w.last_run or "never run"
        click.echo(
            f"{w.name}\t{w.unread} unread / {w.total}\t{_describe(w.kind, w.threshold)}"
            f"\tlast run {ran}\t{terminal_text(w.query)}"
        )


@watch.command("show")
@click.argument("name")
@click.option("--new", "unread", is_flag=True, help="Only hits not read yet.")
@click.option("--since", default=None, help="Only hits found on or after DATE (YYYY-MM-DD).")
@click.option("--mark-read", is_flag=True, help="Mark the hits shown as read.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with a hits list.")
@click.pass_context
def show(
    ctx: click.Context, name: str, unread: bool, since: str | None, mark_read: bool, as_json: bool
) -> None:
    """The hits of watch NAME, newest first."""
    from medsearch.store import Store
    from medsearch.watches.book import WatchBook
    from medsearch.watches.runner import flag

    if since is not None:
        try:
            since = date.fromisoformat(since).isoformat()
        except ValueError:
            raise UsageError(f"--since expects a date YYYY-MM-DD, not {since!r}") from None
    paths = paths_of(ctx).ensure()
    with WatchBook(paths.watches_file) as book:
        saved = book.get(name)
        hits = book.hits(name, unread=unread, since=since)
        if mark_read:
            book.mark_read(name, [h.pmid for h in hits])
    articles = {}
    if paths.store.exists() and hits:
        with Store(paths.store, readonly=True) as store:
            articles = store.get_many([h.pmid for h in hits])
    rows = []
    for rank, hit in enumerate(hits, 1):
        article = articles.get(hit.pmid)
        rows.append(
            {
                "rank": rank,
                **hit.to_dict(),
                "title": article.title if article else "",
                "journal": article.journal if article else "",
                "year": article.year if article else None,
            }
        )
    if as_json:
        emit_json({"watch": saved.to_dict(), "total": len(rows), "hits": rows})
        return
    if not rows:
        click.echo(f"{name}: no {'unread ' if unread else ''}hits")
        return
    for row in rows:
        mark = " " if row["read"] else "*"
        revised = " [revised]" if row["change"] == "replaced" else ""
        if saved.kind == REFERENCES:
            revised = f" {flag(row['change'], row['notice'])}"
        where = ", ".join(str(x) for x in (row["journal"], row["year"]) if x)
        click.echo(
            f"{mark} {row['found'][:10]}  PMID {row['pmid']}{revised}  {row['title']}"
            + (f" ({where})" if where else "")
        )


@watch.command("rm")
@click.argument("name")
@click.pass_context
def rm(ctx: click.Context, name: str) -> None:
    """Delete watch NAME, its hits and its feed."""
    from medsearch.watches.book import WatchBook
    from medsearch.watches.feed import feed_path

    paths = paths_of(ctx).ensure()
    with WatchBook(paths.watches_file) as book:
        book.remove(name)
    feed_path(paths.feeds, name).unlink(missing_ok=True)
    click.echo(f"removed watch {name}")


@watch.command("threshold")
@click.argument("name")
@click.argument("score", type=float)
@click.option("--json", "as_json", is_flag=True, help="Print the watch as JSON.")
@click.pass_context
def threshold(ctx: click.Context, name: str, score: float, as_json: bool) -> None:
    """Set the BM25 score new articles must reach for the plain-word watch NAME (`watch
    list` shows it; new articles scoring less are not reported)."""
    from medsearch.watches.book import WatchBook

    with WatchBook(paths_of(ctx).ensure().watches_file) as book:
        saved = book.set_threshold(name, score)
    if as_json:
        emit_json(saved.to_dict())
        return
    click.echo(f"watch {saved.name}: {_describe(saved.kind, saved.threshold)}")


@watch.command("run")
@click.argument("names", nargs=-1)
@click.option(
    "--exec",
    "exec_cmd",
    default=None,
    metavar="CMD",
    help="Pipe each watch's digest with news to CMD (run by the shell).",
)
@click.option("--quiet", is_flag=True, help="Print only watches with news (nothing when none).")
@click.option("--json", "as_json", is_flag=True, help="Print the digest as JSON.")
@click.pass_context
def run(
    ctx: click.Context, names: tuple[str, ...], exec_cmd: str | None, quiet: bool, as_json: bool
) -> None:
    """Run the watches (all, or NAMES) against the update files applied since each last
    ran; `medsearch update` runs them itself."""
    import dataclasses

    from medsearch.watches.runner import digest_text, pipe_digests, run_watches

    paths = paths_of(ctx).ensure()
    _repair(paths, quiet=quiet or as_json)
    report = run_watches(paths, names=names)
    if exec_cmd:
        report = dataclasses.replace(report, exec_failures=pipe_digests(report, exec_cmd))
    if as_json:
        emit_json(report.to_dict())
    else:
        for note in report.notes:
            click.echo(f"note: {note}")
        text = digest_text(report, only_new=quiet)
        if text:
            click.echo(text, nl=False)
        elif not quiet and not report.notes:
            click.echo("no watches yet: `medsearch watch add NAME 'query'`")
    for problem in report.exec_failures:
        click.echo(f"medsearch: warning: {problem}", err=True)


def _repair(paths: Paths, *, quiet: bool) -> None:
    """Mend the lexical index when a stopped ingest or update left it behind the store,
    as the writers do; when another writer is running, the watches wait for it (their
    note says so)."""
    from medsearch.commands.progress import cli_progress
    from medsearch.index.lexical.catch_up import catch_up
    from medsearch.lock import write_lock

    try:
        with write_lock(paths, "watch run"), cli_progress(enabled=not quiet) as progress:
            catch_up(paths, progress)
    except BusyError:
        pass


def _corpus(ctx: click.Context) -> Paths:
    paths = paths_of(ctx).ensure()
    if not paths.store.exists():
        from medsearch.errors import StoreError

        raise StoreError(f"no corpus in {paths.home} yet; run `medsearch ingest` first")
    return paths


def _describe(kind: str, threshold: float | None) -> str:
    if kind == REFERENCES:
        return "reference list (new = retracted, expression of concern or corrected)"
    if kind == "set":
        return "set query (new = articles entering its set)"
    return f"ranked (new = score >= {threshold or 0:.3f})"
