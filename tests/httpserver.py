"""A real HTTP server on 127.0.0.1 for tests that download things.

``SimpleHTTPRequestHandler`` has no Range support and no way to misbehave, and the
download code's whole job is to cope with misbehaving servers. This one serves a
directory (Apache-style listings for folders, like NCBI's FTP site over HTTPS), honours
``Range: bytes=N-`` / ``bytes=N-M`` with 206 and ``Content-Range``, and can be told to
fail on purpose:

- ``fail_first(path, n, status=503)``: the next ``n`` requests for ``path`` get ``status``;
- ``cut_short(path, after, times=1)``: send the full ``Content-Length`` header but only
  ``after`` body bytes, then hang up (a short read);
- ``stall_first(path, n, seconds)``: wait before answering (a client timeout);
- ``override(path, body)``: serve these bytes instead of the file (a wrong ``.md5``);
- ``ignore_range = True``: answer every Range request with a plain 200 and the whole file;
- ``rate = N``: send file bodies at about N bytes a second (a slow link, or NCBI's);
- ``endless(path, prefix=..., most=..., length=None)``: a hostile answer: ``prefix``, then
  filler until ``most`` bytes or the client hangs up, without a Content-Length (the body
  ends when the connection does) unless ``length`` announces one (a lie, when the body
  goes on past it); ``status`` and ``location`` make it a redirect with such a body;
- ``redirect(path, location, status=302)``: send the client elsewhere.

Every request is logged (method, path, Range header, status, body bytes sent) so a
test can assert what went over the wire, not just what ended up on disk.
"""

from __future__ import annotations

import html
import re
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

_RANGE = re.compile(r"^bytes=(\d+)-(\d*)$")
_FILLER = b"a server that never stops sending\n" * 2048  # ~70 KB a write


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    range: str | None
    status: int
    body_bytes: int


@dataclass(frozen=True)
class Endless:
    """A body that goes on (see :meth:`LocalServer.endless`)."""

    prefix: bytes
    most: int
    length: int | None
    status: int
    location: str | None
    trickle: float = 0.0
    """Seconds between two bytes (0: as fast as the socket takes them)."""


