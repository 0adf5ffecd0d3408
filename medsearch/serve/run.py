"""Listening: a Unix socket in the data home (0600) by default, 127.0.0.1 on ``--port``.

The sockets are made here and handed to uvicorn, rather than letting uvicorn bind them:
uvicorn makes a Unix socket world-writable (0666), and a socket made here is created
under a 077 umask and is never, even for an instant, open to other users. A socket file
left by a service that was killed is removed; one that still answers means a service is
running, and a second one is refused.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from medsearch.errors import BusyError, HomeError
from medsearch.paths import Paths

LOCAL = "127.0.0.1"
UNIX_PATH_MAX = 104
"""The longest Unix socket path every platform takes (macOS: 104 bytes, Linux: 108)."""


@dataclass(frozen=True, slots=True)
class Listen:
    """Where to listen: the home's socket (``port`` None) or ``host``:``port``."""

    host: str = LOCAL
    port: int | None = None

    @property
    def local_only(self) -> bool:
        return self.port is None or self.host in (LOCAL, "localhost", "::1")


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def socket_answers(path: Path) -> bool:
    """Whether something accepts connections on the Unix socket ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def unix_socket(path: Path) -> socket.socket:
    """A listening socket at ``path``, mode 0600, or BusyError when a service answers there."""
    if len(os.fsencode(path)) >= UNIX_PATH_MAX:
        raise HomeError(
            f"the socket path {path} is too long for a Unix socket; use --port N instead"
        )
    if path.exists() or path.is_symlink():
        if socket_answers(path):
            raise BusyError(f"a medsearch service already answers on {path}")
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with _umask(0o077):
        sock.bind(str(path))
    os.chmod(path, 0o600)
    sock.listen(128)
    return sock


def tcp_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise BusyError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    sock.listen(128)
    return sock


class _Stopped(Exception):
    """SIGINT or SIGTERM, re-raised by uvicorn after its graceful shutdown."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def serve_forever(app: object, sock: socket.socket, *, log_level: str = "info") -> None:
    """Run uvicorn on ``sock`` until SIGINT or SIGTERM, then return normally.

    uvicorn shuts down gracefully on either signal and then raises it again with the
    handlers it found installed; the handlers installed here turn that into a return,
    so the caller's cleanup (removing the socket file, closing the store) runs and the
    process exits 0, as a service manager expects of a stop it asked for."""
    import signal
    import threading

    import uvicorn

    config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_level=log_level,
        access_log=False,  # the app logs each request with its time
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    main_thread = threading.current_thread() is threading.main_thread()
    saved = {}
    if main_thread:
        saved = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except _Stopped:
        pass
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def configure_logging(level: int = logging.INFO) -> None:
    """Request lines on stderr, one per request: method, path, status, milliseconds."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(message)s", "%Y-%m-%dT%H:%M:%S"))
    logger = logging.getLogger("medsearch.serve")
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False


def serve_command(home: Path, listen: Listen) -> list[str]:
    """The command a service manager runs (the ``medsearch`` beside this Python)."""
    from medsearch.schedule import update_command

    start = update_command(home)[:-2]  # [..., "--home", HOME]: without "update --quiet"
    argv = [*start, "serve"]
    if listen.port is not None:
        argv += ["--port", str(listen.port)]
        if listen.host != LOCAL:
            argv += ["--host", listen.host]
    return argv


def unit_text(paths: Paths, listen: Listen) -> str:
    """A systemd user unit and a launchd plist that keep the service running."""
    argv = serve_command(paths.home, listen)
    line = shlex.join(argv)
    plist_args = "\n".join(f"    <string>{escape(a)}</string>" for a in argv)
    log = escape(str(paths.home / "serve.log"))
    return f"""\
# --- systemd (user): save as ~/.config/systemd/user/medsearch-serve.service ---
[Unit]
Description=medsearch service for the data home {paths.home}

[Service]
ExecStart={line}
Restart=on-failure

[Install]
WantedBy=default.target

# then: systemctl --user daemon-reload && systemctl --user enable --now medsearch-serve
# logs: journalctl --user -u medsearch-serve

# --- launchd (macOS): save as ~/Library/LaunchAgents/org.medsearch.serve.plist ---
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>org.medsearch.serve</string>
  <key>ProgramArguments</key>
  <array>
{plist_args}
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <true/>
  <key>StandardErrorPath</key>
  <string>{log}</string>
</dict>
</plist>
# then: launchctl load ~/Library/LaunchAgents/org.medsearch.serve.plist
"""
