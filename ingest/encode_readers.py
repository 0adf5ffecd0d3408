"""The vector stage's reader processes: fetch, split and tokenise one chunk each.

Runs in spawned worker processes (see ``encode_stage._chunks_in_processes``): each opens
its own read-only store connection once, and imports no torch, so a worker costs a
tokenizer and a connection, not a model.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingest.encoded import fetch
from medsearch.store import Store

if TYPE_CHECKING:
    from ingest.encode_stage import ChunkRows
    from medsearch.models.host_text import HostTokenizer, Prepared

_STATE: dict[str, Any] = {}


def start(store_path: str, kind: str, host: HostTokenizer) -> None:
    """Worker initialiser. Ctrl-C is the parent's to handle: it stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _STATE.update(store=Store(Path(store_path), readonly=True), kind=kind, host=host)


def prepare(pmids: list[int]) -> tuple[ChunkRows, Prepared]:
    """One chunk, as the in-process reader would make it."""
    from ingest.encode_stage import ARTICLES, article_chunk, sentence_chunk

    store, host = _STATE["store"], _STATE["host"]
    articles = fetch(store, pmids)
    if _STATE["kind"] == ARTICLES:
        return article_chunk(articles, host.prepare)
    return sentence_chunk(store, articles, host.prepare)
