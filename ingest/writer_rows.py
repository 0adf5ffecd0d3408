"""What a parser process sends the writer: finished store rows and lexical documents.

The writer is the one process every article goes through, so a parser does all the
per-article work it can and the writer only appends: the record's JSON (orjson), its
zstd compression with the store's dictionary, and the lexical index's fields (text
normalised, keys folded: :func:`~medsearch.index.lexical.schema.article_fields`). The
writer then inserts the blobs and the ``articles`` rows (the SQL columns,
:mod:`medsearch.store.columns`: always computed here, whoever compresses) and hands
tantivy its documents (as JSON: :func:`~medsearch.index.lexical.schema.document`).
A writer that rebuilt every article from its JSON to index it (~47 us) and compressed
it (~16 us) spent ~85 us of CPU per article, which capped ingest near 11,800
articles/s on any number of cores (docs/benchmarks-history.md,
"Ingest that scales").

Even a lone parser process on 2 cores does this work rather than leave it to the
writer: measured, it ingests 1.00-1.28x as fast that way (median ~1.07, six
alternated pairs). A parser compresses only with a dictionary the store gave it when
it started; before a store has one (its first
:data:`~medsearch.store.dictionary.TRAIN_RECORDS` records) rows travel as plain JSON and the
writer trains the dictionary and compresses them itself. The writer checks every blob's dictionary
(:meth:`~medsearch.store.db.Store.upsert_rows`), so a parser started with a dictionary
that a rolled-back transaction discarded cannot store undecodable records.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from medsearch.index.lexical.schema import Doc, article_fields, document
from medsearch.records import Article, Deletion
from medsearch.store import codec, refs
from medsearch.store.rows import Row, row_of


@dataclass(frozen=True, slots=True)
class WriterBatch:
    rows: tuple[Row, ...]
    documents: tuple[Doc, ...]
    books: int
    cited: tuple[bytes | None, ...] = ()
    """Each row's reference-list PMIDs, packed for ``article_refs`` (:func:`refs.pack`)."""

    def __len__(self) -> int:
        return len(self.rows)


BATCH_BYTES = 16 * 2**20
"""A batch ends at this much JSON as well as at ``batch_size`` records, so the writer
holds a bounded number of bytes (~4x this at its peak), whatever the records' sizes: a
batch of 1,000 records is ~3 MB of JSON in PubMed, but 30 records within the XML
limits (:data:`ingest.sources.MAX_RECORD_BYTES`, 28.6 MiB each) once took 3.45 GB."""


def writer_batch(articles: Sequence[Article], dict_id: int = 0) -> WriterBatch:
    """Rows, compressed with the registered dictionary ``dict_id`` (if any; plain JSON
    otherwise), and the lexical documents."""
    return _batch(articles, [row_of(a) for a in articles], dict_id)


def _batch(articles: Sequence[Article], rows: list[Row], dict_id: int) -> WriterBatch:
    if dict_id:
        rows = [(*row[:4], codec.compress(row[4], dict_id), row[5]) for row in rows]
    return WriterBatch(
        rows=tuple(rows),
        documents=tuple(document(article_fields(a)) for a in articles),
        books=sum(1 for a in articles if a.kind == "book"),
        cited=tuple(refs.pack_refs(a.references) for a in articles),
    )


def messages(
    items: Iterable[Article | Deletion],
    batch_size: int,
    dictionary: bytes | None = None,
) -> Iterator[tuple[str, Any]]:
    """The writer's messages for a stream of records: ``("articles", WriterBatch)`` and
    ``("delete", pmids)`` in stream order, then ``("done", None)``. ``dictionary``: the
    store's compression dictionary, when it has one. A batch ends at ``batch_size``
    records or :data:`BATCH_BYTES` of JSON, whichever comes first."""
    dict_id = codec.register(dictionary) if dictionary else 0
    batch: list[Article] = []
    rows: list[Row] = []
    size = 0
    for item in items:
        if isinstance(item, Deletion):
            if batch:
                yield ("articles", _batch(batch, rows, dict_id))
                batch, rows, size = [], [], 0
            yield ("delete", item.pmids)
            continue
        row = row_of(item)
        batch.append(item)
        rows.append(row)
        size += len(row[4])
        if len(batch) >= batch_size or size >= BATCH_BYTES:
            yield ("articles", _batch(batch, rows, dict_id))
            batch, rows, size = [], [], 0
    if batch:
        yield ("articles", _batch(batch, rows, dict_id))
    yield ("done", None)
