"""The vector stage as a pipeline that keeps every device busy.

Three kinds of thread, joined by bounded queues::

    reader ──(prepared chunks)──> one encoder per device ──(vectors)──> writer (caller)

- The *reader* fetches stale articles with its own read-only store connection, splits
  sentences, tokenises with the ``tokenizers`` batch API and pads batches on the host:
  everything that would otherwise run serially between GPU calls. With GPUs it hands each
  chunk to worker processes (``encode_readers.chunks_in_processes``), so that Python
  work does not hold the GIL against the threads launching kernels.
- Each *device* thread takes the next prepared chunk when it is free (work stealing: a
  faster GPU simply takes more chunks, so shares balance without a plan) and runs the
  forward passes, copying host batches through pinned memory.
- The *writer* is the calling thread: it adds vectors to the collections and commits,
  in whatever order chunks finish. Nothing is recorded in ``encoded`` before its
  vectors are committed, so the order of writes cannot break resume.

The queues are bounded (:data:`AHEAD` prepared and :data:`DONE_AHEAD` encoded chunks
per device), so memory stays flat however large the corpus. Errors anywhere (out of
memory past back-off, a full disk, Ctrl-C in the caller) stop every thread and re-raise
in the caller: the guarantees of the serial stage hold. The logic needs no GPU: tests
run it with two CPU "devices".
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

import numpy as np

if TYPE_CHECKING:
    from medsearch.models.encoders import Encoder
    from medsearch.models.host_text import Prepared

AHEAD = 2  # prepared chunks waiting per device: enough to hide a slow chunk, little memory
# Encoded chunks waiting per device for the writer, so that the GPUs go on through a
# commit. At PubMed scale a sentence commit streams the id lookup (16 bytes a sentence:
# ~5.6 GB at 350M) and writes or merges parts: ~10-20 s, while a GPU chunk (8,192
# articles' sentences, ~216 MB of float32 vectors) took ~2.3 s on an H200. With 2 slots
# the GPU stood still for the rest of every commit, and commits may take 10% of the
# stage (``encode_loop.COMMIT_SHARE``); 8 hide ~18 s for at most ~1.7 GB per GPU.
DONE_AHEAD = 8
_POLL = 0.1  # seconds between checks of the stop flag (Ctrl-C stays prompt)

M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Chunk(Generic[M]):
    """A prepared piece of work: texts on the host, and what the writer needs to store them."""

    seq: int
    meta: M
    prepared: Prepared


@dataclass(frozen=True, slots=True)
class Encoded(Generic[M]):
    """A chunk's vectors (rows in the order of ``chunk.prepared``) and where they were made."""

    chunk: Chunk[M]
    vectors: np.ndarray
    device: str
    seconds: float


class _Failed:
    """An exception raised in a worker thread, carried to the caller."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = object()


def _put(q: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Put unless the pipeline is stopping; False when it is."""
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL)
            return True
        except queue.Full:
            continue
    return False


def _get(q: queue.Queue[object], stop: threading.Event) -> object | None:
    while not stop.is_set():
        try:
            return q.get(timeout=_POLL)
        except queue.Empty:
            continue
    return None


