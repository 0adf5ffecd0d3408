"""``medsearch serve``: keep one data home's searcher warm behind a local HTTP service."""

from __future__ import annotations

import click

from medsearch.commands.common import model_options, paths_of
from medsearch.errors import UsageError


@click.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="Listen on 127.0.0.1:PORT instead of the Unix socket in the data home.",
)
@click.option(
    "--host",
    default=None,
    help="With --port: another interface to listen on (with a warning: anyone who can"
    " reach it and has the token can read the corpus).",
)
@click.option("--no-load", is_flag=True, help="Load the models on first need, not at start.")
@click.option(
    "--print-unit",
    is_flag=True,
    help="Print a systemd user unit and a launchd plist that run this service, then exit.",
)
@model_options
@click.pass_context
def serve(
    ctx: click.Context,
    port: int | None,
    host: str | None,
    no_load: bool,
    print_unit: bool,
    profile: str | None,
    device: str,
) -> None:
    """Answer searches, the JSON API and NCBI's E-utilities for this data home, warm.

    \b
    Listens on <home>/serve.sock (mode 0600) unless --port is given; every request
    needs the token in <home>/serve.token (Authorization: Bearer TOKEN, or api_key=TOKEN).
    docs/service.md has the API and how to point Biopython, rentrez or EDirect at it.

    \b
    Examples:
      medsearch serve
      medsearch serve --port 8765
      medsearch serve --print-unit
    """
    from medsearch.serve.run import LOCAL, Listen, unit_text

    if host is not None and port is None:
        raise UsageError("--host needs --port: the Unix socket has no host")
    listen = Listen(host=host or LOCAL, port=port)
    paths = paths_of(ctx)
    if print_unit:
        click.echo(unit_text(paths, listen), nl=False)
        return
    from medsearch.serve.access import ensure_token
    from medsearch.serve.app import build_app
    from medsearch.serve.run import configure_logging, serve_forever, tcp_socket, unix_socket
    from medsearch.serve.state import Warm

    if not listen.local_only:
        click.echo(
            f"warning: listening on {listen.host}:{port}, beyond this machine: anyone who"
            " can reach it and holds the token can read this corpus",
            err=True,
        )
    warm = Warm(paths, profile=profile, device=device, load=not no_load)
    token = ensure_token(paths)
    sock = unix_socket(paths.serve_socket) if port is None else tcp_socket(listen.host, port)
    where = paths.serve_socket if port is None else f"http://{listen.host}:{sock.getsockname()[1]}"
    configure_logging()
    click.echo(f"medsearch serve: {paths.home} on {where} (token in {paths.serve_token})", err=True)
    try:
        serve_forever(build_app(warm, token), sock)
    finally:
        sock.close()
        if port is None:
            paths.serve_socket.unlink(missing_ok=True)
        warm.close()
