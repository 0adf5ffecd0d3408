"""The one way medsearch opens a URL: ``http(s)`` only, every body read against a cap.

A download mirror (NCBI's, or whatever ``--mirror`` names) is a server on the other end
of a network, broken or hostile as it may be, so nothing it says is believed further
than it can be checked:

- only ``http://`` and ``https://`` URLs are opened, by an opener that has no handler for
  ``file:``, ``ftp:`` or ``data:``; a redirect is followed only to ``http(s)`` (urllib's
  own rule lets ``ftp:`` through) and its body is never read;
- a body is read in chunks against a cap the caller states (:data:`MAX_MD5_BYTES`,
  :data:`MAX_LISTING_BYTES`, a data file's size); a ``Content-Length`` past the cap is
  refused before the first byte, and a body without one is cut off at the cap, so an
  endless answer costs one chunk of memory, not all of it;
- a body must keep up :data:`MIN_RATE` over every :data:`RATE_WINDOW`, so a mirror that
  trickles bytes cannot hold a download (and the writer lock) for ever.

Failures worth another try (the network, a 5xx, a short read) are :class:`Transient`;
the callers in :mod:`ingest.download` decide how patient to be.
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import IO

from medsearch.errors import DownloadError

USER_AGENT = "medsearch/0.1 (local PubMed search engine; python urllib)"
CHUNK = 1 << 20

WEB_SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}

MAX_MD5_BYTES = 4096
"""A ``.md5`` file is one line of ~60 bytes; an answer longer than this is not one."""

MAX_LISTING_BYTES = 8 << 20
"""A folder listing's most bytes: NCBI's baseline listing (~1,300 files and their
``.md5`` files) is a few hundred KB, so 8 MiB leaves room for years of update files and
still stops a server that never stops sending."""


MIN_RATE = 4096
"""Bytes a second a body must average over each :data:`RATE_WINDOW`. Each read has a
timeout, but a mirror sending a byte every 20 s never meets it, and held ``update``
(and the writer lock) for ever; at this rate a 40 MB baseline file takes under 3 hours,
so a slow line passes and a stalled one is cut off within a window, then retried."""
RATE_WINDOW = 120.0
"""Seconds over which :data:`MIN_RATE` is measured (slow starts and pauses pass)."""


class Transient(Exception):
    """A failure worth retrying: the network, a 5xx, a short read."""


class RangeNotSatisfiable(Exception):
    """416: the ``.part`` is already as long as the file (complete, or junk)."""


class TooLong(Exception):
    """A body longer than its caller allows; ``str()`` says what the server did."""


class _Refused(Exception):
    """A redirect to a URL medsearch does not open."""


class _WebOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects to ``http(s)`` only (urllib's own rule also lets ``ftp:`` through,
    whose handler would log in to any host a server names) and never reads the body of a
    redirect, which urllib's handler reads whole, however long it is."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        fp.close()
        if urllib.parse.urlsplit(newurl).scheme.lower() not in WEB_SCHEMES:
            raise _Refused(f"redirected to {newurl}: only http:// and https:// are followed")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _web_opener() -> urllib.request.OpenerDirector:
    """urllib's default opener less its ``file:``, ``ftp:`` and ``data:`` handlers."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        urllib.request.ProxyHandler(),
        urllib.request.UnknownHandler(),
        urllib.request.HTTPHandler(),
        urllib.request.HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        _WebOnlyRedirects(),
        urllib.request.HTTPErrorProcessor(),
    ):
        opener.add_handler(handler)
    return opener