def run_pipeline(
    chunks: Callable[[], Iterator[Chunk[M]]],
    encoders: Sequence[Encoder],
    write: Callable[[Encoded[M]], None],
    *,
    threaded: bool | None = None,
    busy: dict[str, float] | None = None,
    firsts: dict[str, float] | None = None,
) -> None:
    """Encode every chunk ``chunks()`` yields on ``encoders``; ``write`` each result.

    ``chunks`` is called in the reader thread (so it may open its own connections
    there). ``write`` runs in the calling thread, once per chunk, in completion order.

    ``threaded=None`` runs the threads unless the only device is the CPU: there torch
    already keeps every core busy, and a reader thread beside it only makes OpenMP's
    spinning workers contend (a 2-core machine ran slower), so the chunks are read and
    encoded in turn.

    ``busy`` (when given) accumulates each part's working seconds, waits excluded:
    ``read`` (fetching, splitting, tokenising), one key per device, and ``write``. The
    part whose busy time is closest to the wall time is what bounds the stage; each
    key is written by one thread only.

    ``firsts`` (when given) gets, per part, the seconds from the start to the end of its
    first item: how long the devices waited for the reader, and the writer for them.
    """
    clock: dict[str, float] = busy if busy is not None else {}
    origin = time.perf_counter()

    def spent(key: str, since: float) -> None:
        now = time.perf_counter()
        clock[key] = clock.get(key, 0.0) + now - since
        if firsts is not None and key not in firsts:
            firsts[key] = now - origin

    def read_timed() -> Iterator[Chunk[M]]:
        """``chunks()``, with the time spent making each one counted as ``read``."""
        produced = iter(chunks())
        while True:
            t0 = time.perf_counter()
            chunk = next(produced, None)
            spent("read", t0)
            if chunk is None:
                return
            yield chunk

    if not encoders:
        raise ValueError("run_pipeline needs at least one encoder")
    if threaded is None:
        threaded = not (len(encoders) == 1 and encoders[0].device == "cpu")
    if not threaded:
        device = encoders[0].device
        for chunk in read_timed():
            t0 = time.perf_counter()
            vectors = encoders[0].run(chunk.prepared)
            spent(device, t0)
            t1 = time.perf_counter()
            write(Encoded(chunk, vectors, device, t1 - t0))
            spent("write", t1)
        return
    stop = threading.Event()
    todo: queue.Queue[object] = queue.Queue(maxsize=AHEAD * len(encoders))
    done: queue.Queue[object] = queue.Queue(maxsize=DONE_AHEAD * len(encoders))

    def read() -> None:
        try:
            for chunk in read_timed():
                if not _put(todo, chunk, stop):
                    return
        except BaseException as error:  # carried to the caller, re-raised there
            _put(done, _Failed(error), stop)
            return
        for _ in encoders:
            _put(todo, _DONE, stop)

    import torch  # only here: the pipeline's logic needs no torch

    omp_threads = torch.get_num_threads()  # OpenMP's thread count is per thread: carry ours

    def encode(encoder: Encoder) -> None:
        try:
            torch.set_num_threads(omp_threads)
            if encoder.device.startswith("cuda:"):
                torch.cuda.set_device(torch.device(encoder.device))  # per thread
            while (item := _get(todo, stop)) is not None and item is not _DONE:
                assert isinstance(item, Chunk)
                t0 = time.perf_counter()
                vectors = encoder.run(item.prepared)
                result = Encoded(item, vectors, encoder.device, time.perf_counter() - t0)
                spent(encoder.device, t0)
                if not _put(done, result, stop):
                    return
        except BaseException as error:  # carried to the caller, re-raised there
            _put(done, _Failed(error), stop)
            return
        _put(done, _DONE, stop)

    threads = [threading.Thread(target=read, name="encode-reader", daemon=True)]
    threads += [
        threading.Thread(target=encode, args=(e,), name=f"encode-{e.device}", daemon=True)
        for e in encoders
    ]
    for thread in threads:
        thread.start()
    try:
        finished = 0
        while finished < len(encoders):
            try:
                item = done.get(timeout=_POLL)  # a timeout keeps Ctrl-C prompt everywhere
            except queue.Empty:
                continue
            if item is _DONE:
                finished += 1
            elif isinstance(item, _Failed):
                raise item.error
            else:
                assert isinstance(item, Encoded)
                t0 = time.perf_counter()
                write(item)
                spent("write", t0)
    finally:
        stop.set()
        for thread in threads:
            thread.join()


@dataclass
class Rate:
    """Articles and tokens per second since the start, for progress and the summary."""

    started: float
    articles: int = 0
    tokens: int = 0
    vectors: int = 0
    """Vectors written: one per article, or each abstract sentence."""
    ended: float | None = None
    busy: dict[str, float] = field(default_factory=dict)
    """Working seconds per part of the pipeline (see :func:`run_pipeline`), plus ``commit``."""
    firsts: dict[str, float] = field(default_factory=dict)
    """Seconds from the pipeline's start to each part's first finished item."""

    @classmethod
    def start(cls) -> Rate:
        return cls(time.monotonic())

    def add(self, articles: int, tokens: int, vectors: int = 0) -> None:
        self.articles += articles
        self.tokens += tokens
        self.vectors += vectors

    def stop(self) -> None:
        """Freeze the clock: the summary reports this kind's own time, not the stage's."""
        self.ended = time.monotonic()

    @property
    def seconds(self) -> float:
        end = self.ended if self.ended is not None else time.monotonic()
        return max(end - self.started, 1e-9)

    def bottleneck(self) -> str:
        """Where the time went, e.g. ``read 40.1 s, cuda:0 5.2 s, write 3.0 s (commit 2.1 s)``.

        Parts run at once, so the one nearest the wall time limits the rate: the reader
        means more CPU work per article than the devices can use, a device means the GPU
        is the limit (as it should be), the writer means Faiss adds or commits.
        """
        parts = [f"{k} {v:,.1f} s" for k, v in self.busy.items() if k != "commit"]
        text = ", ".join(parts)
        if "commit" in self.busy:
            text += f" (commits {self.busy['commit']:,.1f} s)"
        return text

    def startup(self) -> str:
        """``first chunk read after 0.3 s, encoded after 0.6 s, written after 0.7 s``: what
        the devices waited for before the rate could build up (paid once a run)."""
        devices = [v for k, v in self.firsts.items() if k not in ("read", "write")]
        parts = [
            f"{label} after {value:,.1f} s"
            for label, value in (
                ("read", self.firsts.get("read")),
                ("encoded", min(devices) if devices else None),
                ("written", self.firsts.get("write")),
            )
            if value is not None
        ]
        return f"first chunk {', '.join(parts)}" if parts else ""

    def describe(self) -> str:
        """``1,234 articles/s, 1.2M tokens/s``: what a user watching an ingest wants."""
        return (
            f"{self.articles / self.seconds:,.0f} articles/s,"
            f" {human_rate(self.tokens / self.seconds)} tokens/s"
        )


def human_rate(value: float) -> str:
    """1234 -> '1.2K', 1_600_000 -> '1.6M' (rates are read at a glance, not exactly)."""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if value >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"
