"""Reading BEIR-format data sets (SciFact, TREC-COVID, NFCorpus ...) for ``medsearch eval``.

A BEIR directory holds ``corpus.jsonl`` (``{"_id", "title", "text"}`` a line),
``queries.jsonl`` (``{"_id", "text"}``) and ``qrels/<split>.tsv`` (a header line, then
``query-id<TAB>corpus-id<TAB>score``). The corpus is streamed, never held whole, because
the large BEIR corpora run to millions of documents.

The store and the indexes key everything by an integer PMID, but BEIR document ids are
strings: SciFact's happen to be PubMed-like integers, others (TREC-COVID's ``ug7v899j``)
are not. :func:`doc_pmid` maps an id to an int deterministically, so the same corpus
always gets the same keys and a run can be mapped back with :class:`PmidMap`.
"""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from medsearch.errors import MedsearchError
from medsearch.records import AbstractSection, Article

# Every key stays below 2**53 so that ``sentence_id = pmid * 1000 + position`` still fits
# a signed 64-bit integer (SQLite, Faiss ids) and JSON readers keep it exact. Numeric ids
# below 2**52 are kept as they are (real PMIDs are below 10**9); anything else is hashed
# into [2**52, 2**53), a range no numeric id we keep can reach.
HASH_BASE = 2**52
HASH_SPAN = 2**52
MAX_NUMERIC_ID = HASH_BASE - 1
BEIR_ID_TYPE = "beir"  # the ``Article.article_ids`` entry that keeps the original id


class BeirFormatError(MedsearchError):
    """A directory is not in BEIR format, or one of its files is malformed."""


@dataclass(frozen=True, slots=True)
class BeirDoc:
    doc_id: str
    title: str
    text: str


def load_corpus(directory: str | Path) -> Iterator[BeirDoc]:
    """Stream ``corpus.jsonl``, one document a line, in file order."""
    path = _required(directory, "corpus.jsonl")
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = _json_object(path, number, line)
            yield BeirDoc(
                doc_id=_doc_id(path, number, record),
                title=str(record.get("title") or ""),
                text=str(record.get("text") or ""),
            )


def load_queries(directory: str | Path) -> dict[str, str]:
    """``queries.jsonl`` as ``{query_id: text}``."""
    path = _required(directory, "queries.jsonl")
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record = _json_object(path, number, line)
            queries[_doc_id(path, number, record)] = str(record.get("text") or "")
    return queries


def load_qrels(directory: str | Path, split: str = "test") -> dict[str, dict[str, int]]:
    """``qrels/<split>.tsv`` as ``{query_id: {doc_id: relevance}}``.

    The first line is a header (``query-id corpus-id score``) as in every BEIR release;
    a file without one would lose its first judgement, so a header that does not look
    like one is an error rather than a guess.
    """
    path = _required(directory, f"qrels/{split}.tsv")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        rows = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(rows, None)
        if header is None:
            return qrels
        if len(header) < 3 or _is_int(header[2]):
            raise BeirFormatError(
                f"{path}: line 1 should be the header 'query-id corpus-id score', got {header!r}"
            )
        for number, row in enumerate(rows, start=2):
            if not row or not "".join(row).strip():
                continue
            if len(row) < 3 or not _is_int(row[2]):
                raise BeirFormatError(
                    f"{path}: line {number} should be 'query-id<TAB>corpus-id<TAB>score', "
                    f"got {row!r}"
                )
            qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def beir_doc_to_article(doc: BeirDoc, pmid: int) -> Article:
    """An :class:`Article` the ingest pipeline can store and index like a PubMed record.

    The abstract is one unlabelled section; the original BEIR id is kept in
    ``article_ids`` as ``("beir", doc_id)`` so results can be written back in BEIR ids.
    """
    abstract = (AbstractSection(text=doc.text),) if doc.text else ()
    return Article(
        pmid=pmid,
        title=doc.title,
        abstract=abstract,
        article_ids=((BEIR_ID_TYPE, doc.doc_id),),
    )


def doc_pmid(doc_id: str) -> int:
    """A stable integer key for a BEIR document id.

    A canonical decimal id (``"31715818"``: ASCII digits, no sign, no leading zero) below
    2**52 is its own key, so SciFact's PubMed ids stay PubMed ids. Any other id is hashed
    with BLAKE2b into [2**52, 2**53): stable across runs and machines (unlike ``hash``),
    and never equal to a kept numeric id. Two hashed ids can in principle collide (about
    one in 10**4 for a million string ids); :class:`PmidMap` detects that.
    """
    if _is_canonical_decimal(doc_id) and int(doc_id) <= MAX_NUMERIC_ID:
        return int(doc_id)
    digest = hashlib.blake2b(doc_id.encode("utf-8"), digest_size=8).digest()
    return HASH_BASE + int.from_bytes(digest, "big") % HASH_SPAN


@dataclass
class PmidMap:
    """The doc_id <-> pmid mapping of one corpus, for writing runs back in BEIR ids.

    ``add`` every document as it is ingested; ``doc_id(pmid)`` reverses the mapping.
    Two different ids landing on one key is a :class:`BeirFormatError`, never a silent
    merge of two documents.
    """

    _doc_ids: dict[int, str] = field(default_factory=dict)

    def add(self, doc_id: str) -> int:
        pmid = doc_pmid(doc_id)
        known = self._doc_ids.setdefault(pmid, doc_id)
        if known != doc_id:
            raise BeirFormatError(
                f"BEIR ids {known!r} and {doc_id!r} map to the same key {pmid}; rename one of them"
            )
        return pmid

    def doc_id(self, pmid: int) -> str:
        try:
            return self._doc_ids[pmid]
        except KeyError:
            raise KeyError(f"no BEIR document was mapped to key {pmid}") from None

    def __len__(self) -> int:
        return len(self._doc_ids)

    def __contains__(self, pmid: object) -> bool:
        return pmid in self._doc_ids


def _required(directory: str | Path, name: str) -> Path:
    root = Path(directory)
    if not root.is_dir():
        raise BeirFormatError(f"{root} is not a directory (expected a BEIR data set)")
    path = root / name
    if not path.is_file():
        raise BeirFormatError(f"{root} is not a BEIR data set: {name} is missing")
    return path


def _json_object(path: Path, number: int, line: str) -> dict[str, object]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as err:
        raise BeirFormatError(f"{path}: line {number} is not valid JSON ({err.msg})") from None
    if not isinstance(record, dict):
        raise BeirFormatError(f"{path}: line {number} is not a JSON object")
    return record


def _doc_id(path: Path, number: int, record: dict[str, object]) -> str:
    value = record.get("_id")
    if value is None or value == "":
        raise BeirFormatError(f"{path}: line {number} has no '_id'")
    return str(value)


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _is_canonical_decimal(text: str) -> bool:
    return text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0"))
