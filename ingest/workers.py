"""Parse files in parallel processes; hand their records to one writer, in file order.

Each input file is parsed by its own child process, which writes its batches to a spool
file and tells the writer, through a queue of small notices, how far the spool is
complete. The writer applies files strictly in the order given (NCBI's order, see
:mod:`ingest.inputs`), as update semantics require, reading each spool back one batch
at a time, so memory stays flat whatever a file holds.

Why spool files and not a bounded queue of batches: a baseline file holds 30,000
articles, and a queue of 8 batches would let the parser of a file ahead of the writer
run only 8,000 articles ahead before it blocked. On many cores every parser but the one
of the file being written would then stand still, and ingest would run at about one
parser's speed however many ``jobs`` it had. Through a spool a parser never waits for the writer: it
finishes its file and the next file starts. At most ``jobs`` files parse at once and
:data:`SPOOL_AHEAD` more wait, parsed, for the writer, so the disk holds a few files'
batches (~2.9 KB a real article pickled: ~90 MB a baseline file), in the data home's ``tmp``
folder, removed as each file is written. More waiting files would only help a writer
that is already the slower side, and each one is ~90 MB more written to the SSD (a
spool read back within the kernel's writeback delay, ~30 s, may never reach it).

Children come from a ``forkserver``: forking the writer itself would copy tantivy's and
torch's threads, which is unsafe.
"""

from __future__ import annotations

import errno
import multiprocessing as mp
import os
import pickle
import queue
import shutil
import signal
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ingest.children import safe_path
from medsearch.errors import ParseError
from medsearch.store.db import is_disk_full

BATCH_SIZE = 1000
SPOOL_AHEAD = 2  # parsed files that may wait for the writer beside the ones parsing
MAX_PARSERS = 8  # the default's cap: 8 parsers outrun one writer thread (default_jobs)
POLL_SECONDS = 0.5
SPOOL_PREFIX = "parse-"

# Messages from a parser: ("articles", WriterBatch) | ("delete", (pmid...)) |
# ("skipped", (count, bad PMID texts)) just before ("done", None) | ("error", (problem,
# position))
Message = tuple[str, Any]
# What a child puts on its queue: ("spooled", end offset) after each message it wrote to
# its spool, then the last message itself, ("done", None) or ("error", ...), or
# ("disk full", (errno, strerror, spool)) when the spool could not be written
Notice = tuple[str, Any]


def _parse_messages(path: Path, batch_size: int, dictionary: bytes | None) -> Iterator[Message]:
    from ingest import medline, pubmed_xml
    from ingest.sources import reads_as_medline
    from ingest.writer_rows import messages

    stats = pubmed_xml.ParseStats()
    try:
        read = medline.parse_file if reads_as_medline(path) else pubmed_xml.parse_file
        for message in messages(read(path, stats=stats), batch_size, dictionary):
            if message[0] == "done" and stats.skipped:  # records without a valid PMID
                yield ("skipped", (stats.skipped, tuple(stats.bad_pmids)))
            yield message
    except ParseError as exc:
        yield ("error", (exc.problem, exc.position))
    except MemoryError:
        yield ("error", ("out of memory while parsing", None))
    except Exception as exc:  # a parser bug must not take the whole ingest down
        yield ("error", (f"unexpected parser failure: {one_line(exc)}", None))


