"""Parse files in parallel processes; hand their records to one writer, in file order.

Each input file is parsed by its own child process that streams batches through a
bounded queue, so memory stays flat (at most ``QUEUE_BATCHES`` batches per file in
flight) and the writer applies files strictly in the order given (NCBI's order, see
:mod:`ingest.inputs`), as update semantics require. Up to ``jobs`` files are parsed
ahead of the one being written, which keeps both cores busy: one parses while the other
writes SQLite and tantivy.

Children come from a ``forkserver``: forking the writer itself would copy tantivy's and
torch's threads, which is unsafe.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medsearch.errors import ParseError

BATCH_SIZE = 1000
QUEUE_BATCHES = 8
POLL_SECONDS = 0.5

# Messages from a parser: ("articles", PreparedBatch) | ("delete", (pmid...)) |
# ("done", None) | ("error", (problem, position))
Message = tuple[str, Any]


def _parse_messages(
    path: Path, batch_size: int, dictionary: bytes | None, full: bool
) -> Iterator[Message]:
    from ingest.prepare import messages
    from ingest.pubmed_xml import parse_file

    try:
        yield from messages(parse_file(path), batch_size, dictionary, full=full)
    except ParseError as exc:
        yield ("error", (exc.problem, exc.position))
    except MemoryError:
        yield ("error", ("out of memory while parsing", None))
    except Exception as exc:  # a parser bug must not take the whole ingest down
        yield ("error", (f"unexpected parser failure: {type(exc).__name__}: {exc}", None))


def _child_main(
    path: str, out: mp.Queue[Message], batch_size: int, dictionary: bytes | None, full: bool
) -> None:
    # The writer owns Ctrl-C: it rolls back and stops us; we must not die half-way first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getppid()
    for message in _parse_messages(Path(path), batch_size, dictionary, full):
        while True:
            try:
                out.put(message, timeout=POLL_SECONDS)
                break
            except queue.Full:
                if os.getppid() != parent:  # the writer died (kill -9): do not linger
                    os._exit(1)


@dataclass
class _Running:
    path: Path
    process: mp.process.BaseProcess | None
    out: mp.Queue[Message] | None


class ParserPool:
    """Iterate ``(path, messages)`` in the given order, parsing up to ``jobs`` files ahead.

    ``jobs=0`` parses in the calling process (no children): simplest for debugging and
    for very small inputs.

    With two or more parsers (or none), each also compresses its rows (with
    the store's dictionary, asked of ``dictionary`` as each file starts: None until the
    store has one) and builds the lexical documents, so the writer only appends and
    more cores make ingest faster. A single parser is the critical path instead, so it
    leaves that work to the writer (see :mod:`ingest.prepare`).
    """

    def __init__(
        self,
        paths: Sequence[Path],
        *,
        jobs: int,
        batch_size: int = BATCH_SIZE,
        dictionary: Callable[[], bytes | None] = lambda: None,
    ):
        self.paths = list(paths)
        self.jobs = max(0, jobs)
        self.batch_size = batch_size
        self.dictionary = dictionary
        self.full = self.jobs != 1  # in-process (0) it saves rebuilding every article
        self._running: deque[_Running] = deque()
        self._ctx = mp.get_context("forkserver") if self.jobs else None
        if self._ctx is not None:
            self._ctx.set_forkserver_preload(["ingest.pubmed_xml", "ingest.prepare"])

    def __iter__(self) -> Iterator[tuple[Path, Iterator[Message]]]:
        pending = deque(self.paths)
        try:
            while pending or self._running:
                while pending and len(self._running) < max(1, self.jobs):
                    self._running.append(self._start(pending.popleft()))
                current = self._running[0]
                yield current.path, self._messages(current)
                self._running.popleft()
                self._stop(current)
        finally:
            self.close()

    def close(self) -> None:
        """Stop every child (after Ctrl-C or an error that ends the run)."""
        while self._running:
            self._stop(self._running.popleft())

    def _start(self, path: Path) -> _Running:
        if self._ctx is None:
            return _Running(path, None, None)
        out: mp.Queue[Message] = self._ctx.Queue(maxsize=QUEUE_BATCHES)
        proc = self._ctx.Process(
            target=_child_main,
            args=(str(path), out, self.batch_size, self.dictionary(), self.full),
            daemon=True,
        )
        proc.start()
        return _Running(path, proc, out)

    def _messages(self, running: _Running) -> Iterator[Message]:
        if running.process is None or running.out is None:
            yield from _parse_messages(running.path, self.batch_size, self.dictionary(), self.full)
            return
        while True:
            try:
                message = running.out.get(timeout=POLL_SECONDS)
            except queue.Empty:
                if running.process.is_alive():
                    continue
                try:
                    message = running.out.get(timeout=POLL_SECONDS)
                except queue.Empty:
                    code = running.process.exitcode
                    yield ("error", (f"parser process died (exit code {code})", None))
                    return
            yield message
            if message[0] in ("done", "error"):
                return

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