class LocalServer:
    """Serves ``root`` at ``url`` until ``close()``; the knobs are safe to set any time."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.ignore_range = False
        self.rate: float | None = None
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._fail: dict[str, list[int]] = {}  # path -> [remaining, status]
        self._cut: dict[str, list[int]] = {}  # path -> [remaining, after_bytes]
        self._stall: dict[str, list[float]] = {}  # path -> [remaining, seconds]
        self._hold: dict[str, list[Any]] = {}  # path -> [remaining, (event, seconds)]
        self._bodies: dict[str, bytes] = {}
        self._endless: dict[str, Endless] = {}
        self._httpd = _QuietServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.local = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT/`` (with the trailing slash)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/"

    # -- fault injection -------------------------------------------------------------

    def fail_first(self, path: str, n: int, status: int = 503) -> None:
        with self._lock:
            self._fail[_norm(path)] = [n, status]

    def cut_short(self, path: str, after: int, times: int = 1) -> None:
        with self._lock:
            self._cut[_norm(path)] = [times, after]

    def stall_first(self, path: str, n: int, seconds: float) -> None:
        with self._lock:
            self._stall[_norm(path)] = [n, seconds]

    def hold_first(self, path: str, until: threading.Event, seconds: float = 60.0) -> None:
        """Answer the first GET of ``path`` once ``until`` is set (or ``seconds`` pass, so
        a test whose event never comes fails on what it checks instead of hanging)."""
        with self._lock:
            self._hold[_norm(path)] = [1, (until, seconds)]

    def override(self, path: str, body: bytes) -> None:
        with self._lock:
            self._bodies[_norm(path)] = body

    def endless(
        self,
        path: str,
        *,
        prefix: bytes = b"",
        most: int = 32 << 20,
        length: int | None = None,
        status: int = 200,
        location: str | None = None,
        trickle: float = 0.0,
    ) -> None:
        """Answer ``path`` with ``prefix`` and filler up to ``most`` bytes in all (the server
        stops by itself); ``length``: the Content-Length to announce, else none;
        ``trickle``: send the filler one byte every so many seconds."""
        with self._lock:
            self._endless[_norm(path)] = Endless(prefix, most, length, status, location, trickle)

    def redirect(self, path: str, location: str, status: int = 302) -> None:
        self.endless(path, most=0, length=0, status=status, location=location)

    def behave(self, path: str) -> None:
        """Serve ``path`` plainly again: no override, no endless body, no redirect."""
        with self._lock:
            self._bodies.pop(_norm(path), None)
            self._endless.pop(_norm(path), None)

    # -- the log ---------------------------------------------------------------------

    def requests_for(self, path: str, method: str = "GET") -> list[Request]:
        key = _norm(path)
        with self._lock:
            return [r for r in self.requests if r.path == key and r.method == method]

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- used by the handler ---------------------------------------------------------

    def _take(self, table: dict[str, list[Any]], path: str) -> Any | None:
        """Consume one use of a knob for ``path``; its argument, or None when spent."""
        with self._lock:
            entry = table.get(path)
            if entry is None or entry[0] <= 0:
                return None
            entry[0] -= 1
            return entry[1]

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (timeouts, short reads) is expected here; anything else is not."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _norm(path: str) -> str:
    return "/" + path.lstrip("/")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def local(self) -> LocalServer:
        local: LocalServer = self.server.local  # type: ignore[attr-defined]
        return local

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the request log replaces stderr chatter."""

    def do_HEAD(self) -> None:
        self._respond(send_body=False)

    def do_GET(self) -> None:
        self._respond(send_body=True)

    def _respond(self, *, send_body: bool) -> None:
        local = self.local
        path = _norm(unquote(urlsplit(self.path).path))
        range_header = self.headers.get("Range")

        stall = local._take(local._stall, path)
        if stall is not None:
            time.sleep(stall)
        if send_body and (hold := local._take(local._hold, path)) is not None:
            event, seconds = hold
            event.wait(seconds)
        status = local._take(local._fail, path)
        if status is not None:
            self._send_simple(path, status, b"injected failure\n", send_body, range_header)
            return

        endless = local._endless.get(path)
        if endless is not None:
            self._send_endless(path, endless, send_body, range_header)
            return
        body = local._bodies.get(path)
        if body is None:
            target = (local.root / path.lstrip("/")).resolve()
            if not target.is_relative_to(local.root) or not target.exists():
                self._send_simple(path, 404, b"not found\n", send_body, range_header)
                return
            if target.is_dir():
                if not path.endswith("/"):
                    self.send_response(301)
                    self.send_header("Location", path + "/")
                    self.send_header("Content-Length", "0")
                    local._log(Request(self.command, path, range_header, 301, 0))
                    self.end_headers()
                    return
                index = target / "index.html"
                body = index.read_bytes() if index.exists() else _listing(target, path)
                self._send_simple(path, 200, body, send_body, range_header, "text/html")
                return
            body = target.read_bytes()

        self._send_file(path, body, send_body, range_header)

    def _send_file(self, path: str, body: bytes, send_body: bool, range_header: str | None) -> None:
        local = self.local
        size = len(body)
        start, end, status = 0, size - 1, 200
        match = _RANGE.match(range_header or "")
        if range_header and not local.ignore_range:
            if match is None or int(match.group(1)) >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                local._log(Request(self.command, path, range_header, 416, 0))
                self.end_headers()
                return
            start = int(match.group(1))
            end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
            status = 206
        chunk = body[start : end + 1]
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(chunk)))
        self.send_header("Accept-Ranges", "none" if local.ignore_range else "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        cut = local._take(local._cut, path) if send_body else None
        if cut is not None:
            self.send_header("Connection", "close")
            self.close_connection = True
            chunk = chunk[:cut]
        # Logged before the client can see the answer, so a test never reads a stale log.
        local._log(
            Request(self.command, path, range_header, status, len(chunk) if send_body else 0)
        )
        self.end_headers()
        if not send_body:
            return
        rate, step = local.rate, 64 * 1024
        if rate is None:
            self.wfile.write(chunk)
        else:  # paced from the start, so the average holds whatever the sleeps overshoot
            began = time.monotonic()
            for sent in range(0, len(chunk), step):
                self.wfile.write(chunk[sent : sent + step])
                time.sleep(max(0.0, began + (sent + step) / rate - time.monotonic()))
        self.wfile.flush()

    def _send_endless(
        self, path: str, spec: Endless, send_body: bool, range_header: str | None
    ) -> None:
        """Logged with ``most`` as its body bytes: what it sends at most, since the client
        decides how much of it goes over the wire."""
        self.send_response(spec.status)
        self.send_header("Content-Type", "application/octet-stream")
        if spec.location is not None:
            self.send_header("Location", spec.location)
        if spec.length is not None:
            self.send_header("Content-Length", str(spec.length))
        self.send_header("Connection", "close")
        self.close_connection = True
        self.local._log(
            Request(self.command, path, range_header, spec.status, spec.most if send_body else 0)
        )
        self.end_headers()
        if not send_body:
            return
        sent = min(len(spec.prefix), spec.most)
        self.wfile.write(spec.prefix[:sent])  # a client that hangs up ends it (quietly)
        while sent < spec.most:
            piece = _FILLER[: 1 if spec.trickle else spec.most - sent]
            self.wfile.write(piece)
            sent += len(piece)
            if spec.trickle:
                self.wfile.flush()
                time.sleep(spec.trickle)
        self.wfile.flush()

    def _send_simple(
        self,
        path: str,
        status: int,
        body: bytes,
        send_body: bool,
        range_header: str | None,
        content_type: str = "text/plain",
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.local._log(
            Request(self.command, path, range_header, status, len(body) if send_body else 0)
        )
        self.end_headers()
        if send_body:
            self.wfile.write(body)


def _listing(folder: Path, url_path: str) -> bytes:
    """An Apache ``mod_autoindex`` page, the shape NCBI's pubmed/ folders have."""
    rows = ['<a href="/pubmed/">Parent Directory</a>                                    -']
    for entry in sorted(folder.iterdir()):
        name = entry.name + ("/" if entry.is_dir() else "")
        stamp = time.strftime("%Y-%m-%d %H:%M", time.gmtime(entry.stat().st_mtime))
        size = "-" if entry.is_dir() else f"{entry.stat().st_size:>5}"
        rows.append(
            f'<a href="{html.escape(name)}">{html.escape(name)}</a>'
            f"{' ' * max(1, 50 - len(name))}{stamp}  {size}"
        )
    title = html.escape(url_path)
    page = (
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">\n'
        f"<html>\n <head>\n  <title>Index of {title}</title>\n </head>\n <body>\n"
        f"<h1>Index of {title}</h1>\n"
        "<pre>Name                                              Last modified      Size  "
        "<hr>" + "\n".join(rows) + "\n<hr></pre>\n</body></html>\n"
    )
    return page.encode()


@contextmanager
def serve(root: Path) -> Iterator[LocalServer]:
    """Serve ``root`` for the duration of the ``with`` block."""
    server = LocalServer(root)
    try:
        yield server
    finally:
        server.close()
