"""One line of the search history, and the compact form of its result set."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np
import zstandard

from medsearch.errors import QuerySyntaxError
from medsearch.query.printer import filter_clauses, translation_text
from medsearch.records import Filters
from medsearch.store.snapshot import Snapshot

SET_LIMIT = 10_000
"""The largest result set whose PMIDs a history line keeps (a larger one keeps its
count only, and ``history rerun`` says that no article-level diff is available).

Why 10,000: it is the deepest list the searcher returns (``MAX_K``) and what ``search
--export`` writes, and a systematic review screens sets of that order. Listing a set
costs ~1 us a PMID (unscored, in PMID order; ``benchmarks-history.md``), about 10 ms at
the limit on this project's loaded 2-core VM, paid only by set queries whose set is
larger than the hits already listed; packed, a 10K set spread over PubMed is ~18 KB
(:func:`pack_pmids`). A larger limit would make every broad search pay for a list no
reviewer diffs by hand; a smaller one would lose the diff of ordinary review searches.
"""


@dataclass(frozen=True, slots=True)
class Entry:
    """A search as it was run: ``number`` is its ``#N``."""

    number: int
    at: str
    """When it ran: ISO 8601, UTC, to the second."""
    command: str
    """``search`` (the query language), ``similar`` (similar articles to a PMID) or
    ``cite`` (references suggested for a paragraph's citing sentences)."""
    typed: str
    """The query as typed (``#3 AND #5`` stays as typed here)."""
    query: str | None
    """The query as read: the parsed query printed back (:mod:`medsearch.query.printer`),
    ``#N`` expanded; None for a line imported from the old recall file, never run here.
    Without MeSH installed this is also the query as run."""
    mode: str | None
    filters: Filters = field(default_factory=Filters)
    """Restrictions given beside the query (CLI flags, the TUI's filter dialog)."""
    total: int | None = None
    counted: str | None = None
    """What ``total`` counts: ``set`` or ``all_words`` (plain words, ranked)."""
    snapshot: Snapshot | None = None
    pmids: np.ndarray | None = None
    """The result set's PMIDs, sorted, when it was a set of at most :data:`SET_LIMIT`."""
    source: str = "cli"
    """``cli``, ``tui``, or ``imported`` (a line of the old recall file)."""
    set_kept: bool = False
    """Whether the history holds the set (``pmids`` is read only when asked for)."""
    translation: str | None = None
    """With MeSH installed, the query as it ran: automatic term mapping and exploded
    headings, as PubMed's "Search details" prints it (:mod:`medsearch.mesh.expand`)."""

    @property
    def as_run(self) -> str | None:
        """The query that ran: the MeSH translation where there was one."""
        return self.translation or self.query

    @property
    def runnable(self) -> str | None:
        """The query ``#N`` runs: the translation when it reads back (:func:`reads_back`),
        else the query as read, which MeSH translates again to the same set."""
        if self.translation and reads_back(self.translation):
            return self.translation
        return self.query

    @property
    def line(self) -> str | None:
        """What ``#N`` expands to: :attr:`runnable` with the restrictions beside it, as one
        query; for similar articles and cited references, what was asked and the
        restrictions."""
        return self._with_filters(self.runnable)

    @property
    def shown(self) -> str | None:
        """The query as run with the restrictions beside it: what lists and the PRISMA
        log print (the translation even where ``#N`` expands from the query as read)."""
        return self._with_filters(self.as_run)

    def _with_filters(self, query: str | None) -> str | None:
        if query is None:
            return None
        spelt = bool(self.translation) and query == self.translation  # as --explain spells it
        clauses = filter_clauses(self.filters, details=spelt)
        if not clauses:
            return query
        if self.command != "search":
            return f"{query}; restricted to {' AND '.join(clauses)}"
        return " AND ".join([f"({query})", *clauses])

    @property
    def ran(self) -> bool:
        """Whether it ran here (a line imported from the old recall file never did)."""
        return self.source != "imported"

    @property
    def has_set(self) -> bool:
        return self.set_kept or self.pmids is not None

    def to_dict(self) -> dict[str, Any]:
        """What ``history --json`` prints for this line."""
        snap = self.snapshot
        return {
            "number": self.number,
            "time": self.at,
            "command": self.command,
            "query_typed": self.typed,
            "query_as_run": self.shown,
            "translation": self.translation,
            "hash_expands_to": self.line,
            "mode": self.mode,
            "filters": filters_dict(self.filters),
            "count": self.total,
            "counted": self.counted,
            "snapshot": None if snap is None else asdict(snap),
            "set_kept": self.has_set,
            "source": self.source,
        }


