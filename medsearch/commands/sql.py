"""``medsearch sql``: read-only SQL over the store, streamed as CSV or JSON.

Rows are written as SQLite produces them (the cursor is read a page at a time), so an
answer of 40M rows takes as little memory as one of ten. The formats:

- CSV (the default, ``--csv``): a header line, then one line per row (RFC 4180 quoting,
  ``\\r\\n`` line ends, as Python's ``csv`` writes; NULL is an empty field);
- ``--json``: one JSON array of objects, written one object per line, so it streams out
  and ``json.load`` reads it back whole (the layout of ``sqlite-utils query``);
- ``--nl``: newline-delimited JSON, one object per line and nothing else, for answers
  too big to load at once (``jq``, ``pandas.read_json(lines=True)``, DuckDB).

Values are what SQLite returns: the JSON-array columns (``language``,
``publication_types``, ``mesh_major``) stay strings, because an alias or an expression
would otherwise change what a column is; blobs, which only ``records.data`` holds, come
out as sqlite-utils writes them: ``{"$base64": true, "encoded": ...}`` in JSON, base64
text in CSV. Two columns with one name (``a.pmid, m.pmid``) become ``pmid`` and
``pmid_2`` in JSON objects, as in sqlite-utils.
"""

from __future__ import annotations

import base64
import csv
import io
import os
import re
import select
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.errors import StoreError, UsageError

if TYPE_CHECKING:
    from medsearch.store.sql_bounds import Watch

FETCH = 1000  # rows per fetch from SQLite: large enough to amortise, small enough to stream
CHECKS = re.compile(r"\b(?:pragma_)?(?:integrity|quick)_check\b", re.IGNORECASE)
GRACE = 2.0
"""Seconds a query stopped by Ctrl-C or ``--timeout`` has to end before :func:`backstop`
ends the process: the progress handler stops one within milliseconds of SQLite's work."""


@click.command()
@click.argument("query", required=False)
@click.option("--csv", "fmt", flag_value="csv", default=True, help="CSV with a header (default).")
@click.option("--json", "fmt", flag_value="json", help="A JSON array of objects, one per line.")
@click.option("--nl", "fmt", flag_value="nl", help="Newline-delimited JSON objects.")
@click.option(
    "--schema",
    is_flag=True,
    help="Describe the tables and columns to query (with --json: as JSON).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Stop the query after this many seconds (exit status 124).",
)
@click.pass_context
def sql(
    ctx: click.Context, query: str | None, fmt: str, schema: bool, timeout: float | None
) -> None:
    """Run a read-only SQL query on the article store; rows stream to stdout.

    \b
    The table to query is `articles` (one row per article): pmid, title, year,
    journal, journal_iso, first_author, last_author, doi, pmcid, language,
    publication_types, mesh_major (the last three are JSON arrays). See
    `medsearch sql --schema`. For example:

    \b
      medsearch sql "SELECT year, COUNT(*) AS n FROM articles GROUP BY year"
      medsearch sql --json "SELECT pmid, title FROM articles
        JOIN articles_mesh_major USING (pmid) WHERE heading = 'Metformin'"

    The citation graph: `cited_by(pmid)` counts an article's citing articles in this
    corpus; `article_refs` holds each citing article's edges, listed by
    `json_each(cited_pmids(edges))` (docs/citations.md).

    A query that would change anything is refused before it runs. Works while an
    ingest is writing (it reads the last committed state). Ctrl-C stops a query at
    once, also one that has not produced a row yet (exit status 130).
    """
    paths = paths_of(ctx)
    if schema:
        if query:
            raise UsageError("--schema takes no query")
        describe(paths.store, as_json=fmt == "json")
        return
    if not query or not query.strip():
        raise UsageError('give a query, e.g. medsearch sql "SELECT COUNT(*) FROM articles"')
    from medsearch.store.sql_bounds import Watch

    watch = Watch(timeout)
    with watch.catching_ctrl_c(), backstop(watch):  # from before the store opens
        run(paths.store, query, fmt, watch, paths.citations)


@contextmanager
def backstop(watch: Watch) -> Iterator[None]:
    """Exit the process when a query stopped by Ctrl-C or ``--timeout`` has not ended
    :data:`GRACE` seconds later.

    SQLite asks the progress handler between steps, but one step can run long: one call
    of ``printf('%.*c', 2e9, 'x')`` loops for ~20 s (in bounded memory), ``instr()`` of
    two strings of 100 MB for hours. Ctrl-C reaches this thread at once, through the
    signal wakeup fd, whatever the main thread is stuck in; a query that only reads has
    nothing to clean up, so leaving it unfinished loses nothing.
    """
    if os.name != "posix" or threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; the progress handler still stops it
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    previous = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    done = threading.Event()
    guard = threading.Thread(target=stop_or_exit, args=(watch, wake_r, done), daemon=True)
    guard.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        os.write(wake_w, b"\0")  # no signal's number: it only wakes the guard to leave
        guard.join()
        os.close(wake_r)
        os.close(wake_w)


