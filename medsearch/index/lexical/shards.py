"""A large lexical index split into shards by PMID, searched on every core at once.

tantivy-py searches one index on one thread, but it releases the GIL while it does, so
N indexes searched from N threads use N cores (measured x1.81 with two threads here;
see BENCHMARKS.md). A corpus past :data:`SHARD_DOCS` articles is therefore kept as
``shard-0`` .. ``shard-{N-1}`` under the lexical directory (PMID mod N, so a revised
record always lands on the shard holding the old one), with ``shards.json`` naming N.
Each shard scores with its own BM25 statistics; with a million or more documents per
shard those equal the global ones (on 5,183 SciFact abstracts in 2 shards nDCG@10 moved
0.705 -> 0.704, in 8 shards of 650 -> 0.696), which is why small corpora stay whole.

Search asks every shard for the top ``k`` without snippets, merges by score (PMID
breaks ties; filter-only listings stay newest PMID first), sums the counts and makes
snippets for the merged head only.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from medsearch.errors import StoreError
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.index import (
    REBUILD_HINT,
    LexicalIndex,
    Ranked,
    Ranking,
    TextSource,
    recorded_version,
)
from medsearch.index.lexical.query import Frequencies
from medsearch.query.nodes import ParsedQuery
from medsearch.records import Article, Filters

T = TypeVar("T")

SHARDS_FILE = "shards.json"
SHARD_DOCS = 2_000_000
"""A single index up to here: per-shard statistics would be noisy, and one search is fast."""
MAX_SHARDS = 8


def shard_count(cores: int | None) -> int:
    """One shard per core, at most :data:`MAX_SHARDS` (a search uses them all)."""
    return max(1, min(MAX_SHARDS, cores or 1))


def is_sharded(path: Path) -> bool:
    return (path / SHARDS_FILE).exists()


class ShardedLexicalIndex(LexicalIndex):
    """N :class:`LexicalIndex` shards behind the same interface (see the module docstring)."""

    def __init__(self, path: Path, shards: list[LexicalIndex], texts: TextSource | None) -> None:
        first = shards[0]
        if len({shard.version for shard in shards}) > 1:  # their scores would not compare
            raise StoreError(
                f"the shards of the lexical index at {path} have different formats{REBUILD_HINT}"
            )
        super().__init__(path, first._index, texts, first.version)
        self.shards = shards
        self._pool = ThreadPoolExecutor(len(shards), thread_name_prefix="lexical-shard")
        # the shards share what one whole index's writer would have (tantivy needs at
        # least ~15 MB of heap per indexing thread)
        threads = max(1, self.writer_threads // len(shards))
        for shard in shards:
            shard.writer_threads = threads
            shard.writer_heap = max(self.writer_heap // len(shards), 40_000_000 * threads)

    @classmethod
    def open_shards(
        cls, path: Path, *, texts: TextSource | None = None, write: bool = False
    ) -> ShardedLexicalIndex:
        try:
            n = int(json.loads((path / SHARDS_FILE).read_text())["shards"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise StoreError(
                f"the lexical index at {path} names no readable shard count ({exc}){REBUILD_HINT}"
            ) from exc
        shards = [
            LexicalIndex.open(path / f"shard-{i}", create=False, write=write) for i in range(n)
        ]
        return cls(path, shards, texts)

    @classmethod
    def create(cls, path: Path, n: int, *, texts: TextSource | None = None) -> ShardedLexicalIndex:
        """Empty shards at ``path`` (which must not hold an index yet)."""
        path.mkdir(parents=True, exist_ok=True)
        shards = [LexicalIndex.open(path / f"shard-{i}") for i in range(n)]
        tmp = path / (SHARDS_FILE + ".tmp")
        tmp.write_text(json.dumps({"shards": n}))
        os.replace(tmp, path / SHARDS_FILE)  # the shards exist before the file names them
        return cls(path, shards, texts)

    # -- writing -----------------------------------------------------------------------

    def _split(self, pmids: Sequence[int]) -> list[list[int]]:
        parts: list[list[int]] = [[] for _ in self.shards]
        for pmid in pmids:
            parts[int(pmid) % len(self.shards)].append(int(pmid))
        return parts

    def _by_shard(self, documents: Sequence[ls.Doc]) -> list[tuple[LexicalIndex, list[ls.Doc]]]:
        parts: list[list[ls.Doc]] = [[] for _ in self.shards]
        for doc in documents:
            parts[doc[0] % len(self.shards)].append(doc)
        return [(shard, part) for shard, part in zip(self.shards, parts, strict=True) if part]

    def upsert_documents(self, documents: Sequence[ls.Doc]) -> None:
        for shard, part in self._by_shard(documents):
            shard.upsert_documents(part)

    def add_documents(self, documents: Sequence[ls.Doc]) -> None:
        for shard, part in self._by_shard(documents):
            shard.add_documents(part)

    def delete_all(self) -> None:
        for shard in self.shards:
            shard.delete_all()

    def delete(self, pmids: Sequence[int]) -> None:
        for shard, part in zip(self.shards, self._split(pmids), strict=True):
            if part:
                shard.delete(part)

    def commit(self, payload: str | None = None) -> None:
        for shard in self.shards:
            shard.commit(payload)

    def rollback(self) -> None:
        for shard in self.shards:
            shard.rollback()

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
        self._pool.shutdown(wait=True)

    # -- reading -----------------------------------------------------------------------

    def last_commit_payload(self) -> str | None:
        """The oldest shard's payload: a crash between shard commits resumes from there."""
        found = [s.last_commit_payload() for s in self.shards]
        if any(p is None for p in found):
            return None
        return min(p for p in found if p is not None)

    def count(self) -> int:
        return sum(s.count() for s in self.shards)

    def counts(
        self,
        queries: Sequence[ParsedQuery],
        filters: Filters | None = None,
        frequencies: Frequencies | None = None,
    ) -> list[int]:
        """:meth:`LexicalIndex.counts` summed over the shards, counted at once."""
        frequencies = frequencies or self.shards[0].frequencies()
        per_shard = list(
            self._pool.map(lambda shard: shard.counts(queries, filters, frequencies), self.shards)
        )
        return [sum(column) for column in zip(*per_shard, strict=True)]

    def matching_pmids(self, filters: Filters, limit: int) -> tuple[np.ndarray | None, int]:
        """:meth:`LexicalIndex.matching_pmids` over every shard: counted first in all of
        them at once, then read from each only when the whole count is within ``limit``."""
        counts = list(
            self._pool.map(lambda shard: shard.matching_pmids(filters, 0)[1], self.shards)
        )
        total = sum(counts)
        if total > limit:
            return None, total
        pairs = zip(self.shards, counts, strict=True)
        found = [
            p for s, n in pairs if n and (p := s.matching_pmids(filters, limit)[0]) is not None
        ]
        listed = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
        return listed, len(listed)

    def accepted(self, pmids: Sequence[int], filters: Filters) -> set[int]:
        """:meth:`LexicalIndex.accepted`, every shard at once."""
        found: set[int] = set()
        for part in self._pool.map(lambda s: s.accepted(pmids, filters), self.shards):
            found |= part
        return found

    def set_pmids(
        self, query: ParsedQuery, size: int, filters: Filters | None = None
    ) -> np.ndarray:
        """:meth:`LexicalIndex.set_pmids`, every shard at once (each lists its part; the
        caller's ``size`` bounds every part)."""
        parts = list(self._pool.map(lambda s: s.set_pmids(query, size, filters), self.shards))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def within(self, pmids: Sequence[int]) -> Any:
        """:meth:`LexicalIndex.within`, one per shard."""
        return [shard.within(pmids) for shard in self.shards]

    def members(
        self,
        pmids: Sequence[int],
        query: ParsedQuery,
        filters: Filters | None = None,
        within: Any | None = None,
    ) -> set[int]:
        """:meth:`LexicalIndex.members`, every shard at once."""
        found: set[int] = set()
        for part in self._restricted(
            within, lambda shard, part_within: shard.members(pmids, query, filters, part_within)
        ):
            found |= part
        return found

    def _restricted(
        self, within: Any | None, call: Callable[[LexicalIndex, Any], T]
    ) -> Iterator[T]:
        """``call(shard, its part of within)`` on every shard at once (``within``: what
        :meth:`within` built, one restriction per shard, or None)."""
        restrictions = within or [None] * len(self.shards)
        return self._pool.map(
            lambda pair: call(pair[0], pair[1]), zip(self.shards, restrictions, strict=True)
        )

    def scores(
        self,
        pmids: Sequence[int],
        query: ParsedQuery,
        filters: Filters | None = None,
        frequencies: Frequencies | None = None,
        within: Any | None = None,
    ) -> dict[int, float]:
        """:meth:`LexicalIndex.scores`, every shard at once, leaving out the same words."""
        shared = frequencies or self.shards[0].frequencies()
        found: dict[int, float] = {}
        for part in self._restricted(
            within,
            lambda shard, part_within: shard.scores(pmids, query, filters, shared, part_within),
        ):
            found.update(part)
        return found

    def rank(
        self,
        query: str | ParsedQuery,
        *,
        k: int = 10,
        filters: Filters | None = None,
        count: bool = True,
        syntax: bool = True,
        ranking: Ranking | None = None,
        frequencies: Frequencies | None = None,
    ) -> Ranked:
        """Every shard's top ``k`` at once, merged; :meth:`LexicalIndex.search` builds
        the hits (and snippets) of the merged top ``k`` alone."""
        # one shard's statistics for all: every shard leaves out the same words
        frequencies = frequencies or self.shards[0].frequencies()

        def one(shard: LexicalIndex) -> Ranked:
            return shard.rank(
                query,
                k=k,
                filters=filters,
                count=count,
                syntax=syntax,
                ranking=ranking,
                frequencies=frequencies,
            )

        # every shard at once: the others on the pool, the first on this thread
        later = [self._pool.submit(one, shard) for shard in self.shards[1:]]
        try:
            first = one(self.shards[0])
        except BaseException:
            wait(later)  # they fail the same way (a query's syntax error): let them finish
            raise
        ranked = [first, *(f.result() for f in later)]
        scores = np.fromiter((s for r in ranked for s in r.scores), dtype=np.float64)
        pmids = np.fromiter((p for r in ranked for p in r.pmids), dtype=np.int64)
        if scores.any():  # best first, ties by PMID; unranked (filters only): newest first
            order = np.lexsort((pmids, -scores))[:k]
        else:
            order = np.argsort(-pmids, kind="stable")[:k]
        return Ranked(
            scores=scores[order].tolist(),
            pmids=pmids[order].tolist(),
            total=sum(r.total for r in ranked),
            filters=first.filters,
            terms=first.terms,
            dropped=first.dropped,
            truncated=first.truncated,
        )


