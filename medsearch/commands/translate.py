"""``medsearch translate``: a strategy from another database's syntax, in PubMed's."""

from __future__ import annotations

from typing import TextIO

import click


@click.command()
@click.argument("source", type=click.File("r", encoding="utf-8"), default="-")
@click.option(
    "--from",
    "dialect",
    type=click.Choice(["ovid"]),
    required=True,
    help="The syntax SOURCE is written in (Ovid MEDLINE).",
)
def translate(source: TextIO, dialect: str) -> None:
    """Write an Ovid MEDLINE strategy (numbered lines) in PubMed's syntax, for you to check.

    Each line is printed as a PubMed history line (#N ...): headings, exp, *, field
    suffixes (.ti,ab.), $ truncation, or/1-5 and 1 and 2 are rewritten; what has no
    PubMed form (adjN beyond two plain words, ? wildcards, subheading abbreviations) is
    left as typed, with a note on stderr, so searching it is refused, never run another way.

    \b
    Example:
      medsearch translate --from ovid strategy.txt
    """
    from medsearch.query.ovid_translate import translate_ovid

    done = translate_ovid(source.read())
    for line in done.lines:
        click.echo(line)
    for note in done.notes:
        click.echo(f"note: {note}", err=True)
