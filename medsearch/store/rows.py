"""A record as the store keeps it: its JSON, zstd-compressed (:mod:`medsearch.store.codec`),
and the row a parser process builds for the writer to insert as it comes."""

from __future__ import annotations

from typing import Any

from medsearch.records import Article
from medsearch.store import codec
from medsearch.store.columns import ArticleRow, article_row
from medsearch.store.damage import DamagedRecordError


def pack(article: Article) -> bytes:
    return codec.compress(codec.encode(article.to_dict()))


def decoded(blob: bytes, pmid: int | None = None) -> dict[str, Any]:
    """A stored record's fields; one whose bytes no longer decode is a
    :class:`DamagedRecordError` that names ``pmid`` (the bytes cannot be trusted to)."""
    try:
        return codec.decode(blob)
    except DamagedRecordError as exc:
        raise exc.of(pmid) from exc


def unpack(blob: bytes, pmid: int | None = None) -> Article:
    data = decoded(blob, pmid)
    try:
        return Article.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:  # JSON, but not a record's
        raise DamagedRecordError(f"{type(exc).__name__}: {exc}", pmid) from exc


# (pmid, version, year, content_hash, record JSON or zstd blob, ``articles`` row): built
# in the parser processes (see ingest.writer_rows for who compresses), so the writer inserts
# both tables' rows as they come.
Row = tuple[int, int, int | None, str, bytes, ArticleRow]

RECORDS_UPSERT = (
    "INSERT INTO records(pmid, version, year, content_hash, file_id, data)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(pmid) DO UPDATE SET version=excluded.version,"
    " year=excluded.year, content_hash=excluded.content_hash,"
    " file_id=excluded.file_id, data=excluded.data"
)


def row_of(article: Article) -> Row:
    data = codec.encode(article.to_dict())
    return (
        article.pmid,
        article.version,
        article.year,
        article.content_hash,
        data,
        article_row(article),
    )
