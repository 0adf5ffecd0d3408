"""Turn parsed articles into what the writer stores, in the parser processes.

The writer is the one serial stage of ingest, so everything that can be computed per
article before it (the store row with its compressed JSON, the tantivy document with its
normalised fields) is computed here, in parallel, and shipped as plain data (strings
pickle several times faster than tantivy ``Document`` objects). The writer is left
with ``executemany`` and ``add_document``, which is what lets it keep pace.
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
    fields: tuple[dict[str, list[Any]], ...]  # lexical_schema.article_fields, one per row
    books: int

    def __len__(self) -> int:
        return len(self.pmids)


def prepare(articles: Sequence[Article]) -> PreparedBatch:
    from medsearch.index.lexical_schema import article_fields

    return PreparedBatch(
        pmids=tuple(a.pmid for a in articles),
        rows=tuple(row_of(a) for a in articles),
        fields=tuple(article_fields(a) for a in articles),
        books=sum(1 for a in articles if a.kind == "book"),
    )