def stop_or_exit(watch: Watch, wake: int, done: threading.Event) -> None:
    """The backstop's thread: wait for Ctrl-C or the deadline, then for the query to end."""
    while True:
        left = None if watch.deadline is None else max(0.0, watch.deadline - time.monotonic())
        woken, _, _ = select.select([wake], [], [], left)
        if done.is_set():
            return
        if woken:
            if signal.SIGINT not in os.read(wake, 512):
                continue
            watch.interrupted = True
        elif not watch():
            continue
        if done.wait(GRACE):
            return
        error = watch.stopped()
        os.write(2, f"medsearch: error: {error}\n".encode())  # the line fail() writes
        os._exit(error.exit_code)


def run(store: Path, query: str, fmt: str, watch: Watch, citations: Path | None = None) -> None:
    """Answer ``query`` from ``store`` within the bounds of :mod:`.sql_bounds`;
    ``citations``: the cited-by arrays behind the ``cited_by()`` function."""
    from medsearch.store.backfill import problem
    from medsearch.store.damage import BEYOND_CHECK, DamagedStoreError
    from medsearch.store.readonly import connect, execute
    from medsearch.store.sql_bounds import STEPS, bound, query_error

    conn = connect(store)
    try:
        bound(conn)
        if citations is not None:
            from medsearch.index.citations import sql_functions

            sql_functions(conn, citations)
        conn.set_progress_handler(watch, STEPS)
        try:
            why = problem(conn)
        except (sqlite3.Error, MemoryError) as exc:
            raise query_error(exc, watch, store) from exc
        if why is not None:
            raise StoreError(why)
        try:
            cursor = execute(conn, query, watch=watch, store=store)
            names = [d[0] for d in cursor.description or ()]
            write(names, rows_of(cursor, watch, store), fmt)  # `| head`: ends quietly, cli.py
        except DamagedStoreError as exc:
            if CHECKS.search(query):  # the check the line suggests is what failed
                raise exc.hinting(BEYOND_CHECK) from exc
            raise
    finally:
        conn.close()


def rows_of(cursor: sqlite3.Cursor, watch: Watch, store: Path) -> Iterator[tuple[Any, ...]]:
    """The cursor's rows, a page at a time; an error SQLite meets while running (after
    the first rows, possibly) is one line like one met while compiling, and the watch
    is looked at between pages too (Python writing them is not SQLite taking steps)."""
    from medsearch.store.sql_bounds import query_error

    while True:
        try:
            page = cursor.fetchmany(FETCH)
        except (sqlite3.Error, MemoryError) as exc:
            raise query_error(exc, watch, store) from exc
        if not page:
            return
        watch.check()
        yield from page


def write(names: list[str], rows: Iterator[tuple[Any, ...]], fmt: str) -> None:
    """Stream ``rows`` to stdout as ``fmt`` (csv, json or nl), UTF-8 whatever the locale."""
    sys.stdout.flush()
    out = io.TextIOWrapper(sys.stdout.buffer, encoding="utf-8", newline="")
    try:
        if fmt == "csv":
            write_csv(out, names, rows)
        else:
            write_json(out, names, rows, array=fmt == "json")
        out.flush()
    finally:
        out.detach()  # stdout stays open for whoever writes after us


def write_csv(out: TextIO, names: list[str], rows: Iterator[tuple[Any, ...]]) -> None:
    writer = csv.writer(out)
    writer.writerow(names)
    for row in rows:
        writer.writerow([base64.b64encode(v).decode() if isinstance(v, bytes) else v for v in row])


def binary(value: Any) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {"$base64": True, "encoded": base64.b64encode(value).decode()}
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def unique(names: list[str]) -> list[str]:
    """Column names as object keys: a repeated name gets ``_2``, ``_3`` ... (sqlite-utils)."""
    seen: set[str] = set()
    out = []
    for name in names:
        key, n = name, 1
        while key in seen:
            n += 1
            key = f"{name}_{n}"
        seen.add(key)
        out.append(key)
    return out


def write_json(
    out: TextIO, names: list[str], rows: Iterator[tuple[Any, ...]], *, array: bool
) -> None:
    import orjson

    keys = unique(names)
    sep = "[\n" if array else ""
    for row in rows:
        out.write(sep)
        out.write(orjson.dumps(dict(zip(keys, row, strict=True)), default=binary).decode())
        sep = ",\n" if array else "\n"
    if array:
        out.write("[\n]\n" if sep == "[\n" else "\n]\n")
    elif sep == "\n":
        out.write("\n")


def describe(store: Path, *, as_json: bool) -> None:
    """The public tables as the store (or, before there is one, medsearch) defines them."""
    from medsearch.store.sql_schema import schema

    tables = schema(store)
    if as_json:
        emit_json({"tables": tables})
        return
    from medsearch.commands.render import print_schema

    print_schema(tables)
