"""``medsearch quickstart``: the one command a new user runs after cloning.

It ingests something real to search (NCBI's first baseline file when NCBI answers, the
bundled demo records when it does not), says which, and opens the app; without a
terminal (CI, pipes) it runs an example search instead so the run proves itself. Its
last words say where the data went and the next three commands to try, written so they
work as printed: with ``--home`` when the data home is not the default one, and after
activating the environment when ``medsearch`` is not on the PATH (``scripts/start``
runs it from ``.venv`` without activating it).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import click

from medsearch.commands.common import paths_of
from medsearch.errors import MedsearchError
from medsearch.paths import Paths, demo_corpus, platform_home

DEMO_QUERY = "IL-6 cytokine storm in COVID-19"


@click.command()
@click.option("--offline", is_flag=True, help="Do not try NCBI; use the bundled demo corpus.")
@click.option("--mirror", default=None, help="Base URL of a PubMed mirror instead of NCBI's.")
@click.option("--no-app", is_flag=True, help="Run an example search instead of opening the app.")
@click.pass_context
def quickstart(ctx: click.Context, offline: bool, mirror: str | None, no_app: bool) -> None:
    """Ingest a first corpus and open the app (the README's main command)."""
    from ingest.download import DEFAULT_MIRROR, ncbi_reachable
    from ingest.run import IngestOptions
    from medsearch.commands.ingest import ingest_and_report

    paths = paths_of(ctx).ensure()
    mirror = mirror or DEFAULT_MIRROR
    if not offline and ncbi_reachable(mirror):
        click.echo(
            f"NCBI is reachable: downloading and ingesting the first baseline file from {mirror}"
        )
        click.echo(
            "(lexical search right away; encode later with `medsearch ingest` on a GPU,"
            " or import NCBI's precomputed embeddings with `medsearch ingest --embeddings`)"
        )
        options = IngestOptions(download="baseline", limit=1, mirror=mirror, encode=False)
    else:
        click.echo(
            "NCBI is not reachable: ingesting the bundled demo corpus (invented records)"
            " with the offline model profile"
        )
        # the XML files, not the folder: its README would be listed as an ignored input
        options = IngestOptions(files=tuple(sorted(demo_corpus().glob("*.xml"))))
    ingest_and_report(paths, options, as_json=False)
    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    if not no_app and sys.stdin.isatty() and sys.stdout.isatty():
        from medsearch.commands.app import open_app

        open_app(paths)
        say_next_steps(paths)
        return
    click.echo(f"\nExample search: {DEMO_QUERY!r}\n")
    code = _invoke(root, ["--home", str(paths.home), "search", DEMO_QUERY, "-k", "5"])
    say_next_steps(paths)
    sys.exit(code)


def say_next_steps(paths: Paths) -> None:
    activate = Path(sys.prefix) / "bin" / "activate"
    needs_activate = shutil.which("medsearch") is None and activate.exists()
    lines = next_steps(
        paths.home,
        example_pmid(paths),
        with_home=paths.home.absolute() != platform_home().absolute(),
        activate=activate if needs_activate else None,
    )
    click.echo("\n" + "\n".join(lines))


def next_steps(
    home: Path, pmid: int | None, *, with_home: bool, activate: Path | None
) -> list[str]:
    """Where the data is, then three commands to try (search, show, the app)."""
    prefix = f"medsearch --home {shlex.quote(str(home))}" if with_home else "medsearch"
    lines = [f"Your data is in {home}", "Next, try:"]
    if activate is not None:
        lines.append(f"  . {shlex.quote(str(activate))}    # puts medsearch on your PATH")
    lines.append(f"  {prefix} search {shlex.quote(DEMO_QUERY)}")
    if pmid is not None:
        lines.append(f"  {prefix} show {pmid}")
    lines.append(f"  {prefix}    # the terminal UI")
    return lines


def example_pmid(paths: Paths) -> int | None:
    """The example query's top lexical hit (the article a reader met first), else the
    store's first article; None only when the corpus cannot be read."""
    from medsearch.retrieval.searcher import open_searcher

    try:
        with open_searcher(paths) as searcher:
            hits = searcher.search(DEMO_QUERY, mode="lexical", k=1).hits
            if hits:
                return hits[0].pmid
            first = next(searcher.store.iter_articles(batch=1), [])
            return first[0].pmid if first else None
    except MedsearchError:
        return None


def _invoke(root: click.Group, argv: list[str]) -> int:
    try:
        root.main(argv, prog_name="medsearch", standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
