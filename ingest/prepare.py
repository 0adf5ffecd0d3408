"""What a parser process sends the writer: finished store rows and lexical documents.

The writer is the one process every article goes through, so a parser does all the
per-article work it can and the writer only appends: the record's JSON (orjson), its
zstd compression with the store's dictionary, and the lexical index's fields (text
normalised, keys folded: :func:`~medsearch.index.lexical_schema.article_fields`). The
writer then inserts the blobs and the ``articles`` rows (the SQL columns,
:mod:`medsearch.store.columns`: always computed here, whoever compresses) and hands
tantivy its documents. Before this split the writer rebuilt every article from its JSON
to index it (~47 us) and compressed it (~16 us): ~85 us of writer CPU per article capped
ingest near 11,800 articles/s on any number of cores (BENCHMARKS.md, "Ingest that
scales").

A lone parser process is ingest's critical path on a small machine (one parser on 2
cores: x0.81 with this work moved into it), so it sends plain rows and the writer does
the rest, as before; with two or more parsers (:class:`~ingest.workers.ParserPool`
decides) they do it all. A parser compresses only with a dictionary the store gave it
when it started; before a store has one (its first
:data:`~medsearch.store.db.TRAIN_RECORDS` records) rows travel as plain JSON and the
writer trains and compresses as before. The writer checks every blob's dictionary
(:meth:`~medsearch.store.db.Store.upsert_rows`), so a parser started with a dictionary
that a rolled-back transaction discarded cannot store undecodable records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from medsearch.index.lexical_schema import Fields, article_fields
from medsearch.records import Article, Deletion
from medsearch.store import codec
from medsearch.store.db import Row, row_of


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    rows: tuple[Row, ...]
    documents: tuple[Fields, ...]  # empty when the writer is to build them
    books: int

    def __len__(self) -> int:
        return len(self.rows)

    def articles(self) -> list[Article]:
        """The articles back from their rows (in the writer, for a lean batch)."""
        return [Article.from_dict(codec.decode_raw(codec.plain(row[4]))) for row in self.rows]


def prepare(articles: Sequence[Article], dict_id: int = 0, *, full: bool = True) -> PreparedBatch:
    """Rows and, when ``full``, the lexical documents and rows compressed with the
    registered dictionary ``dict_id`` (if any); otherwise plain rows only."""
    rows = [row_of(a) for a in articles]
    if full and dict_id:
        rows = [(*row[:4], codec.compress(row[4], dict_id), row[5]) for row in rows]
    return PreparedBatch(
        rows=tuple(rows),
        documents=tuple(article_fields(a) for a in articles) if full else (),
        books=sum(1 for a in articles if a.kind == "book"),
    )


def messages(
    items: Iterable[Article | Deletion],
    batch_size: int,
    dictionary: bytes | None = None,
    *,
    full: bool = True,
) -> Iterator[tuple[str, Any]]:
    """The writer's messages for a stream of records: ``("articles", PreparedBatch)`` and
    ``("delete", pmids)`` in stream order, then ``("done", None)``. ``dictionary``: the
    store's compression dictionary, when it has one; ``full``: see :func:`prepare`."""
    dict_id = codec.register(dictionary) if dictionary and full else 0
    batch: list[Article] = []
    for item in items:
        if isinstance(item, Deletion):
            if batch:
                yield ("articles", prepare(batch, dict_id, full=full))
                batch = []
            yield ("delete", item.pmids)
        else:
            batch.append(item)
            if len(batch) >= batch_size:
                yield ("articles", prepare(batch, dict_id, full=full))
                batch = []
    if batch:
        yield ("articles", prepare(batch, dict_id, full=full))
    yield ("done", None)