def one_line(exc: BaseException) -> str:
    """``ImportError: No module named 'x'``: an exception as one line of a failure."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def died(exit_code: int | None) -> str:
    """Why a parser process ended without a word: its exit code, or the signal."""
    if exit_code is not None and exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        memory = " (the system may have run out of memory)" if name == "SIGKILL" else ""
        return f"parser process killed by {name}{memory}"
    return f"parser process died (exit code {exit_code})"


def _child_main(
    path: str,
    spool: str,
    out: mp.Queue[Notice],
    batch_size: int,
    dictionary: bytes | None,
) -> None:
    # The writer owns Ctrl-C: it rolls back and stops us; we must not die half-way first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    try:
        with open(spool, "wb") as f:
            for message in _parse_messages(Path(path), batch_size, dictionary):
                if os.getppid() != parent:  # the writer died (kill -9): do not linger
                    os._exit(1)
                if message[0] in ("done", "error"):
                    out.put(message)
                    return
                pickle.dump(message, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.flush()
                out.put(("spooled", f.tell()))
    except OSError as exc:  # the spool could not be written
        if is_disk_full(exc):  # the writer stops as on any full disk
            out.put(("disk full", (exc.errno or errno.ENOSPC, exc.strerror, spool)))
        else:
            problem = f"cannot write parsed records to {spool}: {exc.strerror or exc}"
            out.put(("error", (problem, None)))
    except Exception as exc:  # e.g. the parser's modules do not import here: say so
        out.put(("error", (f"parser process failed: {one_line(exc)}", None)))


def remove_stale_spools(root: Path) -> None:
    """Spool folders of runs that were killed (their writer's pid is gone)."""
    for folder in root.glob(f"{SPOOL_PREFIX}*"):
        pid = folder.name.removeprefix(SPOOL_PREFIX).split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Arrivals:
    """Input files in the order they are to be applied, some perhaps still to come.

    A download running beside the ingest adds each file as it lands (and its checksum
    is verified) and ends the feed when it is done or fails; the parsers start each file
    as soon as it is here, so downloading and ingesting overlap instead of taking turns
    (a baseline is hours of either). A list of files already on disk is a feed that has
    ended. Thread-safe: one thread adds, the writer's thread takes.
    """

    def __init__(self, paths: Iterable[Path] = (), *, ended: bool = True) -> None:
        self._queue: deque[Path] = deque(paths)
        self._ended = ended
        self._taken = 0
        self._cond = threading.Condition()

    def add(self, path: Path) -> None:
        with self._cond:
            if self._ended:
                raise RuntimeError("no file can be added to an ended feed")
            self._queue.append(path)
            self._cond.notify_all()

    def end(self) -> None:
        """Nothing more will come (the download finished, failed or was stopped)."""
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    def poll(self) -> Path | None:
        """The next file if it is here; never waits."""
        with self._cond:
            if not self._queue:
                return None
            self._taken += 1
            return self._queue.popleft()

    def wait(self, timeout: float) -> None:
        """Until a file is here, the feed ends, or ``timeout`` seconds pass."""
        with self._cond:
            if not self._queue and not self._ended:
                self._cond.wait(timeout)

    @property
    def taken(self) -> int:
        """Files handed out by :meth:`poll` so far."""
        return self._taken

    @property
    def exhausted(self) -> bool:
        """Ended, and every file taken."""
        with self._cond:
            return self._ended and not self._queue


@dataclass
class _Running:
    path: Path
    process: mp.process.BaseProcess | None
    out: mp.Queue[Notice] | None
    spool: Path | None
    notices: deque[Notice] = field(default_factory=deque)
    """Notices taken off ``out`` by :meth:`ParserPool.parsed_whole`, not yet read."""


class ParserPool:
    """Iterate ``(path, messages)`` in the given order, parsing up to ``jobs`` files at once.

    ``paths``: the files, or an :class:`Arrivals` feed whose files may still be coming
    (each starts parsing as it arrives; iteration ends once the feed has ended).

    ``jobs=0`` parses in the calling process (no children): simplest for debugging and
    for very small inputs. ``spool_root``: where the children's spool files go (the
    data home's ``tmp``; default the system's temporary folder).

    Each parser also compresses its rows (with the store's dictionary, asked of
    ``dictionary`` as each file starts: None until the store has one) and builds the
    lexical documents, so the writer only appends and more cores make ingest faster
    (see :mod:`ingest.writer_rows`).
    """

    def __init__(
        self,
        paths: Sequence[Path] | Arrivals,
        *,
        jobs: int,
        batch_size: int = BATCH_SIZE,
        dictionary: Callable[[], bytes | None] = lambda: None,
        spool_root: Path | None = None,
    ):
        self.jobs = max(0, jobs)
        self.batch_size = batch_size
        self.dictionary = dictionary
        self._pending = paths if isinstance(paths, Arrivals) else Arrivals(paths)
        self._running: deque[_Running] = deque()
        self._ctx = mp.get_context("forkserver") if self.jobs else None
        self.spools: Path | None = None
        """This run's folder of spool files (None when parsing in-process)."""
        if self._ctx is not None:
            self._ctx.set_forkserver_preload(
                ["ingest.pubmed_xml", "ingest.medline", "ingest.writer_rows"]
            )
            root = Path(spool_root) if spool_root is not None else Path(tempfile.gettempdir())
            root.mkdir(parents=True, exist_ok=True)
            remove_stale_spools(root)
            self.spools = Path(tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", dir=root))

    def __iter__(self) -> Iterator[tuple[Path, Iterator[Message]]]:
        try:
            while True:
                self._top_up()
                if not self._running:
                    if self._pending.exhausted:
                        return
                    self._pending.wait(POLL_SECONDS)  # the next file is still downloading
                    continue
                current = self._running[0]
                yield current.path, self._messages(current)
                self._running.popleft()
                self._stop(current)
        finally:
            self.close()

    def close(self) -> None:
        """Stop every child (after Ctrl-C or an error that ends the run), remove the spools."""
        while self._running:
            self._stop(self._running.popleft())
        if self.spools is not None:
            shutil.rmtree(self.spools, ignore_errors=True)
            self.spools = None

    def parsed_whole(self) -> bool:
        """Whether the file just yielded is parsed to its end without error: its spool is
        whole and its messages cannot fail. Never waits (False when in doubt, and always
        in-process); the writer asks so it can join that file to the unit it is writing
        (see :mod:`ingest.pipeline`)."""
        running = self._running[0] if self._running else None
        if running is None or running.out is None:
            return False
        while True:
            try:
                running.notices.append(running.out.get_nowait())
            except queue.Empty:
                break
        return bool(running.notices) and running.notices[-1][0] == "done"

    def parsing(self) -> int:
        """Files being parsed now (at most ``jobs``)."""
        return sum(1 for r in self._running if r.process is not None and r.process.is_alive())

    def in_flight(self) -> int:
        """Files started and not yet written (at most ``jobs`` + :data:`SPOOL_AHEAD`)."""
        return len(self._running)

    def _top_up(self) -> None:
        """Start the next files while fewer than ``jobs`` parse and fewer than
        ``jobs`` + :data:`SPOOL_AHEAD` are in flight (one when in-process)."""
        if self._ctx is None:
            if not self._running and (path := self._pending.poll()) is not None:
                self._running.append(_Running(path, None, None, None))
            return
        while len(self._running) < self.jobs + SPOOL_AHEAD and self.parsing() < self.jobs:
            if (path := self._pending.poll()) is None:
                return
            self._running.append(self._start(path))

    def _start(self, path: Path) -> _Running:
        assert self._ctx is not None and self.spools is not None
        spool = self.spools / f"{self._pending.taken:06d}.spool"
        with safe_path():  # the forkserver and resource tracker start here, once
            out: mp.Queue[Notice] = self._ctx.Queue()  # notices only: a few per 1,000 articles
            proc = self._ctx.Process(
                target=_child_main,
                args=(str(path), str(spool), out, self.batch_size, self.dictionary()),
                daemon=True,
            )
            proc.start()
        return _Running(path, proc, out, spool)

    def _messages(self, running: _Running) -> Iterator[Message]:
        if running.process is None or running.out is None or running.spool is None:
            yield from _parse_messages(running.path, self.batch_size, self.dictionary())
            return
        spool: BinaryIO | None = None
        try:
            while True:
                notice = self._notice(running)
                if notice[0] == "disk full":  # raised as the store's own writes would be
                    raise OSError(*notice[1])
                if notice[0] != "spooled":
                    yield notice
                    return
                if spool is None:
                    spool = open(running.spool, "rb")  # noqa: SIM115 (closed below)
                yield pickle.loads(spool.read(notice[1] - spool.tell()))
        finally:
            if spool is not None:
                spool.close()

    def _notice(self, running: _Running) -> Notice:
        """The child's next notice; other files start meanwhile as parsers finish."""
        assert running.process is not None and running.out is not None
        while True:
            self._top_up()
            if running.notices:  # taken off the queue by parsed_whole
                return running.notices.popleft()
            try:
                notice: Notice = running.out.get(timeout=POLL_SECONDS)
                return notice
            except queue.Empty:
                if running.process.is_alive():
                    continue
                try:
                    notice = running.out.get(timeout=POLL_SECONDS)
                    return notice
                except queue.Empty:
                    return ("error", (died(running.process.exitcode), None))

    @staticmethod
    def _stop(running: _Running) -> None:
        proc, out = running.process, running.out
        if proc is None or out is None:
            return
        if proc.is_alive():
            proc.terminate()
        proc.join(timeout=5)
        out.cancel_join_thread()
        out.close()
        if running.spool is not None:
            running.spool.unlink(missing_ok=True)
