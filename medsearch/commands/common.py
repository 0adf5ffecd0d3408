"""Helpers every command shares: the data home, JSON output, filters, failing cleanly."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

from medsearch.errors import MedsearchError, UsageError
from medsearch.paths import Paths
from medsearch.records import MAX_PMID, Filters, pmid_from

INTERNAL_ERROR = 70
"""Exit status of a failure that is a bug in medsearch (sysexits' EX_SOFTWARE)."""


def fail(message: str, code: int = 1) -> NoReturn:
    click.echo(f"medsearch: error: {message}", err=True)
    sys.exit(code)


def failure(exc: BaseException) -> tuple[str, int]:
    """The one line and the exit status that ``exc`` ends a command with: the CLI prints
    them, and ``ingest --json`` puts them in its summary too."""
    if isinstance(exc, MedsearchError):
        return str(exc), exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted; work finished so far is kept; run the command again to resume", 130
    return (
        f"internal error ({type(exc).__name__}: {exc}); please report it, and set"
        " MEDSEARCH_DEBUG=1 to see the traceback",
        INTERNAL_ERROR,
    )


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, ensure_ascii=False, indent=2))


def paths_of(ctx: click.Context) -> Paths:
    obj = ctx.find_root().obj
    if not isinstance(obj, Paths):  # a command invoked on its own (tests, scripts)
        obj = Paths.resolve(None)
        ctx.find_root().obj = obj
    return obj


def parse_years(value: str | None) -> tuple[int | None, int | None]:
    """``2015:2020``, ``2015:``, ``:2020`` or ``2019`` -> (from, to)."""
    if not value:
        return None, None
    text = value.strip()
    try:
        if ":" in text:
            lo, hi = text.split(":", 1)
            a = int(lo) if lo.strip() else None
            b = int(hi) if hi.strip() else None
        else:
            a = b = int(text)
    except ValueError:
        raise UsageError(
            f"--year expects YEAR or FROM:TO (e.g. 2015:2020), not {value!r}"
        ) from None
    if a is not None and b is not None and a > b:
        raise UsageError(f"--year range {value!r} is empty: {a} is after {b}")
    return a, b


def make_filters(
    year: str | None,
    journals: tuple[str, ...] = (),
    types: tuple[str, ...] = (),
    exclude_retracted: bool = False,
) -> Filters:
    lo, hi = parse_years(year)
    return Filters(
        year_from=lo,
        year_to=hi,
        journals=journals,
        publication_types=types,
        exclude_retracted=exclude_retracted,
    )


def filter_options(fn: Any) -> Any:
    """--year, --journal, --type, --exclude-retracted: the same filters on every
    retrieval command."""
    fn = click.option(
        "--exclude-retracted",
        "exclude_retracted",
        is_flag=True,
        help="Leave out retracted articles (counts and sets too).",
    )(fn)
    fn = click.option(
        "--type",
        "types",
        multiple=True,
        help="Publication type, e.g. 'Review', 'Randomized Controlled Trial' (repeatable).",
    )(fn)
    fn = click.option(
        "--journal",
        "journals",
        multiple=True,
        help="Journal: title, MedlineTA, ISO abbreviation or ISSN (repeatable).",
    )(fn)
    fn = click.option("--year", default=None, help="Publication year or range FROM:TO.")(fn)
    return fn


def model_options(fn: Any) -> Any:
    """--models and --device: the same on every command that searches with vectors."""
    fn = click.option(
        "--device", default="auto", show_default=True, help="auto, cpu, cuda[:N] or mps."
    )(fn)
    fn = click.option(
        "--models", "profile", default=None, help="Model profile (must match the index)."
    )(fn)
    return fn


def rerank_options(fn: Any) -> Any:
    """--rerank CHOICE and --no-rerank: the same on every command that ranks."""
    fn = click.option(
        "--no-rerank", "no_rerank", is_flag=True, help="First-stage order only (--rerank none)."
    )(fn)
    fn = click.option(
        "--rerank",
        "rerank",
        type=click.Choice(["auto", "delta", "cross", "none"]),
        default=None,
        help="Reranker: auto (CPU: Delta over the top 500, then the cross-encoder on the"
        " head; GPU: the cross-encoder), delta, cross or none. Default: [search] rerank.",
    )(fn)
    return fn


def rerank_choice(rerank: str | None, no_rerank: bool) -> str | None:
    """The reranker asked for on the command line (None: the configured default)."""
    if no_rerank and rerank not in (None, "none"):
        raise UsageError(f"--no-rerank and --rerank {rerank} contradict each other")
    return "none" if no_rerank else rerank


def parse_pmid(value: str) -> int:
    """A PMID from the command line by the rule ingest stores them by, or a usage error
    that says what a PMID is."""
    pmid = pmid_from(value)
    if pmid is None:
        raise UsageError(f"a PMID is a positive whole number up to {MAX_PMID}, not {value!r}")
    return pmid
