"""Fetch the newest MeSH descriptor, supplementary and qualifier files from NLM.

NLM publishes MeSH as XML at ``nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/xmlmesh/``
(https://www.nlm.nih.gov/databases/download/mesh.html): ``descYYYY.xml`` (~300 MB) and
``suppYYYY.xml`` (~700 MB) and ``qualYYYY.xml`` (the subheadings and their tree, ~300
KB), with gzipped copies (``descYYYY.gz``, ``suppYYYY.gz``; the qualifier file may have
none, and is then fetched as XML). The
next year's files appear each November, so "the current year" is the newest year the
folder lists. The gzipped copies are fetched (a fifth of the bytes; the import reads
gzip by its magic bytes). The rules are those of the PubMed download
(:mod:`ingest.download`): bytes land in ``NAME.part`` and are resumed with an HTTP
Range request, transient failures are retried with backoff, every body is read with a
cap (the listing's size, or 2 GiB), a body shorter than its ``Content-Length`` is
retried, and only the mirror's own scheme, host and port are followed. NLM publishes no
checksum for these files; where the folder lists ``NAME.md5`` it is checked.
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from ingest.download import (
    FetchOptions,
    RemoteFile,
    SizeLimit,
    _check_on_mirror,
    _fetch_to_part,
    _retrying,
    download_verified,
    listed_size,
)
from ingest.http_get import fetch_text
from medsearch.errors import DownloadError

MESH_MIRROR = "https://nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/xmlmesh/"
MAX_MESH_BYTES = 2 << 30
"""The most bytes a MeSH file may have when the listing gives no size (the uncompressed
supplementary file is ~700 MB)."""
_NAME = re.compile(r"(desc|supp|qual)(\d{4})\.(gz|xml)")
_HREF = re.compile(r"""href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class MeshFiles:
    year: int
    files: tuple[RemoteFile, ...]


def list_mesh(
    mirror: str = MESH_MIRROR, *, timeout: float = 30, retries: int = 3, backoff: float = 1.0
) -> MeshFiles:
    """The newest year's descriptor, supplementary and qualifier files the folder lists
    (gzipped where both forms are)."""
    folder = mirror if mirror.endswith("/") else mirror + "/"
    page = _retrying(folder, lambda: fetch_text(folder, timeout), retries, backoff, time.sleep)
    found: dict[tuple[str, int], RemoteFile] = {}
    md5s: set[str] = set()
    for match in _HREF.finditer(page):
        href = next(g for g in match.groups() if g is not None)
        name = href.split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        if name.endswith(".md5"):
            md5s.add(name.removesuffix(".md5"))
            continue
        parsed = _NAME.fullmatch(name)
        if parsed is None:
            continue
        url = urllib.parse.urljoin(folder, href)
        _check_on_mirror(folder, name, url)
        key = (parsed.group(1), int(parsed.group(2)))
        if key in found and parsed.group(3) == "xml":
            continue  # the gzipped copy wins
        found[key] = RemoteFile(name, url, url + ".md5", listed_size(page, match.end()))
    years = sorted({year for kind, year in found if kind == "desc"})
    if not years:
        raise DownloadError(f"{folder}: no MeSH descriptor file (descYYYY) is listed")
    year = years[-1]
    files = [found[k] for k in (("desc", year), ("supp", year), ("qual", year)) if k in found]
    return MeshFiles(
        year,
        tuple(f if f.name in md5s else RemoteFile(f.name, f.url, "", f.size) for f in files),
    )


def download_mesh(
    dest_dir: Path, mirror: str = MESH_MIRROR, **options: FetchOptions
) -> tuple[int, list[Path]]:
    """The newest MeSH year and its files in ``dest_dir`` (fetched, or resumed)."""
    listed = list_mesh(mirror)
    dest_dir.mkdir(parents=True, exist_ok=True)
    return listed.year, [_fetch(remote, dest_dir) for remote in listed.files]


def _fetch(remote: RemoteFile, dest_dir: Path, timeout: float = 60, retries: int = 5) -> Path:
    if remote.md5_url:
        return download_verified(remote, dest_dir, timeout=timeout, retries=retries)[0]
    final = dest_dir / remote.name
    part = dest_dir / (remote.name + ".part")
    if final.exists() and (remote.size is None or _close_to(final.stat().st_size, remote.size)):
        return final
    cap = (
        SizeLimit(MAX_MESH_BYTES, f"the listing gives no size, and {MAX_MESH_BYTES:,} is the cap")
        if remote.size is None
        else SizeLimit(
            remote.size + remote.size // 16 + (1 << 20), f"the listing says {remote.size:,} bytes"
        )
    )
    _retrying(
        remote.url,
        lambda: _fetch_to_part(remote.url, part, timeout, None, cap),
        retries,
        1.0,
        time.sleep,
    )
    got = part.stat().st_size
    if remote.size is not None and not _close_to(got, remote.size):
        part.unlink(missing_ok=True)
        raise DownloadError(
            f"{remote.url}: {got:,} bytes arrived, the listing says about {remote.size:,}"
        )
    os.replace(part, final)
    return final


def _close_to(size: int, listed: int) -> bool:
    """Whether ``size`` is what a listing's rounded size column (``35M``) can mean."""
    return abs(size - listed) <= listed // 16 + (1 << 20)
