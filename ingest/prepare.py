"""Turn parsed articles into what the writer stores, in the parser processes.

The writer is the one serial stage of ingest, so everything that can be computed per
article before it (the store row with its compressed JSON, the tantivy document with its
normalised fields) is computed here, in parallel, and shipped ready-made: tantivy
``Document`` objects pickle. The writer is left with ``executemany`` and
``add_document``, which is what lets ingest keep pace with parsing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from medsearch.records import Article
from medsearch.store.db import Row, row_of


@dataclass(frozen=True, slots=True)
class PreparedBatch:
    pmids: tuple[int, ...]
    rows: tuple[Row, ...]
    documents: tuple[Any, ...]  # tantivy.Document, one per row
    books: int

    def __len__(self) -> int:
        return len(self.pmids)


def prepare(articles: Sequence[Article]) -> PreparedBatch:
    from medsearch.index.lexical_schema import article_document

    return PreparedBatch(
        pmids=tuple(a.pmid for a in articles),
        rows=tuple(row_of(a) for a in articles),
        documents=tuple(article_document(a) for a in articles),
        books=sum(1 for a in articles if a.kind == "book"),
    )
