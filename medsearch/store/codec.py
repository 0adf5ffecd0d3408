"""How a record is stored: JSON (orjson) compressed with zstd, decoded by format.

Measured per record here (BENCHMARKS.md): orjson encodes in 11 us where ``json`` takes
31 us; zstd level 3 compresses in 15 us where zlib level 3 takes 42 us, to the same
size (~1.2-1.4 KB from ~2.5-3.6 KB), and decompresses 3x faster. Ingest's parser
process encodes and its writer compresses, so both sides of the pipeline gain.
Records written by earlier versions (zlib) still decode: the format is told by the
first bytes.
"""

from __future__ import annotations

import threading
import zlib
from typing import Any

import orjson
import zstandard

from medsearch.errors import StoreError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LEVEL = 3

_local = threading.local()


def _zstd() -> tuple[Any, Any]:
    """Per-thread (compressor, decompressor): zstd contexts are not thread-safe, and a
    fresh context per record would cost more than the compression itself."""
    pair = getattr(_local, "pair", None)
    if pair is None:
        pair = (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor())
        _local.pair = pair
    return pair  # type: ignore[no-any-return]


def encode(data: dict[str, Any]) -> bytes:
    """A record's JSON, uncompressed (the parser side of ingest)."""
    return orjson.dumps(data)


def compress(raw: bytes) -> bytes:
    return _zstd()[0].compress(raw)  # type: ignore[no-any-return]


def decode(blob: bytes) -> dict[str, Any]:
    if blob[:4] == ZSTD_MAGIC:
        raw = _zstd()[1].decompress(blob)
    else:
        try:
            raw = zlib.decompress(blob)
        except zlib.error as exc:
            raise StoreError(f"a stored record is damaged ({exc})") from exc
    return decode_raw(raw)


def decode_raw(raw: bytes) -> dict[str, Any]:
    """A record from its uncompressed JSON (what :func:`encode` made)."""
    data = orjson.loads(raw)
    if not isinstance(data, dict):
        raise StoreError("a stored record is damaged (not a JSON object)")
    return data
