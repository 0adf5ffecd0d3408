"""How a record is stored: JSON (orjson) compressed with zstd, decoded by format.

Measured per record here (BENCHMARKS.md): orjson encodes in 11 us where ``json`` takes
31 us; zstd level 3 compresses in 15 us where zlib level 3 takes 42 us, to the same
size (~1.2-1.4 KB from ~2.5-3.6 KB), and decompresses 3x faster. Ingest's parser
processes encode and, once the store has a dictionary, compress (:mod:`ingest.writer_rows`).
Records written by earlier versions (zlib) still decode: the format is told by the
first bytes.

A zstd dictionary trained on the corpus's own records makes each record ~35% smaller
(936 real PubMed records: 1,383 -> ~880 bytes held out; SciFact: 966 -> ~560; trained
on one and used on the other still ~22-31%), because per-record compression otherwise
relearns the same field names and phrases in every 3 KB record. Every zstd frame names
its dictionary in its header, so a record says what it needs: records without one (older
stores, the first records of a corpus) and with one decode side by side. The store keeps
its dictionaries and :func:`register` s them when it opens (see
:mod:`medsearch.store.db`).
"""

from __future__ import annotations

import threading
import zlib
from typing import Any

import orjson
import zstandard

from medsearch.errors import StoreError
from medsearch.store.damage import DamagedRecordError

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
LEVEL = 3
DICT_BYTES = 112_640
"""zstd's default dictionary size; 64 KB measured ~1 point worse, 16 KB ~6."""

_local = threading.local()
_dictionaries: dict[int, zstandard.ZstdCompressionDict] = {}
_lock = threading.Lock()


def _zstd(dict_id: int = 0) -> tuple[Any, Any]:
    """Per-thread (compressor, decompressor) for a dictionary (0: none): zstd contexts are
    not thread-safe, and a fresh context per record would cost more than the compression."""
    contexts: dict[int, tuple[Any, Any]] | None = getattr(_local, "contexts", None)
    if contexts is None:
        contexts = _local.contexts = {}
    pair = contexts.get(dict_id)
    if pair is None:
        if dict_id:
            with _lock:
                found = _dictionaries.get(dict_id)
            if found is None:
                raise DamagedRecordError(
                    f"it names compression dictionary {dict_id}, which this store does not"
                    " have: damaged bytes, or records mixed in from another store"
                )
            pair = (
                zstandard.ZstdCompressor(level=LEVEL, dict_data=found),
                zstandard.ZstdDecompressor(dict_data=found),
            )
        else:
            pair = (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor())
        contexts[dict_id] = pair
    return pair


def train(samples: list[bytes]) -> bytes | None:
    """A dictionary trained on record JSONs, or None when zstd cannot train on them (too
    few or too alike: a corpus that small does not need one)."""
    chunks: list[bytes | bytearray | memoryview] = list(samples)
    try:
        dictionary = zstandard.train_dictionary(DICT_BYTES, chunks)
    except zstandard.ZstdError:
        return None
    return bytes(dictionary.as_bytes())


def register(data: bytes) -> int:
    """Make a stored dictionary usable in this process; returns its zstd id.

    Ids are random 32-bit numbers chosen at training; two different dictionaries with
    one id would decode garbage, so that is refused rather than trusted.
    """
    dictionary = zstandard.ZstdCompressionDict(data)
    dictionary.precompute_compress(level=LEVEL)  # once, not per record (~7% per compress)
    dict_id = int(dictionary.dict_id())
    with _lock:
        known = _dictionaries.get(dict_id)
        if known is not None and known.as_bytes() != data:
            raise StoreError(f"two different compression dictionaries share the id {dict_id}")
        _dictionaries[dict_id] = dictionary
    return dict_id


def dictionary_bytes(dict_id: int) -> bytes:
    """A :func:`register` ed dictionary's bytes (for the parser processes that compress)."""
    with _lock:
        return bytes(_dictionaries[dict_id].as_bytes())


def dictionary_of(blob: bytes) -> int:
    """The dictionary id a stored zstd record was compressed with (0: none)."""
    return int(zstandard.get_frame_parameters(blob).dict_id)


def encode(data: dict[str, Any]) -> bytes:
    """A record's JSON, uncompressed (the parser side of ingest)."""
    return orjson.dumps(data)


def compress(raw: bytes, dict_id: int = 0) -> bytes:
    """zstd, with a :func:`register` ed dictionary when ``dict_id`` names one."""
    return _zstd(dict_id)[0].compress(raw)  # type: ignore[no-any-return]


def recompressed(data: bytes, dict_id: int) -> bytes:
    """What to store for ``data``: a record's JSON, or a blob a parser process compressed.

    A blob compressed with ``dict_id`` is kept as it is; one compressed otherwise (a
    parser started with a dictionary its transaction then rolled back) is compressed
    again, so every record written after training uses the store's one dictionary."""
    if data[:4] != ZSTD_MAGIC:
        return compress(data, dict_id)
    if dictionary_of(data) == dict_id:
        return data
    return compress(decompress(data), dict_id)


def plain(data: bytes) -> bytes:
    """A record's JSON, whether ``data`` is the JSON itself or a zstd blob of it."""
    return decompress(data) if data[:4] == ZSTD_MAGIC else data


def decode(blob: bytes) -> dict[str, Any]:
    return decode_raw(decompress(blob))


def decompress(blob: bytes) -> bytes:
    """A stored record's JSON, whichever way it was compressed; a blob that does not
    decompress is damaged bytes (a :class:`DamagedRecordError`), not a bug to report."""
    if blob[:4] == ZSTD_MAGIC:
        try:
            return _zstd(dictionary_of(blob))[1].decompress(blob)  # type: ignore[no-any-return]
        except zstandard.ZstdError as exc:
            raise DamagedRecordError(f"zstd: {exc}") from exc
    try:
        return zlib.decompress(blob)
    except zlib.error as exc:
        raise DamagedRecordError(f"zlib: {exc}") from exc


def decode_raw(raw: bytes) -> dict[str, Any]:
    """A record from its uncompressed JSON (what :func:`encode` made)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise DamagedRecordError(f"JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise DamagedRecordError("not a JSON object")
    return data
