"""Where the Delta model lives on disk, and replacing it so that a kill at any moment
leaves a usable one.

``rerank/delta`` is a symbolic link naming a versioned directory (``delta-3``). A new
model is written whole into ``delta-4.tmp`` (``meta.json`` last: a directory with it
holds a whole model), renamed ``delta-4``, and the link is then replaced by one
``rename``, which POSIX makes atomic: a search sees the old model or the new, never
neither. The old version is removed last. Two renames of directories (the live one
aside, the new one in) cannot do this: between them there is no model, and renaming a
directory onto one that is left over and not empty fails.

Homes whose ``delta`` is a plain directory keep working: it is read as it is and
becomes a version at the next training. Their swap's leftovers (``delta.tmp``,
``delta.old``) and this layout's own (``delta-N.tmp``, versions no link names) are
adopted or removed by :func:`recover`, which only a process holding the data home's
writer lock may call; a search only reads (:func:`current`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

COMPLETE = "meta.json"
"""Written last into a model directory: its presence means every other file is there."""
_VERSION = re.compile(r"-(\d+)")
_LEFTOVERS = (".tmp", ".old", ".link")


def complete(directory: Path) -> bool:
    return (directory / COMPLETE).is_file()


def _versions(link: Path) -> list[tuple[int, Path]]:
    """``delta-N`` directories beside ``link`` (``delta``), newest first."""
    found: list[tuple[int, Path]] = []
    if not link.parent.is_dir():
        return found
    prefix = link.name
    for entry in link.parent.iterdir():
        rest = entry.name[len(prefix) :] if entry.name.startswith(prefix) else ""
        match = _VERSION.fullmatch(rest)
        if match and entry.is_dir() and not entry.is_symlink():
            found.append((int(match.group(1)), entry))
    return sorted(found, reverse=True)


def current(link: Path) -> Path | None:
    """The directory holding the model in use, or None when there is none.

    ``link`` itself when it names a whole model (a link, or a plain directory). Else a
    kill fell between two steps of a swap: the newest whole version, or the plain
    layout's new model (``delta.tmp``, whole once the live one was moved aside) before
    its old one (``delta.old``).
    """
    if complete(link):
        return link
    for _, version in _versions(link):
        if complete(version):
            return version
    for suffix in (".tmp", ".old"):
        left = link.with_name(link.name + suffix)
        if complete(left):
            return left
    return None


def recover(link: Path) -> None:
    """Make ``link`` name the model :func:`current` finds and remove every other copy.

    Half-written versions, versions no link names, and the plain layout's leftovers go;
    a model found only among them is first adopted as a version. Needs the writer lock:
    a training in progress has files here that look like leftovers.
    """
    if not link.parent.is_dir():
        return
    found = current(link)
    if found is not None and found != link:
        if _VERSION.fullmatch(found.name[len(link.name) :]) is None:
            adopted = link.with_name(f"{link.name}-{_next_version(link)}")
            found.rename(adopted)
            found = adopted
        _point(link, found)
    if link.is_symlink() and not complete(link):
        link.unlink()  # names nothing whole, and nothing whole was found to name instead
    keep = link.resolve() if complete(link) else None
    for entry in list(link.parent.iterdir()):
        if entry == link or not _ours(link, entry.name) or entry.resolve() == keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    _sync(link.parent)


def install(link: Path, write: Callable[[Path], None]) -> Path:
    """Write a new model with ``write(directory)`` (``meta.json`` last) and make ``link``
    name it; returns its directory. The caller holds the data home's writer lock."""
    link.parent.mkdir(parents=True, exist_ok=True)
    recover(link)
    version = link.with_name(f"{link.name}-{_next_version(link)}")
    staging = version.with_name(version.name + ".tmp")
    staging.mkdir()
    write(staging)
    for file in staging.iterdir():
        _sync(file)
    _sync(staging)
    staging.rename(version)
    _point(link, version)
    recover(link)  # the replaced model goes only now that nothing names it
    return version


def _next_version(link: Path) -> int:
    return 1 + max((n for n, _ in _versions(link)), default=0)


def _point(link: Path, target: Path) -> None:
    """Make ``link`` a symbolic link to ``target`` (a sibling) in one atomic rename."""
    staged = link.with_name(link.name + ".link")
    if staged.is_symlink() or staged.exists():
        staged.unlink()
    os.symlink(target.name, staged)
    if link.is_dir() and not link.is_symlink():
        # the plain layout: a link cannot replace a directory, so the live model steps
        # aside first; a kill now leaves no link, and current() reads the newest version
        aside = link.with_name(link.name + ".old")
        if aside.exists():
            shutil.rmtree(aside)
        link.rename(aside)
    os.replace(staged, link)
    _sync(link.parent)


def _ours(link: Path, name: str) -> bool:
    """Whether ``name`` is one of the model's directories or leftovers (``work/`` and the
    other files beside it are not)."""
    if not name.startswith(link.name) or name == link.name:
        return False
    rest = name[len(link.name) :]
    rest = rest[: -len(".tmp")] if rest.endswith(".tmp") and rest != ".tmp" else rest
    return rest in _LEFTOVERS or _VERSION.fullmatch(rest) is not None


def _sync(path: Path) -> None:
    """Flush ``path`` (a file, or a directory's entries) to disk: after a power cut the
    link must not name a directory whose files never reached it."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
