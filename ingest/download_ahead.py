"""Downloads running beside the ingest: several files at once, handed over in order.

Fetching the whole baseline (51.8 GB) before ingesting any of it would leave the ingest
idle for hours; :class:`BackgroundDownload` fetches on its own threads and hands each
verified file to the running ingest (:class:`ingest.incoming.Incoming`) as soon as it
and every file before it have landed, so downloading and ingesting overlap
(BENCHMARKS.md, "Ingest"). The fetching itself, with its retries, resumes and checksums,
is :mod:`ingest.download`'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from ingest.download import Progress, RemoteFile, Sleep, download_verified

CONNECTIONS = 2
"""Files fetched at once by ``ingest --download`` unless ``--connections`` says
otherwise: where one connection is held back by the link's latency, a second doubles
the rate, and two stay polite to NCBI's servers."""


class Stopped(Exception):
    """A :class:`BackgroundDownload` was asked to stop; its ``.part`` file resumes later."""


class BackgroundDownload:
    """Fetch ``chosen`` on ``connections`` threads, handing each verified file to
    ``deliver`` (its path and the MD5 it was checked against) in the listing's order as
    soon as it and every file before it have landed, so an ingest parses one file while
    the next ones download: the baseline is hours of downloading and about an hour of
    ingest on 16 cores, and taking turns costs their sum. Several connections help where
    one is held back by the link's latency rather than its bandwidth (a long way to NCBI).

    ``ahead``: how many files may be on disk (downloading, or delivered and not yet
    :meth:`release`: the ingest is done with them, and may have deleted them) before
    the next download starts; None: no bound. ``progress(bytes, total)``: bytes of all
    files so far (a file already complete counts whole), ``total`` from the listing (None
    when it gives no sizes). ``ended(error)`` is called once when every thread has
    stopped: ``error`` is None when every file came, else what stopped the first file
    that failed (a :class:`DownloadError`, a full disk), also kept in :attr:`error`;
    files after it are not delivered (updates apply in order) but stay on disk, verified,
    for the next run. :meth:`stop` (Ctrl-C, a failed ingest) leaves ``.part`` files for
    the next run to resume.
    """

    def __init__(
        self,
        chosen: list[RemoteFile],
        dest_dir: Path,
        deliver: Callable[[Path, str], None],
        ended: Callable[[BaseException | None], None],
        *,
        connections: int = 1,
        ahead: int | None = None,
        progress: Progress | None = None,
        on_file: Callable[[RemoteFile, int, int], None] | None = None,
        retries: int = 5,
        backoff: float = 1.0,
        timeout: float = 60,
        sleep: Sleep | None = None,
    ) -> None:
        if ahead is not None and ahead < 1:
            raise ValueError("ahead must be at least 1")
        if connections < 1:
            raise ValueError("connections must be at least 1")
        self.chosen = chosen
        self.dest_dir = dest_dir
        self.deliver = deliver
        self.ended = ended
        self.ahead = ahead
        self.progress = progress
        self.on_file = on_file
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self.sleep: Sleep = sleep or self._pause
        self.error: BaseException | None = None
        self.fetched: list[Path] = []
        """The files delivered, in order."""
        sizes = [r.size for r in chosen]
        self.total_bytes = None if None in sizes else sum(s for s in sizes if s is not None)
        self._cond = threading.Condition()
        self._deliveries = threading.Lock()  # one thread delivers at a time, in order
        self._next = 0  # the next file to start
        self._landed: dict[int, tuple[Path, str]] = {}  # verified, waiting for earlier ones
        self._delivered = 0
        self._released = 0
        self._failed_at: int | None = None
        self._bytes: dict[int, int] = {}
        self._bytes_done = 0
        self._running = 0
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._fetch, name=f"download-{n}", daemon=True)
            for n in range(min(connections, max(1, len(chosen))))
        ]

    def start(self) -> BackgroundDownload:
        self._running = len(self._threads)
        for thread in self._threads:
            thread.start()
        return self

    def release(self) -> None:
        """The ingest is done with one delivered file: another may come."""
        with self._cond:
            self._released += 1
            self._cond.notify_all()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop at the next chunk (``.part`` files stay) and wait up to ``timeout`` s."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive() and thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def join(self, timeout: float | None = None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> BackgroundDownload:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _pause(self, seconds: float) -> None:
        """A retry's backoff that :meth:`stop` cuts short."""
        self._stop.wait(seconds)

    def _take(self) -> int | None:
        """The next file this thread may fetch, once the window has room; None: no more."""
        with self._cond:
            while True:
                if self._stop.is_set() or self._failed_at is not None:
                    return None
                if self._next >= len(self.chosen):
                    return None
                if self.ahead is None or self._next < self._released + self.ahead:
                    self._next += 1
                    return self._next - 1
                self._cond.wait(0.5)

    def _fetch(self) -> None:
        try:
            while (index := self._take()) is not None:
                try:
                    if self.on_file is not None:
                        self.on_file(self.chosen[index], index, len(self.chosen))
                    landed = download_verified(
                        self.chosen[index],
                        self.dest_dir,
                        retries=self.retries,
                        backoff=self.backoff,
                        timeout=self.timeout,
                        progress=self._counter(index),
                        sleep=self.sleep,
                    )
                except Stopped:
                    return
                except BaseException as exc:  # handed to the ingest's thread, which reports it
                    self._fail(index, exc)
                    return
                with self._cond:
                    self._landed[index] = landed
                self._deliver_in_order()
        finally:
            with self._cond:
                self._running -= 1
                last = self._running == 0
            if last:
                self.ended(self.error)

    def _fail(self, index: int, error: BaseException) -> None:
        """File ``index`` failed: nothing from it on is delivered, and no file starts."""
        with self._cond:
            if self._failed_at is None or index < self._failed_at:
                self.error, self._failed_at = error, index
            self._cond.notify_all()

    def _deliver_in_order(self) -> None:
        with self._deliveries:
            while True:
                with self._cond:
                    if self._failed_at is not None and self._delivered >= self._failed_at:
                        return
                    landed = self._landed.pop(self._delivered, None)
                    if landed is None:
                        return
                    index = self._delivered
                    self._delivered += 1
                try:
                    self.deliver(*landed)
                except BaseException as exc:  # the receiving side failed: stop as on a fetch
                    self._fail(index, exc)
                    return
                self.fetched.append(landed[0])

    def _counter(self, index: int) -> Progress:
        """File ``index``'s byte callback: adds to the total, and is where a stop lands."""

        def count(done: int, total: int | None) -> None:
            if self._stop.is_set():
                raise Stopped
            with self._cond:
                self._bytes_done += done - self._bytes.get(index, 0)
                self._bytes[index] = done
                so_far = self._bytes_done
            if self.progress is not None:
                self.progress(so_far, self.total_bytes)

        return count
