# Over 450 lines: listing, one verified resumable fetch and its retries share one error
# policy; fetching several at once is download_ahead.py, the HTTP is http_get.py.
"""Fetch PubMed baseline and update files from NCBI: verified, resumable and patient.

NCBI publishes ``pubmed/baseline/`` (the yearly snapshot, ~1,300 gzipped XML files of
20-40 MB) and ``pubmed/updatefiles/`` (the daily additions) as plain Apache directory
listings, each data file next to a ``.md5`` file. A download of the baseline takes hours
over links that drop, so the rules here are:

- bytes land in ``NAME.part`` and only a file whose MD5 matches NCBI's becomes ``NAME``
  (``os.replace``, atomic), so a file with the final name is always a good file and a
  re-run skips it;
- a ``.part`` left by a broken run is resumed with an HTTP Range request; a server that
  ignores Range (200 instead of 206) is handled by starting that file over;
- connection errors, timeouts, 5xx answers and short reads are retried with exponential
  backoff (``backoff * 2**attempt`` seconds; ``sleep`` is injectable for tests);
- a checksum mismatch throws the ``.part`` away and fetches once more from scratch, then
  gives up with a :class:`DownloadError` naming the file and both hashes.

A mirror is trusted for nothing it cannot prove: every answer is read with a cap (a
``.md5`` file, a listing, a data file by the size its listing gives), a body that runs
past it is cut off with a :class:`DownloadError` and its ``.part`` deleted, and only
``http(s)`` URLs are opened: a listing may link data files only on the mirror's own
scheme, host and port, and redirects go only to ``http(s)`` (:mod:`ingest.http_get`).

Only the standard library (``urllib.request``): the pipeline must not need more to start.

Longer than most modules (~480 lines) because the rules above are one protocol: the
listing's sizes are the fetch's caps, and the resume, retry and checksum rules act on
the same ``.part`` file; split, each half would need the other's to be read. The HTTP
reading itself is :mod:`ingest.http_get`'s, the run beside the ingest
:mod:`ingest.download_ahead`'s.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import os
import re
import time
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypedDict, TypeVar, Unpack

from ingest.http_get import (
    CHUNK,
    MAX_MD5_BYTES,
    RangeNotSatisfiable,
    TooLong,
    Transient,
    describe,
    fetch_text,
    open_url,
    origin,
    reachable,
    read_body,
)
from medsearch.errors import DiskFullError, DownloadError, UsageError

DEFAULT_MIRROR = "https://ftp.ncbi.nlm.nih.gov/pubmed/"
FOLDERS: dict[str, str] = {"baseline": "baseline/", "updates": "updatefiles/"}

MAX_UNLISTED_FILE_BYTES = 1 << 30
"""The most bytes a data file may have when the listing gives no size: NCBI's are 20-40
MB and the largest under 200 MB, so 1 GiB never stops a real one and stops a server that
sends without end before it fills a disk."""

Kind = Literal["baseline", "updates"]
Progress = Callable[[int, int | None], None]
Sleep = Callable[[float], None]
T = TypeVar("T")

_DATA_FILE = re.compile(r"pubmed\d+n\d+\.xml\.gz")
_HREF = re.compile(r"""href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_LISTED_SIZE = re.compile(r"\s(\d+(?:\.\d+)?)([KMGT]?)\s*$", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")
_MD5_FORMS = (
    re.compile(r"MD5\s*\((?P<name>.+)\)\s*=\s*(?P<hash>[0-9a-fA-F]{32})"),  # openssl / BSD
    re.compile(r"(?P<hash>[0-9a-fA-F]{32})\s+\*?(?P<name>\S.*)"),  # md5sum
    re.compile(r"(?P<hash>[0-9a-fA-F]{32})"),  # a bare hash
)


@dataclass(frozen=True)
class RemoteFile:
    """One data file on the mirror and the URL of its checksum."""

    name: str
    url: str
    md5_url: str
    size: int | None = field(default=None, compare=False)
    """Bytes, as the listing states them (``35M`` is rounded by the server); None when the
    listing gives no size. Used to plan disk space before anything is fetched."""


@dataclass(frozen=True)
class SizeLimit:
    """The most bytes a download may bring, and why, for the line that refuses more."""

    most: int
    why: str


def size_limit(listed: int | None) -> SizeLimit:
    """How long ``NAME.part`` may grow for a file the listing gives ``listed`` bytes: the
    size column is rounded (Apache's ``35M`` is 34.5-35.5 MiB, ``1.0M`` 0.95-1.05 MiB), so
    it gets 1/16 and 1 MiB on top; no size: :data:`MAX_UNLISTED_FILE_BYTES`."""
    if listed is None:
        cap = MAX_UNLISTED_FILE_BYTES
        return SizeLimit(cap, f"the listing gives no size, and {cap:,} bytes is the cap")
    return SizeLimit(listed + listed // 16 + (1 << 20), f"the listing says {listed:,} bytes")


def discard_oversize_parts(files: Iterable[RemoteFile], dest_dir: Path) -> list[Path]:
    """Delete each ``NAME.part`` longer than its file may be (:func:`size_limit`): no
    checksum can pass, a resume would only add to it, and the disk it holds would count
    against the space check. The paths deleted."""
    gone: list[Path] = []
    for remote in files:
        part = dest_dir / (remote.name + ".part")
        if _discard_oversize(part, size_limit(remote.size)):
            gone.append(part)
    return gone


def list_remote(
    kind: Kind,
    *,
    mirror: str = DEFAULT_MIRROR,
    timeout: float = 30,
    retries: int = 3,
    backoff: float = 1.0,
    sleep: Sleep = time.sleep,
) -> list[RemoteFile]:
    """The data files listed in the mirror's ``baseline/`` or ``updatefiles/`` folder, by name.

    A data file linked anywhere but the mirror itself (another scheme, host or port:
    ``file:///etc/passwd``, a stranger's server) refuses the whole listing: skipping it
    would leave a gap that nobody sees, and update files apply in order.
    """
    folder = _folder_url(kind, mirror)
    page = _retrying(folder, lambda: fetch_text(folder, timeout), retries, backoff, sleep)
    found: dict[str, RemoteFile] = {}
    for match in _HREF.finditer(page):
        href = next(g for g in match.groups() if g is not None)
        name = href.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if _DATA_FILE.fullmatch(name) and name not in found:
            url = urllib.parse.urljoin(folder, href)
            _check_on_mirror(folder, name, url)
            size = listed_size(page, match.end())
            found[name] = RemoteFile(name=name, url=url, md5_url=url + ".md5", size=size)
    return [found[name] for name in sorted(found)]


def listed_size(page: str, after: int) -> int | None:
    """The size column of an Apache listing row (``12345``, ``35M``, ``1.2G``), read from
    the text after a link up to the next tag or line end; None when there is none."""
    close = page.find("</a>", after)
    if close < 0:
        return None
    start = close + 4
    stops = [i for i in (page.find("<", start), page.find("\n", start)) if i >= 0]
    match = _LISTED_SIZE.search(page[start : min(stops, default=len(page))])
    if match is None:
        return None
    return round(float(match.group(1)) * _SIZE_UNITS[match.group(2).upper()])


class FetchOptions(TypedDict, total=False):
    """How patient a fetch is, and who hears of its bytes (see :func:`download_verified`)."""

    retries: int
    backoff: float
    timeout: float
    progress: Progress | None
    sleep: Sleep


def download_file(remote: RemoteFile, dest_dir: Path, **options: Unpack[FetchOptions]) -> Path:
    """``dest_dir/NAME``, fetched (or resumed) and verified against NCBI's MD5."""
    return download_verified(remote, dest_dir, **options)[0]


def download_verified(
    remote: RemoteFile,
    dest_dir: Path,
    *,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60,
    progress: Progress | None = None,
    sleep: Sleep = time.sleep,
) -> tuple[Path, str]:
    """``dest_dir/NAME``, fetched (or resumed) and verified against NCBI's MD5, and that
    MD5 (the ingest ledger's key for the file, so nobody reads 40 MB again to learn it)."""
    try:
        dest_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DownloadError(f"{dest_dir}: cannot create: {describe(err)}") from None
    final = dest_dir / remote.name
    part = dest_dir / (remote.name + ".part")
    limit = size_limit(remote.size)
    expected = _expected_md5(remote, timeout, retries, backoff, sleep)
    if final.exists():
        if md5_of(final) == expected:
            size = final.stat().st_size
            if progress is not None:
                progress(size, size)
            return final, expected
        final.unlink()  # stale or damaged: fetch it again
    actual = ""
    _discard_oversize(part, limit)
    for _ in range(2):  # a checksum mismatch earns one clean second try
        _retrying(
            remote.url,
            lambda: _fetch_to_part(remote.url, part, timeout, progress, limit),
            retries,
            backoff,
            sleep,
        )
        actual = md5_of(part)
        if actual == expected:
            os.replace(part, final)
            return final, expected
        part.unlink(missing_ok=True)
    raise DownloadError(
        f"{remote.url}: checksum mismatch for {remote.name} (expected {expected}, "
        f"got {actual}) after downloading it twice"
    )


def download(
    kind: Kind,
    dest_dir: Path,
    *,
    limit: int | None = None,
    mirror: str = DEFAULT_MIRROR,
    progress: Progress | None = None,
    on_file: Callable[[RemoteFile, int, int], None] | None = None,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60,
    sleep: Sleep = time.sleep,
) -> list[Path]:
    """Download the first ``limit`` files of ``kind`` (all when None); local paths by name.

    ``on_file(remote, index, count)`` is called before each file so a caller can say which
    file the byte-level ``progress`` is about.
    """
    chosen = plan(
        kind,
        limit=limit,
        mirror=mirror,
        timeout=timeout,
        retries=retries,
        backoff=backoff,
        sleep=sleep,
    )
    return download_files(
        chosen,
        dest_dir,
        progress=progress,
        on_file=on_file,
        retries=retries,
        backoff=backoff,
        timeout=timeout,
        sleep=sleep,
    )


def plan(
    kind: Kind,
    *,
    limit: int | None = None,
    mirror: str = DEFAULT_MIRROR,
    timeout: float = 60,
    retries: int = 5,
    backoff: float = 1.0,
    sleep: Sleep = time.sleep,
) -> list[RemoteFile]:
    """The files :func:`download` would fetch: listed, by name, the first ``limit``.

    Separate so a caller can check the disk (or show the plan) before any byte moves.
    """
    if limit is not None and limit < 0:
        raise UsageError(f"--limit must be 0 or more, not {limit}")
    files = list_remote(
        kind, mirror=mirror, timeout=timeout, retries=retries, backoff=backoff, sleep=sleep
    )
    if not files and kind == "baseline":
        raise DownloadError(f"{_folder_url(kind, mirror)}: no pubmed*.xml.gz files listed")
    return files if limit is None else files[:limit]


def download_files(
    chosen: list[RemoteFile],
    dest_dir: Path,
    *,
    progress: Progress | None = None,
    on_file: Callable[[RemoteFile, int, int], None] | None = None,
    retries: int = 5,
    backoff: float = 1.0,
    timeout: float = 60,
    sleep: Sleep = time.sleep,
) -> list[Path]:
    """Fetch (or resume) and verify each of ``chosen`` into ``dest_dir``; paths by name."""
    paths: list[Path] = []
    for index, remote in enumerate(chosen):
        if on_file is not None:
            on_file(remote, index, len(chosen))
        paths.append(
            download_file(
                remote,
                dest_dir,
                retries=retries,
                backoff=backoff,
                timeout=timeout,
                progress=progress,
                sleep=sleep,
            )
        )
    return paths


def ncbi_reachable(mirror: str = DEFAULT_MIRROR, timeout: float = 3.0) -> bool:
    """True when the mirror answers a HEAD request quickly; any network failure is False.

    A 4xx still means a server answered (some refuse HEAD), so only 5xx counts as down.
    """
    return reachable(_root(mirror), timeout)


def md5_of(path: Path) -> str:
    """MD5 of a file, streamed: NCBI's published checksum, and the ingest ledger's key."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def parse_md5(text: str) -> tuple[str, str | None]:
    """``(hash, file name or None)`` from ``MD5(name)= h``, ``h  name`` or a bare ``h``."""
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    for form in _MD5_FORMS:
        match = form.fullmatch(line)
        if match:
            name = match.groupdict().get("name")
            return match.group("hash").lower(), name.strip() if name else None
    raise ValueError(f"not an MD5 checksum line: {line[:80]!r}")


# -- internals ----------------------------------------------------------------------------


def _root(mirror: str) -> str:
    return mirror if mirror.endswith("/") else mirror + "/"


def _folder_url(kind: str, mirror: str) -> str:
    if kind not in FOLDERS:
        raise UsageError(f"unknown download kind {kind!r}: use 'baseline' or 'updates'")
    return urllib.parse.urljoin(_root(mirror), FOLDERS[kind])


def _expected_md5(
    remote: RemoteFile, timeout: float, retries: int, backoff: float, sleep: Sleep
) -> str:
    url = remote.md5_url
    fetch = lambda: fetch_text(url, timeout, MAX_MD5_BYTES, "a checksum file")  # noqa: E731
    text = _retrying(url, fetch, retries, backoff, sleep)
    try:
        digest, name = parse_md5(text)
    except ValueError as err:
        raise DownloadError(f"{url}: {err}") from None
    if name is not None and name.rsplit("/", 1)[-1] != remote.name:
        raise DownloadError(f"{url}: checksum is for {name!r}, not {remote.name!r}")
    return digest


def _retrying(url: str, action: Callable[[], T], retries: int, backoff: float, sleep: Sleep) -> T:
    """Run ``action``; on a transient failure wait ``backoff * 2**attempt`` and try again."""
    failure: Transient | None = None
    for attempt in range(retries + 1):
        try:
            return action()
        except Transient as err:
            failure = err
            if attempt < retries:
                sleep(backoff * 2**attempt)
    tries = "1 attempt" if retries == 0 else f"{retries + 1} attempts"
    raise DownloadError(f"{url}: {failure} (gave up after {tries})")


def _check_on_mirror(folder: str, name: str, url: str) -> None:
    """:class:`DownloadError` unless ``url`` is on the listing's own scheme, host and port."""
    if origin(url) != origin(folder):
        scheme, host, port = origin(folder)
        raise DownloadError(
            f"{folder}: the listing links {name} to {url}, off the mirror"
            f" ({scheme}://{host}:{port}); refusing a listing that points elsewhere"
        )


def _discard_oversize(part: Path, limit: SizeLimit) -> bool:
    """Delete ``part`` if it is longer than ``limit`` allows; whether it was."""
    try:
        if part.stat().st_size <= limit.most:
            return False
        part.unlink()
    except FileNotFoundError:
        return False
    except OSError as err:
        raise DownloadError(f"{part}: cannot delete an oversize part: {describe(err)}") from None
    return True


def _fetch_to_part(
    url: str,
    part: Path,
    timeout: float,
    progress: Progress | None,
    limit: SizeLimit | None = None,
) -> None:
    """Append the rest of ``url`` to ``part`` (or rewrite it when the server restarts),
    never past ``limit``: a body that would grow ``part`` beyond it is a
    :class:`DownloadError`, and ``part``, holding bytes of a body that lied, is deleted."""
    offset = part.stat().st_size if part.exists() else 0
    try:
        response = open_url(url, timeout, offset)
    except RangeNotSatisfiable:
        if not offset:
            raise Transient("HTTP 416 for a request without Range") from None
        return  # nothing left to fetch; the checksum decides whether the part is good
    with response:
        length = response.headers.get("Content-Length")
        total = int(length) if length and length.isdigit() else None
        if response.status == 206 and offset:
            match = _CONTENT_RANGE.search(response.headers.get("Content-Range") or "")
            if match is None or int(match.group(1)) != offset:
                part.unlink(missing_ok=True)
                raise Transient(f"server resumed at the wrong place ({match and match[0]})")
            total = int(match.group(3)) if match.group(3) != "*" else None
        elif response.status == 200:
            offset = 0  # no Range asked, or the server ignored it: start over
        else:
            raise Transient(f"unexpected HTTP {response.status}")
        try:
            _append_body(response, part, offset, total, progress, limit)
        except TooLong as err:
            part.unlink(missing_ok=True)
            why = f" ({limit.why})" if limit is not None else ""
            raise DownloadError(
                f"{url}: the server {err}{why}; stopped, and {part.name} deleted"
            ) from None
        except OSError as err:  # the local disk, not the network: retrying will not help
            if err.errno == errno.ENOSPC:
                raise DiskFullError(
                    f"{part}: disk full while downloading {url}; free space and run again to resume"
                ) from None
            raise DownloadError(f"{part}: cannot write: {describe(err)}") from None


def _append_body(
    response: http.client.HTTPResponse,
    part: Path,
    offset: int,
    total: int | None,
    progress: Progress | None,
    limit: SizeLimit | None,
) -> None:
    done = offset
    with part.open("ab" if offset else "wb") as out:
        if progress is not None:
            progress(done, total)

        def sink(chunk: bytes) -> None:
            nonlocal done
            out.write(chunk)
            done += len(chunk)
            if progress is not None:
                progress(done, total)

        read_body(response, sink, None if limit is None else limit.most - offset)
