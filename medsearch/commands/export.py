"""``medsearch export``: stored records as BibTeX, RIS, MEDLINE (nbib) or CSV.

``search --export`` writes through :func:`write_records` too, so a search's set and a
list of PMIDs become the same file.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from pathlib import Path

import click

from medsearch.commands.common import parse_pmid, paths_of
from medsearch.errors import NotFoundError, UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress, Progress
from medsearch.records import Article

READ_BATCH = 1_000
"""Records read from the store per batch while exporting (the progress bar's step)."""
PROGRESS_FROM = 2_000
"""From this many records an export shows a progress bar."""
_SEPARATORS = re.compile(r"[\s,]+")


def pmids_from_text(text: str) -> list[int]:
    """PMIDs separated by whitespace or commas (a column pasted, ``search --json | jq``)."""
    return [parse_pmid(value) for value in _SEPARATORS.split(text) if value]


def write_records(
    paths: Paths,
    pmids: Sequence[int],
    fmt: str,
    output: Path | None,
    progress: Progress | None = None,
) -> tuple[int, list[int]]:
    """Export the stored records of ``pmids`` in their order; (records written, PMIDs
    missing from the store). Nothing is written when none is stored.

    Records are read in batches of :data:`READ_BATCH`; the writers need the whole list
    at once (BibTeX keys are unique within one file), which callers bound (``search
    --export`` stops at its limit).
    """
    from medsearch.export import export as render
    from medsearch.store import Store

    progress = progress or NullProgress()
    found: dict[int, Article] = {}
    progress.start("export", "reading records", total=len(pmids))
    with Store(paths.store, readonly=True) as store:
        for start in range(0, len(pmids), READ_BATCH):
            batch = list(pmids[start : start + READ_BATCH])
            found.update(store.get_many(batch))
            progress.advance("export", len(batch))
    progress.finish("export")
    missing = [p for p in dict.fromkeys(pmids) if p not in found]
    if not found:
        return 0, missing
    articles = [found[p] for p in pmids if p in found]
    text = render(articles, fmt)  # type: ignore[arg-type]
    if output is None or str(output) == "-":
        click.echo(text, nl=False)
    else:
        replaced = write_output(output, text)
        click.echo(
            f"wrote {len(articles)} record(s) to {output}{replaced_note(replaced)}", err=True
        )
    return len(articles), missing


def write_output(output: Path, text: str) -> bool:
    """Write ``text`` to ``output`` whole or not at all (a file beside it, then renamed
    over it: a full disk leaves the earlier export as it was); True when it replaced a
    file. Every ``-o`` of an export (``export``, ``search --export``, ``refs``/``citedby``/
    ``snowball --export``, ``history --export``) writes through here and says so: people
    re-export to the same file as a search grows, so replacing is the expected act, and
    a refusal without ``--force`` would stop every re-run; the note keeps it from being
    silent."""
    import os
    import tempfile

    replaced = output.exists()
    try:
        handle, name = tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent or ".")
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(text)
            os.replace(name, output)
        except BaseException:
            Path(name).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from exc
    return replaced


def replaced_note(replaced: bool, what: str = "the file that was there") -> str:
    """The words every export's "wrote ..." line ends with when it replaced ``what``."""
    return f" (it replaced {what})" if replaced else ""


def missing_error(missing: Sequence[int], written: int) -> NotFoundError:
    """The one line naming PMIDs that were not exported (exit 1)."""
    names = ", ".join(map(str, missing))
    if written:
        return NotFoundError(f"not in the store, left out of the export: PMID {names}")
    return NotFoundError(f"not in the store: PMID {names}")


SERVED_EXPORT = 10_000
"""The most PMIDs an export asks a running service for (its limit); more are read here."""


def served_export(paths: Paths, pmids: Sequence[int], fmt: str, output: Path | None) -> bool:
    """Write the export a running service made; False (nothing written) when no service
    answers, or when some PMIDs are missing: the local path names them and exports the
    rest, as it always has."""
    from medsearch.serve.client import ask_text

    answer = ask_text(paths, "/export", [("ids", ",".join(map(str, pmids))), ("format", fmt)])
    if answer is None or answer[0] != 200:
        return False
    text = answer[1]
    if output is None or str(output) == "-":
        click.echo(text, nl=False)
    else:
        replaced = write_output(output, text)
        click.echo(f"wrote {len(pmids)} record(s) to {output}{replaced_note(replaced)}", err=True)
    return True


@click.command()
@click.argument("pmids", nargs=-1, required=True)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["bibtex", "ris", "nbib", "csv"]),
    default="bibtex",
    show_default=True,
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True, path_type=Path),
    default=None,
    help="Write to a file instead of standard output (- is standard output).",
)
@click.pass_context
def export(ctx: click.Context, pmids: tuple[str, ...], fmt: str, output: Path | None) -> None:
    """Export the stored records of PMIDs for a reference manager.

    PMIDs given as - are read from standard input (separated by spaces, newlines or
    commas). PMIDs not in the store are named on standard error and the command exits
    1; the others are still exported.
    """
    numbers: list[int] = []
    for value in pmids:
        if value == "-":
            numbers.extend(pmids_from_text(sys.stdin.read()))
        else:
            numbers.append(parse_pmid(value))
    if not numbers:
        raise UsageError("no PMIDs to export (standard input was empty)")
    if len(numbers) <= SERVED_EXPORT and served_export(paths_of(ctx), numbers, fmt, output):
        return
    written, missing = write_records(paths_of(ctx), numbers, fmt, output)
    if missing:
        raise missing_error(missing, written)
