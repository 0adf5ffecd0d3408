"""The ``medsearch`` command line: one surface for people and scripts.

Commands are thin: they parse options, call the library, and print either rich text or
one JSON object. Heavy modules (torch, transformers, faiss, tantivy, textual) are only
imported inside the commands that need them, so ``medsearch --help`` stays instant; a
test enforces it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click

from medsearch import __version__
from medsearch.commands import COMMANDS
from medsearch.commands.common import fail, failure
from medsearch.errors import MedsearchError
from medsearch.paths import ENV_HOME, Paths

PIPE_CLOSED = 141
"""Exit status when the reader of standard output goes away (``| head``): what a shell
reports for a program killed by SIGPIPE (128 + 13), so ``set -o pipefail`` scripts see
the output was cut short, as with ``cat`` or ``grep``."""


def stdout_gone() -> bool:
    """Whether nobody reads standard output any more: the read end of its pipe is closed.

    A BrokenPipeError can also come from a socket or a worker's pipe, which is a real
    failure; only a closed standard output is the quiet end of ``| head``."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return False
    if not hasattr(select, "poll"):  # Windows: a broken pipe there is standard output's
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))


def quit_quietly() -> NoReturn:
    """End after the reader of standard output went away, as the Python docs advise
    (signal module, note on SIGPIPE): point standard output at /dev/null so the
    interpreter's final flush has somewhere to go and prints no "Exception ignored"."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(PIPE_CLOSED)


@contextmanager
def pipe_closed_is_quiet() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        if not stdout_gone():
            raise
        quit_quietly()


def debug_wanted() -> bool:
    """``MEDSEARCH_DEBUG`` set to something other than empty, ``0``, ``false``, ``no``
    or ``off``: an internal error then shows its traceback (``MEDSEARCH_DEBUG=0`` once
    showed it too)."""
    value = os.environ.get("MEDSEARCH_DEBUG", "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


class MedsearchGroup(click.Group):
    """Turns domain errors into one clear line and a non-zero exit, never a traceback.

    A closed standard output (``medsearch search ... | head -1``) ends the command
    quietly with :data:`PIPE_CLOSED`, whichever command was printing."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        with pipe_closed_is_quiet():  # --help and --version print while parsing
            return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with pipe_closed_is_quiet():
                result = super().invoke(ctx)
                sys.stdout.flush()  # what is still buffered meets a closed pipe here
                return result
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (Exception, KeyboardInterrupt) as exc:
            expected = isinstance(exc, (MedsearchError, KeyboardInterrupt))
            if not expected and debug_wanted():
                raise
            fail(*failure(exc))


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
