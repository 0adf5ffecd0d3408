"""``medsearch quickstart``: the one command a new user runs after cloning.

It ingests something real to search (NCBI's first baseline file when NCBI answers, the
bundled demo records when it does not), says which, and opens the app; without a
terminal (CI, pipes) it runs an example search instead so the run proves itself.
"""

from __future__ import annotations

import sys

import click

from medsearch.commands.common import paths_of
from medsearch.paths import demo_corpus

DEMO_QUERY = "IL-6 cytokine storm in COVID-19"


@click.command()
@click.option("--offline", is_flag=True, help="Do not try NCBI; use the bundled demo corpus.")
@click.option("--mirror", default=None, help="Base URL of a PubMed mirror instead of NCBI's.")
@click.option("--no-app", is_flag=True, help="Run an example search instead of opening the app.")
@click.pass_context
def quickstart(ctx: click.Context, offline: bool, mirror: str | None, no_app: bool) -> None:
    """Ingest a first corpus and open the app (the README's main command)."""
    from ingest.download import DEFAULT_MIRROR, ncbi_reachable

    paths = paths_of(ctx).ensure()
    mirror = mirror or DEFAULT_MIRROR
    args: list[str]
    if not offline and ncbi_reachable(mirror):
        click.echo(
            f"NCBI is reachable: downloading and ingesting the first baseline file from {mirror}"
        )
        click.echo(
            "(lexical search right away; encode later with `medsearch ingest` on a GPU,"
            " or import NCBI's precomputed embeddings with `medsearch ingest --embeddings`)"
        )
        args = [
            "ingest",
            "--download",
            "baseline",
            "--limit",
            "1",
            "--mirror",
            mirror,
            "--no-encode",
        ]
    else:
        click.echo(
            "NCBI is not reachable: ingesting the bundled demo corpus (invented records)"
            " with the offline model profile"
        )
        # the XML files, not the folder: its README would be listed as an ignored input
        args = ["ingest", *sorted(str(p) for p in demo_corpus().glob("*.xml"))]
    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    code = _invoke(root, ["--home", str(paths.home), *args])
    if code:
        sys.exit(code)
    if not no_app and sys.stdin.isatty() and sys.stdout.isatty():
        from medsearch.commands.app import open_app

        open_app(paths)
        return
    click.echo(f"\nExample search: {DEMO_QUERY!r}\n")
    sys.exit(_invoke(root, ["--home", str(paths.home), "search", DEMO_QUERY, "-k", "5"]))


def _invoke(root: click.Group, argv: list[str]) -> int:
    try:
        root.main(argv, prog_name="medsearch", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
