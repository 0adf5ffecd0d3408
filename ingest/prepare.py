"""What a parser process sends the writer: store rows whose JSON is also the wire format.

A record's JSON (orjson, ~6 us) is what the store keeps, and it is also the cheapest way
to move an article between processes (pickling the dataclasses costs ~45 us). So the
parser sends rows; the writer compresses them into SQLite and rebuilds the articles from
the same JSON for the lexical index. Measured on 2 cores: this split keeps both cores
busy (the writer used to wait for the parser three quarters of the time) and brought
ingest to ~1.5x the parser-only loop (BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from medsearch.records import Article, Deletion
from medsearch.store import codec
from medsearch.store.db import Row, row_of


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    rows: tuple[Row, ...]
    books: int

    def __len__(self) -> int:
        return len(self.rows)

    def articles(self) -> list[Article]:
        """The articles back from their row JSON (in the writer)."""
        return [Article.from_dict(codec.decode_raw(row[4])) for row in self.rows]


def prepare(articles: Sequence[Article]) -> PreparedBatch:
    return PreparedBatch(
        rows=tuple(row_of(a) for a in articles),
        books=sum(1 for a in articles if a.kind == "book"),
    )


def messages(items: Iterable[Article | Deletion], batch_size: int) -> Iterator[tuple[str, Any]]:
    """The writer's messages for a stream of records: ``("articles", PreparedBatch)`` and
    ``("delete", pmids)`` in stream order, then ``("done", None)``."""
    batch: list[Article] = []
    for item in items:
        if isinstance(item, Deletion):
            if batch:
                yield ("articles", prepare(batch))
                batch = []
            yield ("delete", item.pmids)
        else:
            batch.append(item)
            if len(batch) >= batch_size:
                yield ("articles", prepare(batch))
                batch = []
    if batch:
        yield ("articles", prepare(batch))
    yield ("done", None)
