"""One writer per data home: ``ingest``, ``rerank train`` and eval builds take a lock.

Two processes appending to the same vector files, or a second ingest applying files
the first is half-way through, would leave the store and indexes disagreeing. The lock
is an advisory ``flock`` on ``writer.lock`` in the data home: the kernel drops it when
its holder exits however it exits (Ctrl-C, kill -9, a crash), so a stale lock can never
block the next run. Searches take no lock; they read only what the last commit counted
(see :func:`medsearch.index.vectors.collection.VectorCollection.open` with ``readonly``).

The holder writes its PID and command into the file, so the refusal can say who holds it.
Within one process the lock is re-entrant (``eval`` trains inside its own build).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from medsearch.errors import BusyError
from medsearch.paths import Paths

try:  # POSIX; on other systems the lock is a no-op and the rule is the user's to keep
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

LOCK_FILE = "writer.lock"
_held: dict[Path, tuple[int, int]] = {}  # lock file -> (fd, depth) held by this process


def holder(paths: Paths) -> dict[str, object] | None:
    """Who wrote the lock file last (PID, command, start time), if it says."""
    try:
        raw = json.loads((paths.home / LOCK_FILE).read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) else None


def active_writer(paths: Paths) -> dict[str, object] | None:
    """The process writing the data home now (PID, command, since), or None.

    Only a held lock counts: a file left by a killed writer says nothing.
    """
    file = paths.home / LOCK_FILE
    if fcntl is None or not file.exists():
        return None
    if (paths.home / LOCK_FILE).resolve() in _held:
        return holder(paths)
    fd = os.open(file, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return holder(paths) or {}
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


@contextmanager
def write_lock(paths: Paths, command: str) -> Iterator[None]:
    """Hold the data home's writer lock for ``command``, or raise :class:`BusyError`."""
    file = (paths.home / LOCK_FILE).resolve()
    held = _held.get(file)
    if held is not None:
        _held[file] = (held[0], held[1] + 1)
        try:
            yield
        finally:
            fd, depth = _held[file]
            _held[file] = (fd, depth - 1)
        return
    file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        who = holder(paths) or {}
        since = f", started {who['since']}" if "since" in who else ""
        by = f" (`medsearch {who['command']}`, PID {who['pid']}{since})" if "pid" in who else ""
        raise BusyError(
            f"another medsearch process{by} is writing the data home {paths.home}; wait"
            " for it to finish or stop it, then run this again (searching is fine meanwhile)"
        ) from None
    stamp = {"pid": os.getpid(), "command": command, "since": time.strftime("%Y-%m-%dT%H:%M:%S")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(stamp).encode(), 0)
    _held[file] = (fd, 1)
    try:
        yield
    finally:
        _held.pop(file, None)
        try:
            os.ftruncate(fd, 0)
        finally:
            os.close(fd)  # closing the descriptor releases the flock
