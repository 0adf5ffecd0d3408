"""The ``medsearch`` command line: one surface for people and scripts.

Commands are thin: they parse options, call the library, and print either rich text or
one JSON object. Heavy modules (torch, transformers, faiss, tantivy, textual) are only
imported inside the commands that need them, so ``medsearch --help`` stays instant; a
test enforces it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from medsearch import __version__
from medsearch.commands import COMMANDS
from medsearch.commands.common import fail
from medsearch.errors import MedsearchError
from medsearch.paths import ENV_HOME, Paths


class MedsearchGroup(click.Group):
    """Turns domain errors into one clear line and a non-zero exit, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MedsearchError as exc:
            fail(str(exc), exc.exit_code)
        except KeyboardInterrupt:
            fail("interrupted; work finished so far is kept; run the command again to resume", 130)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:
            if os.environ.get("MEDSEARCH_DEBUG"):
                raise
            fail(
                f"internal error ({type(exc).__name__}: {exc}); please report it, and set"
                " MEDSEARCH_DEBUG=1 to see the traceback",
                70,
            )


@click.group(cls=MedsearchGroup, invoke_without_command=True)
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help=f"Data home (default: ${ENV_HOME} or the platform's user data dir).",
)
@click.version_option(__version__, prog_name="medsearch")
@click.pass_context
def main(ctx: click.Context, home: Path | None) -> None:
    """medsearch: private, local, semantic search over PubMed.

    Run with no command to open the terminal UI.
    """
    ctx.obj = Paths.resolve(home)
    if ctx.invoked_subcommand is None:
        from medsearch.commands.app import open_app

        open_app(ctx.obj)


for _command in COMMANDS:
    main.add_command(_command)