_OPENER = _web_opener()


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` with the scheme's default port filled in: two URLs with the
    same origin are on the same server."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port that is not a number: matches no real origin
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def check_web_url(url: str) -> None:
    """:class:`DownloadError` unless ``url`` is ``http://`` or ``https://``."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in WEB_SCHEMES:
        shown = f"{scheme}:" if scheme else "none"
        raise DownloadError(
            f"{url}: unknown url type ({shown}): only http:// and https:// URLs are fetched"
        )


def open_url(url: str, timeout: float, offset: int = 0) -> http.client.HTTPResponse:
    """GET ``url`` (from byte ``offset`` with a Range request): the response, its body
    unread. A 4xx is a :class:`DownloadError`, 416 :class:`RangeNotSatisfiable`."""
    check_web_url(url)
    headers = {"User-Agent": USER_AGENT}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        request = urllib.request.Request(url, headers=headers)
        response: http.client.HTTPResponse = _OPENER.open(request, timeout=timeout)
    except _Refused as err:
        raise DownloadError(f"{url}: {err}") from None
    except urllib.error.HTTPError as err:
        err.close()
        if err.code == 416:
            raise RangeNotSatisfiable from None
        if err.code >= 500 or err.code in (408, 429):
            raise Transient(f"HTTP {err.code} {err.reason}") from None
        raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from None
    except ValueError as err:  # urllib's answer to a malformed URL
        raise DownloadError(f"{url}: {err}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        raise Transient(describe(err)) from None
    return response


def reachable(url: str, timeout: float) -> bool:
    """True when ``url`` answers a HEAD request below 500 in time (some servers refuse
    HEAD with a 4xx, and that still means one answered)."""
    if urllib.parse.urlsplit(url).scheme.lower() not in WEB_SCHEMES:
        return False
    try:
        request = urllib.request.Request(url, method="HEAD", headers={"User-Agent": USER_AGENT})
        with _OPENER.open(request, timeout=timeout) as response:
            return int(response.status) < 500
    except urllib.error.HTTPError as err:
        err.close()
        return err.code < 500
    except (_Refused, urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
        return False


def describe(err: BaseException) -> str:
    """The short human reason inside urllib's wrapped exceptions."""
    if isinstance(err, urllib.error.URLError):
        reason = err.reason
        return describe(reason) if isinstance(reason, BaseException) else str(reason)
    if isinstance(err, TimeoutError):
        return "timed out"
    if isinstance(err, OSError) and err.strerror:
        return err.strerror[0].lower() + err.strerror[1:]
    return str(err) or type(err).__name__


def read_body(
    response: http.client.HTTPResponse, sink: Callable[[bytes], None], most: int | None = None
) -> int:
    """Copy the body to ``sink``, at most ``most`` bytes of it (None: what the server
    announces); :class:`TooLong` before the first byte when ``Content-Length`` says more,
    and before the chunk that would pass ``most`` when the body just goes on. A body
    shorter than its ``Content-Length`` is :class:`Transient`."""
    header = response.headers.get("Content-Length")
    declared = int(header) if header is not None and header.isdigit() else None
    if most is not None and declared is not None and declared > most:
        raise TooLong(f"announces a body of {declared:,} bytes, more than the {most:,} allowed")
    received = window_bytes = 0
    window_start = time.monotonic()
    while True:
        # What has arrived, up to CHUNK: progress and stop() never wait for a whole MB,
        # and one byte past ``most`` is all it takes to know a body is too long.
        want = CHUNK if most is None else min(CHUNK, most - received + 1)
        try:
            chunk = response.read1(want)
        except (OSError, http.client.HTTPException) as err:  # the network's fault only
            raise Transient(f"{describe(err)} after {received} bytes") from None
        if not chunk:
            break
        if most is not None and received + len(chunk) > most:
            raise TooLong(f"sends a body past the {most:,} bytes allowed")
        sink(chunk)
        received += len(chunk)
        window_bytes += len(chunk)
        elapsed = time.monotonic() - window_start
        if elapsed >= RATE_WINDOW:
            if window_bytes < MIN_RATE * elapsed:
                raise Transient(
                    f"the server sent {window_bytes:,} bytes in {elapsed:.0f} s, under the"
                    f" {MIN_RATE:,} bytes a second a download must keep up"
                )
            window_start, window_bytes = time.monotonic(), 0
    if declared is not None and received < declared:
        raise Transient(f"connection closed after {received} of {declared} bytes")
    return received


def fetch_text(
    url: str, timeout: float, most: int = MAX_LISTING_BYTES, what: str = "a folder listing"
) -> str:
    """The body of ``url`` as text, refused past ``most`` bytes (``what`` it should be
    names the cap in the error)."""
    parts: list[bytes] = []
    try:
        with open_url(url, timeout) as response:
            read_body(response, parts.append, most)
    except TooLong as err:
        raise DownloadError(f"{url}: the server {err} for {what}; stopped reading") from None
    return b"".join(parts).decode("utf-8", errors="replace")
