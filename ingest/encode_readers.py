"""The vector stage's readers: the stale articles, a chunk at a time, fetched, split
into sentences where the kind wants them, and tokenised, ready for the devices.

On a CPU one thread in this process reads (:func:`chunks_in_thread`: torch uses every
core there). With GPUs, spawned worker processes do it (:func:`chunks_in_processes`,
:func:`start` and :func:`chunk_in_worker` run in them): each opens its own read-only store
connection once and imports no torch, so a worker costs a tokenizer and a connection,
not a model.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.children import safe_path
from ingest.encode_chunks import ARTICLES, ChunkBuilder, ChunkRows, article_chunk, sentence_chunk
from ingest.encode_pipeline import Chunk
from ingest.encoded import fetch, stale_pmids
from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.models.host_text import HostTokenizer, Prepared

CHUNK = 256  # articles read and encoded together on a CPU
# ... and on a GPU: ~20 batches of 128K tokens, so length sorting has material to work
# with and the per-chunk costs (a store read, a queue hand-off) vanish.
GPU_CHUNK = 8_192
# ... but the first GPU chunk is cut into growing pieces (1,024, 1,024, 2,048, 4,096), so
# the device starts after one small piece is prepared, not after a whole chunk (2 cores:
# the first piece after 0.67 s, a whole chunk after 5.4 s).
RAMP_FIRST = 1_024


def chunk_size(device: str) -> int:
    """Articles per chunk: :data:`CHUNK` on a CPU, :data:`GPU_CHUNK` on a GPU."""
    return GPU_CHUNK if device.startswith("cuda") else CHUNK


def ramped(batches: Iterator[list[int]], first: int) -> Iterator[list[int]]:
    """``batches`` with the first one cut into pieces of ``first``, ``first``, then
    doubling: a pipeline's devices wait for its first chunk, and only for that one."""
    head = next(batches, None)
    if head is None:
        return
    start, size = 0, first
    while start < len(head):
        yield head[start : start + size]
        start += size
        if start > first:
            size *= 2
    yield from batches


def stale_batches(
    store: Store, kind: str, profile: str, size: int, limit: int | None = None
) -> Iterator[list[int]]:
    """Stale PMIDs in chunks of ``size`` (the first ``limit`` of them, when given);
    ramped up to it when chunks are large."""
    batches = stale_pmids(store, kind, profile, batch=size)
    if limit is not None:
        batches = _first(batches, limit)
    return ramped(batches, RAMP_FIRST) if size > RAMP_FIRST else batches


def _first(batches: Iterator[list[int]], limit: int) -> Iterator[list[int]]:
    """The batches up to ``limit`` PMIDs in all; no batch past them is read."""
    for batch in batches:
        if limit <= 0:
            return
        yield batch[:limit]
        limit -= len(batch)


def chunks_in_thread(
    store_path: Path,
    kind: str,
    profile: str,
    size: int,
    build_chunk: ChunkBuilder,
    limit: int | None,
) -> Callable[[], Iterator[Chunk[ChunkRows]]]:
    """The reader's work, in its own thread with its own read-only connection."""

    def chunks() -> Iterator[Chunk[ChunkRows]]:
        reader = Store(store_path, readonly=True)
        try:
            for seq, pmids in enumerate(stale_batches(reader, kind, profile, size, limit)):
                rows, prepared = build_chunk(reader, fetch(reader, pmids))
                yield Chunk(seq, rows, prepared)
        finally:
            reader.close()

    return chunks


def reader_processes(devices: Sequence[str], cores: int | None = None) -> int:
    """Reader processes for the stage: none on a CPU (torch uses every core there);
    with GPUs, the cores left after one thread per GPU and the writer, at most 8."""
    from medsearch.models.device import usable_cores

    if not any(d.startswith("cuda") for d in devices):
        return 0
    spare = (cores if cores is not None else usable_cores()) - len(devices) - 1
    return max(0, min(8, spare)) if spare >= 2 else 0


def chunks_in_processes(
    store_path: Path,
    kind: str,
    profile: str,
    size: int,
    host: HostTokenizer,
    processes: int,
    limit: int | None,
) -> Callable[[], Iterator[Chunk[ChunkRows]]]:
    """The reader's work in ``processes`` worker processes, chunks yielded in order.

    Splitting sentences and padding are Python; in a thread they hold the GIL against
    the threads that launch GPU kernels (the H100 measurement: the device threads were
    busy 9.2 s for 4.5 s of kernels). At most ``processes + 2`` chunks are in flight,
    so memory stays flat. Workers are spawned, not forked: the parent holds CUDA and
    threads.
    """

    def chunks() -> Iterator[Chunk[ChunkRows]]:
        import multiprocessing
        from collections import deque
        from concurrent.futures import Future, ProcessPoolExecutor

        reader = Store(store_path, readonly=True)
        pool = ProcessPoolExecutor(
            processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=start,
            initargs=(str(store_path), kind, host),
        )
        window: deque[Future[tuple[ChunkRows, Prepared]]] = deque()
        seq = 0
        try:
            for pmids in stale_batches(reader, kind, profile, size, limit):
                with safe_path():  # a submit spawns the workers, as they are needed
                    window.append(pool.submit(chunk_in_worker, pmids))
                if len(window) > processes + 1:
                    yield Chunk(seq, *window.popleft().result())
                    seq += 1
            while window:
                yield Chunk(seq, *window.popleft().result())
                seq += 1
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            reader.close()

    return chunks


_STATE: dict[str, Any] = {}


def start(store_path: str, kind: str, host: HostTokenizer) -> None:
    """Worker initialiser. Ctrl-C is the parent's to handle: it stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STATE.update(store=Store(Path(store_path), readonly=True), kind=kind, host=host)


def chunk_in_worker(pmids: list[int]) -> tuple[ChunkRows, Prepared]:
    """One chunk, as the in-process reader would make it."""
    store, host = _STATE["store"], _STATE["host"]
    articles = fetch(store, pmids)
    if _STATE["kind"] == ARTICLES:
        return article_chunk(articles, host.prepare)
    return sentence_chunk(store, articles, host.prepare)