def reads_back(translation: str) -> bool:
    """Whether a MeSH translation is query syntax that the parser reads as the query
    that ran: it parses, and printed again from that parse it is the same text but for
    parentheses.

    The printer (:func:`medsearch.query.printer.translation_text`) writes every part of a query
    that decides its set: tags, ``:noexp``, proximity, phrases, truncation, and the
    Boolean structure with every group in parentheses. The parser keeps each explicit
    group, and only flattens a run of one operator (``A OR (B OR C)`` is ``A OR B OR
    C``), so a text that prints back the same up to its parentheses reads back as the
    tree that ran, up to each heading's exploded keys, which MeSH resolves again when
    it runs. Checked when ``#N`` is expanded, not when a line is recorded: a parse and
    a print cost about twice reading the typed query (0.4 ms for four mapped words on
    a loaded 2-core machine; ``python -m benchmarks.history translation``)."""
    from medsearch.query.parser import parse_query

    try:
        parsed = parse_query(translation)
    except QuerySyntaxError:
        return False
    printed = translation_text(parsed)
    return printed == translation or _unbracketed(printed) == _unbracketed(translation)


def _unbracketed(text: str) -> str:
    return " ".join(text.replace("(", " ").replace(")", " ").split())


def filters_dict(filters: Filters) -> dict[str, Any]:
    """The restrictions that are set (not at their default), by field name (JSON-ready)."""
    out: dict[str, Any] = {}
    for f in fields(Filters):
        value = getattr(filters, f.name)
        if value != f.default:
            out[f.name] = list(value) if isinstance(value, tuple) else value
    return out


def filters_from(data: dict[str, Any]) -> Filters:
    known = {f.name for f in fields(Filters)}
    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in known
    }
    return Filters(**values)


def pack_pmids(pmids: np.ndarray) -> bytes:
    """Sorted PMIDs as the gaps between them, little-endian uint32 (uint64 only if a gap
    needs it: NCBI's PMIDs have eight digits), byte planes apart (every gap's low bytes,
    then the next...), zstd level 3; the first byte is the width.

    A set spread over PubMed (10K of 41M PMIDs: gaps of ~4,000) packs to 1.84 bytes a
    PMID in 0.3 ms; without the planes zstd keeps 2.24 bytes (0.5 ms), and zlib (level
    6) 2.40 in 22 ms (``benchmarks/history.py``, this project's 2-core VM under load).
    """
    ordered = np.sort(np.asarray(pmids, dtype=np.int64))
    gaps = np.diff(ordered, prepend=0)
    width = 4 if not len(gaps) or int(gaps.max()) < 2**32 else 8
    planes = gaps.astype(f"<u{width}").view(np.uint8).reshape(-1, width).T
    return bytes([width]) + zstandard.ZstdCompressor(level=3).compress(planes.tobytes())


def unpack_pmids(blob: bytes) -> np.ndarray:
    width = blob[0]
    raw = np.frombuffer(zstandard.ZstdDecompressor().decompress(blob[1:]), dtype=np.uint8)
    gaps = raw.reshape(width, -1).T.copy().view(f"<u{width}").ravel()
    return np.cumsum(gaps, dtype=np.int64)