def open_lexical(
    path: Path, *, create: bool = True, texts: TextSource | None = None, writer: bool = False
) -> LexicalIndex:
    """The lexical index at ``path``, sharded or whole, whichever is on disk.

    Only the ``writer`` (ingest, under the data home's lock) finishes or undoes a split a
    crash interrupted: a search must not touch a split an ingest is making.
    """
    if writer:
        _finish_split(path)
    if is_sharded(path):
        return ShardedLexicalIndex.open_shards(path, texts=texts, write=writer)
    return LexicalIndex.open(path, create=create, texts=texts, write=writer)


def index_format(path: Path) -> int | None:
    """The format of the lexical index at ``path`` (its first shard's), None if unknown."""
    version = recorded_version(path / "shard-0" if is_sharded(path) else path)
    return version if isinstance(version, int) else None


def staging(path: Path) -> Path:
    return path.with_name(path.name + ".splitting")


def _finish_split(path: Path) -> None:
    """Complete or undo a split that a crash interrupted (see :func:`split_from`)."""
    old = path.with_name(path.name + ".whole")
    if not path.exists() and old.exists():
        old.rename(path)  # the swap never happened: the whole index is still good
    shutil.rmtree(staging(path), ignore_errors=True)
    shutil.rmtree(old, ignore_errors=True)


def split_from(
    path: Path,
    batches: Iterable[Sequence[Article]],
    n: int,
    payload: str | None,
    *,
    advance: Callable[[int], None] = lambda _: None,
) -> None:
    """Rebuild the index at ``path`` as ``n`` shards from ``batches`` of articles.

    The shards are built beside it and swapped in with two renames; until then the whole
    index stays in place, and a crash leaves it there (:func:`_finish_split` cleans up).
    """
    target = staging(path)
    shutil.rmtree(target, ignore_errors=True)
    index = ShardedLexicalIndex.create(target, n)
    try:
        for batch in batches:
            index.add(batch)  # a new index: no PMID is there yet (see LexicalIndex.add)
            advance(len(batch))
        index.commit(payload)
    finally:
        index.close()
    old = path.with_name(path.name + ".whole")
    if path.exists():
        path.rename(old)
    target.rename(path)
    shutil.rmtree(old, ignore_errors=True)
