"""The vector stage's loop: encode every stale article of a kind through the
pipeline (:mod:`ingest.encode_pipeline`), write each chunk's vectors, and commit them
before their ``encoded`` rows, at a cadence that keeps commits a small share of the run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ingest.encode_chunks import (
    ARTICLES,
    SENTENCES,
    ChunkBuilder,
    ChunkRows,
    article_chunk,
    sentence_chunk,
)
from ingest.encode_pipeline import Encoded, Rate, run_pipeline
from ingest.encode_readers import (
    chunk_size,
    chunks_in_processes,
    chunks_in_thread,
    reader_processes,
)
from ingest.encoded import count_stale, finish_pass, record_hashes
from medsearch.progress import Progress
from medsearch.records import Article
from medsearch.store import Store

if TYPE_CHECKING:
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_index import SentenceCollection
    from medsearch.models.encoders import Encoder
    from medsearch.models.host_text import Prepared, Role

    Collection = VectorCollection | SentenceCollection

COMMIT_ARTICLES = 20_000  # ... and committed together (see encode_stale)
COMMIT_SECONDS = 120.0
COMMIT_SHARE = 0.1  # at most this share of the stage's time goes to commits


def commit_due(pending: int, since_last: float, last_cost: float) -> bool:
    """Whether to commit now: every :data:`COMMIT_ARTICLES` articles or
    :data:`COMMIT_SECONDS` seconds, but never sooner than ``last_cost / COMMIT_SHARE``
    after the last commit.

    A commit writes the collection's index and id lookup whole; on a 40.9M-article home
    the sentence index alone is ~40 GB, so a fixed cadence of 20K articles would write
    ~2,000 times an average of ~20 GB (~40 TB, hours of pure I/O) over one baseline
    ingest. Spacing commits by their own measured cost keeps them to ~10% of the stage
    whatever the size; an interruption then loses at most ~10 commits' worth of time.
    """
    if pending <= 0:
        return False
    due = pending >= COMMIT_ARTICLES or since_last > COMMIT_SECONDS
    return due and since_last >= last_cost / COMMIT_SHARE


def encode_stale(
    store: Store,
    encoders: Sequence[Encoder],
    collection: Collection,
    kind: str,
    description: str,
    progress: Progress,
    build_chunk: ChunkBuilder,
    processes: int | None = None,
    total: int | None = None,
    limit: int | None = None,
) -> Rate:
    """Encode every stale article of ``kind`` (or the first ``limit``) through the
    pipeline and commit as it goes.

    When :func:`commit_due` says so, the collection is committed and only then are
    those articles recorded in ``encoded``: an interruption loses at most the work since
    the last commit, and commits (which rewrite the index and id lookup) stay a small
    share of the stage at PubMed scale. A pass cut short by ``limit`` leaves the store's
    queue as it is: the next pass must still look for every stale article.
    """
    profile = encoders[0].profile.name
    devices = ", ".join(e.device for e in encoders)
    task = f"encode-{kind}"
    if total is None:
        total = count_stale(store, kind, profile)
    if limit is not None:
        total = min(total, limit)
    progress.start(task, f"{description} on {devices}", total=total)
    rate = Rate.start()
    pending: list[tuple[int, str, int]] = []
    last_commit = last_shown = time.monotonic()
    last_cost = 0.0

    def commit() -> None:
        nonlocal last_commit, last_cost
        started = time.monotonic()
        collection.commit()
        record_hashes(store, kind, profile, pending)
        pending.clear()
        last_commit = time.monotonic()
        last_cost = last_commit - started
        rate.busy["commit"] = rate.busy.get("commit", 0.0) + last_cost

    def write(done: Encoded[ChunkRows]) -> None:
        nonlocal last_shown
        rows = done.chunk.meta
        if len(rows.drop):
            collection.remove(rows.drop)
        if len(rows.ids):
            collection.add(rows.ids, done.vectors)
        pending.extend(rows.rows)
        rate.add(len(rows.rows), done.chunk.prepared.tokens, len(rows.ids))
        progress.advance(task, len(rows.rows))
        now = time.monotonic()
        if now - last_shown >= 1.0:
            progress.describe(task, f"{description} on {devices} ({rate.describe()})")
            last_shown = now
        if commit_due(len(pending), now - last_commit, last_cost):
            commit()

    size = chunk_size(encoders[0].device)
    if processes is None:
        processes = reader_processes([e.device for e in encoders])
    role: Role = "article" if kind == ARTICLES else "query"
    # The tokenizer's JSON is made only for workers; a slow tokenizer stays in-process.
    if processes and (host := encoders[0].host_tokenizer(role)) is not None:
        chunks = chunks_in_processes(store.path, kind, profile, size, host, processes, limit)
    else:
        chunks = chunks_in_thread(store.path, kind, profile, size, build_chunk, limit)
    run_pipeline(chunks, encoders, write, busy=rate.busy, firsts=rate.firsts)
    t0 = time.perf_counter()
    commit()
    if limit is None:
        finish_pass(store, kind, profile)
    rate.busy["write"] = rate.busy.get("write", 0.0) + time.perf_counter() - t0
    rate.stop()
    progress.describe(task, f"{description} on {devices} ({rate.describe()})")
    progress.finish(task)
    return rate


def encode_articles(
    store: Store,
    encoders: Sequence[Encoder],
    collection: VectorCollection,
    *,
    progress: Progress,
    processes: int | None = None,
    total: int | None = None,
    limit: int | None = None,
) -> Rate:
    """Encode stale articles (the first ``limit``, when given); the rate says how many,
    and how fast.

    ``processes``: reader processes (None: :func:`reader_processes` for the devices);
    ``total``: how many are stale, when the caller has counted them already.
    """
    chosen = list(encoders)
    first = chosen[0]

    def pairs(titles: list[str], abstracts: list[str]) -> Prepared:
        return first.prepare_articles(list(zip(titles, abstracts, strict=True)))

    def build_chunk(_: Store, articles: list[Article]) -> tuple[ChunkRows, Prepared]:
        return article_chunk(articles, pairs)

    description = "Encoding articles"
    return encode_stale(
        store,
        chosen,
        collection,
        ARTICLES,
        description,
        progress,
        build_chunk,
        processes,
        total,
        limit,
    )


def encode_sentences(
    store: Store,
    encoders: Sequence[Encoder],
    collection: SentenceCollection,
    *,
    progress: Progress,
    processes: int | None = None,
    limit: int | None = None,
) -> Rate:
    """Encode the abstract sentences of stale articles (the first ``limit``, when given;
    the readers split them)."""
    chosen = list(encoders)
    first = chosen[0]

    def build_chunk(reader: Store, articles: list[Article]) -> tuple[ChunkRows, Prepared]:
        return sentence_chunk(reader, articles, first.prepare_sentences)

    description = "Encoding abstract sentences (articles)"
    return encode_stale(
        store,
        chosen,
        collection,
        SENTENCES,
        description,
        progress,
        build_chunk,
        processes,
        limit=limit,
    )
