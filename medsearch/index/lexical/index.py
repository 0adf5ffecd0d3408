# Over 450 lines: LexicalIndex is one resource (writer, reader, commits, format version)
# whose methods share its locks; queries are built in query.py, filters in
# filters.py, snippets in snippets.py.
"""BM25 search over title, abstract, MeSH, keywords, authors and journal (tantivy).

One directory holds one tantivy index. The writer is opened lazily, on the first
``upsert``/``delete``, because tantivy allows one writer per index across processes:
a searcher (CLI, TUI) that never writes never holds the lock and never blocks ingest.
Changes are staged until :meth:`LexicalIndex.commit`, which also stores an optional
payload (the pipeline stores the last ingested file name) in a bookkeeping document,
so the payload is committed atomically with the documents it describes.

Analysis, schema and query translation live in ``schema``, ``query``
and ``snippets``; this module is the interface the pipeline and searcher use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from medsearch.errors import StoreError, UsageError
from medsearch.index.lexical import schema as ls
from medsearch.index.lexical.query import LEGACY_RANKING, Frequencies, QueryBuilder, Ranking
from medsearch.index.lexical.readonly import open_for_search
from medsearch.index.lexical.snippets import (
    highlight_spans,
    make_snippet,
    mark,
    snippet_spans,
)
from medsearch.query.nodes import ParsedQuery
from medsearch.query.parser import parse_plain, parse_query
from medsearch.records import Article, Filters

__all__ = ["LexicalHit", "LexicalIndex", "LexicalResult", "Ranking", "snippet_spans"]

WRITER_HEAP_BYTES = 256_000_000


def writer_threads(cores: int | None) -> int:
    """Tantivy indexing threads: half the cores, at most 4.

    Ingest's parser processes need the other half. Measured on 2 cores: 30K articles
    ingested at 2,698/s with 2 indexing threads and 3,013/s with 1 (benchmarks/ingest.py).
    """
    return max(1, min(4, (cores or 1) // 2))


# (title, abstract) of PMIDs, for snippets: the article store answers it (see ``open``)
TextSource = Callable[[Sequence[int]], Mapping[int, tuple[str, str]]]

DEFAULT_SNIPPETS = 50  # hits beyond this many come back without snippets (top-1000 stays fast)
VERSION_FILE = "medsearch-lexical.json"
REBUILD_HINT = "; run `medsearch ingest` to rebuild it from the store"
"""How every unusable-index error ends (ingest itself says it is rebuilding instead)."""


@dataclass(frozen=True, slots=True)
class LexicalHit:
    """One BM25 hit. ``snippet`` and ``title`` mark matched terms with ``<b>..</b>``.

    ``title`` is the highlighted title (empty when the hit was beyond the snippet limit
    or has no title); read both through :func:`snippet_spans` to render them.
    """

    pmid: int
    score: float
    snippet: str = ""
    title: str = ""


@dataclass(frozen=True, slots=True)
class Ranked:
    """:meth:`LexicalIndex.rank`: a search's PMIDs and scores, best first, no hits built."""

    scores: list[float]
    pmids: list[int]
    total: int
    filters: Filters
    terms: tuple[str, ...]
    dropped: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LexicalResult:
    """Hits best first, plus what the query meant.

    ``total`` is the exact number of matching documents when ``search(count=True)``
    (the default); with ``count=False`` it is a lower bound (the number of hits
    returned), which lets tantivy skip non-competitive documents (block-max WAND).
    ``filters`` are the effective filters: the caller's merged with the query's tags.
    ``terms`` are the analyzer tokens of the positive query words (``immun*`` for a
    prefix); :meth:`LexicalIndex.highlight` finds them in any text. ``dropped``: the
    commonest words of a long query, left out of the ranking to bound its cost
    (:class:`~medsearch.index.lexical.query.WordBudget`). ``truncated``: the ``word*``
    searched on their commonest ``MAX_EXPANSIONS`` variations only, as PubMed does.
    """

    hits: tuple[LexicalHit, ...]
    total: int
    filters: Filters = field(default_factory=Filters)
    terms: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    truncated: tuple[str, ...] = ()


class LexicalIndex:
    """The tantivy index in one directory; see the module docstring for the life cycle."""

    def __init__(
        self,
        path: Path,
        index: Any,
        texts: TextSource | None = None,
        version: int = ls.SCHEMA_VERSION,
    ) -> None:
        self.path = path
        self.texts = texts
        self.version = version
        # how plain words rank unless a caller says otherwise: a format-2 index has no
        # TITLE_ALONE field, so it keeps the dis_max it was built for
        self.ranking = Ranking() if version >= 3 else LEGACY_RANKING
        self._index = index
        self._schema = index.schema
        self._analyzers = ls.analyzers()
        ls.register(index)
        self._writer: Any | None = None
        self.writer_threads = writer_threads(os.cpu_count())
        self.writer_heap = WRITER_HEAP_BYTES

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        create: bool = True,
        texts: TextSource | None = None,
        write: bool = False,
    ) -> LexicalIndex:
        """Open the index at ``path``, creating it (when ``create``) if missing.

        A search reads any of :data:`ls.READABLE_VERSIONS`; an index opened to ``write``
        must be the current format, or documents would carry fields its schema lacks (the
        pipeline rebuilds an older one from the store).

        ``texts`` gives the (title, abstract) of PMIDs for snippets and highlighted
        titles: the article store already holds every text, so the index does not keep a
        second copy (that halves its size: 1.28 GB -> ~0.65 GB at 1M articles). Without
        it, hits come back without snippets.
        """
        path = Path(path)
        try:
            exists = (path / "meta.json").exists()
            if not exists:
                if not create:
                    raise StoreError(
                        f"no lexical index at {path}: run `medsearch ingest` to build it"
                    )
                path.mkdir(parents=True, exist_ok=True)
                index = tantivy.Index(ls.build_schema(), path=str(path), reuse=False)
                (path / VERSION_FILE).write_text(json.dumps({"schema": ls.SCHEMA_VERSION}))
                return cls(path, index, texts)
            version = _check_version(path, write=write)
            index = tantivy.Index.open(str(path)) if write else open_for_search(path)
            return cls(path, index, texts, version)
        except (ValueError, OSError) as exc:
            raise StoreError(
                f"the lexical index at {path} cannot be opened ({exc}){REBUILD_HINT}"
            ) from exc

    # -- writing -----------------------------------------------------------------------

    def _writer_or_open(self) -> Any:
        if self._writer is None:
            try:
                self._writer = self._index.writer(
                    heap_size=self.writer_heap, num_threads=self.writer_threads
                )
            except ValueError as exc:
                raise StoreError(
                    f"the lexical index at {self.path} is being written by another process ({exc})"
                ) from exc
        return self._writer

    def upsert(self, articles: Sequence[Article]) -> None:
        """Stage ``articles``, each replacing any document with its PMID."""
        self.upsert_documents([ls.document(ls.article_fields(a)) for a in articles])

    def upsert_documents(self, documents: Sequence[ls.Doc]) -> None:
        """:meth:`upsert` for documents a parser process built (:func:`ls.document`)."""
        writer = self._writer_or_open()
        with self._writer_alive():
            for pmid, text in documents:
                writer.delete_documents_by_term(ls.PMID, pmid)
                writer.add_json(text)

    @contextmanager
    def _writer_alive(self) -> Iterator[None]:
        """tantivy's "An index writer was killed": its indexing thread died, nearly
        always on a full disk while flushing a segment; every later call says the same.
        One line that says what to do, not an internal error."""
        try:
            yield
        except ValueError as exc:
            if "killed" not in str(exc):
                raise
            raise StoreError(
                f"the lexical index's writer at {self.path} stopped ({one_line(exc)}), most"
                " often because the disk is full; free space and run `medsearch ingest`"
                " again: the store keeps what it has and the index catches up"
            ) from exc

    def add(self, articles: Sequence[Article]) -> None:
        """Stage ``articles`` into an index that holds none of their PMIDs (a rebuild from
        the store, where each PMID is once).

        Not :meth:`upsert`: tantivy keeps every staged delete in memory until the commit,
        ~1.3 KB each, and a rebuild commits once at the end: 13 GB at 10M articles.
        """
        self.add_documents([ls.document(ls.article_fields(a)) for a in articles])

    def add_documents(self, documents: Sequence[ls.Doc]) -> None:
        """:meth:`add` for documents already built."""
        writer = self._writer_or_open()
        with self._writer_alive():
            for _, text in documents:
                writer.add_json(text)

    def delete_all(self) -> None:
        """Stage the removal of every document, in one operation (no per-document delete
        held in memory); documents added after it and before the commit stay."""
        self._writer_or_open().delete_all_documents()

    def delete(self, pmids: Sequence[int]) -> None:
        """Stage the removal of ``pmids`` (absent ones are ignored)."""
        writer = self._writer_or_open()
        with self._writer_alive():
            for pmid in pmids:
                writer.delete_documents_by_term(ls.PMID, int(pmid))

    def commit(self, payload: str | None = None) -> None:
        """Make staged changes durable; ``payload`` replaces the stored one if given.

        ``payload=None`` keeps the previous payload, so a commit of deletions does not
        lose the pipeline's resume point.
        """
        if self._writer is None and payload is None:
            return
        writer = self._writer_or_open()
        if payload is not None:
            writer.delete_documents_by_term(ls.META, ls.META_COMMIT)
            writer.add_document(ls.payload_document(payload))
        try:
            with self._writer_alive():
                writer.commit()
        except ValueError as exc:
            raise StoreError(f"cannot commit the lexical index at {self.path}: {exc}") from exc
        self._index.reload()

    def rollback(self) -> None:
        """Drop everything staged since the last commit."""
        if self._writer is not None:
            try:
                self._writer.rollback()
            except ValueError as exc:  # a killed writer has nothing staged to drop
                if "killed" not in str(exc):
                    raise
                self._writer = None

    def close(self) -> None:
        """Release the writer (uncommitted changes are dropped) so others can write."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.rollback()
            writer.wait_merging_threads()

    def __enter__(self) -> LexicalIndex:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------

    def last_commit_payload(self) -> str | None:
        searcher = self._index.searcher()
        query = tantivy.Query.term_query(self._schema, ls.META, ls.META_COMMIT)
        hits = searcher.search(query, 1, count=False).hits
        if not hits:
            return None
        value = searcher.doc(hits[0][1]).get_first(ls.PAYLOAD)
        return None if value is None else bytes(value).decode()

    def count(self) -> int:
        """Number of articles (the bookkeeping document is not one)."""
        searcher = self._index.searcher()
        meta = searcher.doc_freq(ls.META, ls.META_COMMIT)
        return int(searcher.num_docs) - min(int(meta), 1)

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.path.rglob("*") if p.is_file())

    def highlight(self, text: str, terms: Sequence[str]) -> list[tuple[int, int]]:
        """Character ranges of ``text`` matching ``terms`` (from ``LexicalResult.terms``)."""
        return highlight_spans(text, terms, self._analyzers.text)

    def search(
        self,
        query: str | ParsedQuery,
        *,
        k: int = 10,
        filters: Filters | None = None,
        count: bool = True,
        snippets: int = DEFAULT_SNIPPETS,
        syntax: bool = True,
        ranking: Ranking | None = None,
    ) -> LexicalResult:
        """The top ``k`` articles for a PubMed-style ``query`` (see ``medsearch.query``).

        Raises ``QuerySyntaxError`` for malformed queries. With ``syntax=False`` the
        text is plain ranked words and never raises (claims, citation sentences with
        ``[12]``). A query with only filters (``2020[dp]``) lists matching articles newest
        PMID first, all scored 0. ``ranking`` overrides the field boosts and stop-word
        handling (for experiments such as ``python -m benchmarks.lexical weights``).
        """
        ranked = self.rank(query, k=k, filters=filters, count=count, syntax=syntax, ranking=ranking)
        ids = ranked.pmids
        texts = self.texts(ids[:snippets]) if self.texts is not None and snippets > 0 else {}
        hits = []
        for score, pmid in zip(ranked.scores, ids, strict=True):
            snippet = title = ""
            if pmid in texts:  # without terms: the start of the abstract
                snippet, title = self._snippet(*texts[pmid], ranked.terms)
            hits.append(LexicalHit(pmid=pmid, score=score, snippet=snippet, title=title))
        return LexicalResult(
            hits=tuple(hits),
            total=ranked.total,
            filters=ranked.filters,
            terms=ranked.terms,
            dropped=ranked.dropped,
            truncated=ranked.truncated,
        )

    def rank(
        self,
        query: str | ParsedQuery,
        *,
        k: int = 10,
        filters: Filters | None = None,
        count: bool = True,
        syntax: bool = True,
        ranking: Ranking | None = None,
        frequencies: Frequencies | None = None,
    ) -> Ranked:
        """:meth:`search` without building hits: the PMIDs and scores, best first.

        A sharded index merges its shards' top ``k`` from these and builds hits for the
        merged top ``k`` alone: a thousand hit objects cost ~0.7 ms of Python under the
        GIL, which eight shards' threads would otherwise take in turn. It also hands
        every shard the same ``frequencies``, so they all leave out the same words.
        """
        if k < 1:
            raise UsageError(f"k must be at least 1, not {k}")
        caller = filters or Filters()
        parsed = parse_once(query, syntax=syntax)
        searcher = self._index.searcher()
        builder = QueryBuilder(
            self._schema,
            self._analyzers,
            ranking or self.ranking,
            frequencies or self.frequencies(searcher),
        )
        effective = caller.merge(parsed.filters)
        # applied separately: --journal X with Y[ta] needs both, merge() would allow either
        tantivy_query = builder.build(parsed.node, caller, parsed.filters)
        terms = tuple(dict.fromkeys(builder.terms))
        dropped = tuple(builder.dropped)
        truncated = tuple(builder.truncated)
        if tantivy_query is None:
            return Ranked(
                scores=[],
                pmids=[],
                total=0,
                filters=effective,
                terms=terms,
                dropped=dropped,
                truncated=truncated,
            )
        k = min(k, max(1, int(searcher.num_docs)))  # tantivy sizes its heap by k
        if parsed.node is None:  # filters only: no ranking, newest first like PubMed
            result = searcher.search(
                tantivy_query, k, count=count, order_by_field=ls.PMID, order=tantivy.Order.Desc
            )
            scores = [0.0] * len(result.hits)
        else:
            result = searcher.search(tantivy_query, k, count=count)
            scores = [float(score) for score, _ in result.hits]
        addresses = [address for _, address in result.hits]
        found = searcher.fast_field_values(ls.PMID, addresses) if addresses else []
        pmids = [int(p or 0) for p in found]
        total = int(result.count) if count and result.count is not None else len(pmids)
        return Ranked(
            scores=scores,
            pmids=pmids,
            total=total,
            filters=effective,
            terms=terms,
            dropped=dropped,
            truncated=truncated,
        )

    def counts(
        self,
        queries: Sequence[ParsedQuery],
        filters: Filters | None = None,
        frequencies: Frequencies | None = None,
    ) -> list[int]:
        """How many articles each of ``queries`` (and ``filters``) matches, unscored:
        ``--explain``'s count of every clause of a strategy. Each is wrapped in a
        constant score, so no BM25 is computed for the documents counted (half the
        time of a ranked count of a 50-term block at 100K articles), with one searcher
        and one set of statistics for all (a truncated word's variations are listed
        once), and one builder that builds each clause once however many of the
        queries hold it (:attr:`QueryBuilder.shared`: a block's terms are the terms
        counted alone), and a truncated word as the set of its variations in this
        index's own dictionary (:attr:`QueryBuilder.own`), no automaton compiled."""
        caller = filters or Filters()
        searcher = self._index.searcher()
        own = self.frequencies(searcher)
        builder = QueryBuilder(
            self._schema,
            self._analyzers,
            self.ranking,
            frequencies or own,
            shared={},
            own=own,
        )
        out: list[int] = []
        for query in queries:
            built = builder.build(query.node, caller, query.filters)
            if built is None:
                out.append(0)
                continue
            plain = tantivy.Query.const_score_query(built, 1.0)
            out.append(int(searcher.search(plain, 1, count=True).count or 0))
        return out

    def frequencies(self, searcher: Any | None = None) -> Frequencies:
        """This index's document frequencies, for one query's :class:`WordBudget`."""
        searcher = searcher or self._index.searcher()
        return Frequencies(
            int(searcher.num_docs), searcher.doc_freq, getattr(searcher, "terms_with_prefix", None)
        )

    def matching_pmids(self, filters: Filters, limit: int) -> tuple[np.ndarray | None, int]:
        """The PMIDs of every article ``filters`` accept, when there are at most ``limit``
        (else None), and how many there are (exact when listed; for a years-only filter
        over ``limit``, deleted documents awaiting a merge may still be counted).

        Counted first: a wide filter (a decade of PubMed, millions of articles) costs a
        count, not ``limit`` hits; a narrow one is read as PMIDs straight from the fast
        field, without building hits (dense search restricted to a filter asks this on
        every query: 0.5-1.5 s at 10M articles through :meth:`search`).
        """
        query = self._filter_query(filters)
        if query is None:
            return np.zeros(0, dtype=np.int64), 0
        searcher = self._index.searcher()
        total = _count(searcher, query, filters)
        if total > limit:
            return None, total
        if total == 0:
            return np.zeros(0, dtype=np.int64), 0
        found = searcher.search(query, total, count=False, order_by_field=ls.PMID)
        values = searcher.fast_field_values(ls.PMID, [a for _, a in found.hits])
        return np.asarray(values, dtype=np.int64), len(values)

    def set_pmids(
        self, query: ParsedQuery, size: int, filters: Filters | None = None
    ) -> np.ndarray:
        """The PMIDs of a set query's whole set, whose ``size`` the caller has counted:
        read in PMID order from the fast field, unscored (the dense side scores the set
        itself, so BM25's scores and a heap of ``size`` hits would be wasted work)."""
        if size <= 0:
            return np.zeros(0, dtype=np.int64)
        caller = filters or Filters()
        builder = QueryBuilder(self._schema, self._analyzers, self.ranking)
        built = builder.build(query.node, caller, query.filters)
        if built is None:
            return np.zeros(0, dtype=np.int64)
        searcher = self._index.searcher()
        found = searcher.search(built, size, count=False, order_by_field=ls.PMID)
        values = searcher.fast_field_values(ls.PMID, [a for _, a in found.hits])
        return np.asarray(values, dtype=np.int64)

    def _filter_query(self, filters: Filters) -> Any | None:
        """The query matching what ``filters`` accept (every article when empty)."""
        if filters.empty:
            return tantivy.Query.exists_query(ls.PMID)  # not the commit bookkeeping document
        return QueryBuilder(self._schema, self._analyzers, Ranking()).build(None, filters)

    def accepted(self, pmids: Sequence[int], filters: Filters) -> set[int]:
        """Those of ``pmids`` (articles of this index) that ``filters`` accept, asked of
        the index: the filter the lexical side applies and :meth:`matching_pmids`
        lists, without decoding the records (4,000 of them cost ~110 ms)."""
        query = self._filter_query(filters)
        if query is None or not pmids:
            return set()
        wanted = tantivy.Query.term_set_query(self._schema, ls.PMID, list(pmids))
        both = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, query), (tantivy.Occur.Must, wanted)]
        )
        searcher = self._index.searcher()
        found = searcher.search(both, len(pmids), count=False)
        return {int(p) for p in searcher.fast_field_values(ls.PMID, [a for _, a in found.hits])}

    def within(self, pmids: Sequence[int]) -> Any:
        """A query matching exactly ``pmids``, scoring 0: built once (~15 ms for 24K
        PMIDs) for the many :meth:`members` and :meth:`scores` checks of one candidate
        set (a hundred saved searches over a day's articles)."""
        return tantivy.Query.const_score_query(
            tantivy.Query.term_set_query(self._schema, ls.PMID, [int(p) for p in pmids]), 0.0
        )

    def members(
        self,
        pmids: Sequence[int],
        query: ParsedQuery,
        filters: Filters | None = None,
        within: Any | None = None,
    ) -> set[int]:
        """Those of ``pmids`` that ``query`` (and ``filters``) match: the set check a
        dense search inside a large set makes on its candidates, asked of the index as one
        query restricted to their PMIDs (a term set, or ``within`` built by
        :meth:`within` for them), never by reading the whole set."""
        if not pmids:
            return set()
        caller = filters or Filters()
        builder = QueryBuilder(self._schema, self._analyzers, self.ranking)
        built = builder.build(query.node, caller, query.filters)
        if built is None:
            return set()
        wanted = within if within is not None else self.within(pmids)
        both = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, built), (tantivy.Occur.Must, wanted)]
        )
        searcher = self._index.searcher()
        found = searcher.search(both, len(pmids), count=False)
        return {int(p) for p in searcher.fast_field_values(ls.PMID, [a for _, a in found.hits])}

    def scores(
        self,
        pmids: Sequence[int],
        query: ParsedQuery,
        filters: Filters | None = None,
        frequencies: Frequencies | None = None,
        within: Any | None = None,
    ) -> dict[int, float]:
        """The BM25 score :meth:`rank` gives each of ``pmids`` that ``query`` (and
        ``filters``) match, scored only among them (``within``: :meth:`within` of them,
        built before): a saved search checks the articles an update brought against the
        score its 50th hit had, without ranking the corpus."""
        if not pmids:
            return {}
        caller = filters or Filters()
        searcher = self._index.searcher()
        builder = QueryBuilder(
            self._schema, self._analyzers, self.ranking, frequencies or self.frequencies(searcher)
        )
        built = builder.build(query.node, caller, query.filters)
        if built is None:
            return {}
        wanted = within if within is not None else self.within(pmids)
        both = tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, built), (tantivy.Occur.Must, wanted)]
        )
        found = searcher.search(both, len(pmids), count=False)
        ids = searcher.fast_field_values(ls.PMID, [a for _, a in found.hits])
        return {int(p): float(s) for (s, _), p in zip(found.hits, ids, strict=True)}

    def _snippet(self, title: str, abstract: str, terms: Sequence[str]) -> tuple[str, str]:
        analyzer = self._analyzers.text
        return (
            make_snippet(abstract, highlight_spans(abstract, terms, analyzer)),
            mark(title, highlight_spans(title, terms, analyzer)),
        )


def parse_once(query: str | ParsedQuery, *, syntax: bool) -> ParsedQuery:
    """``query`` parsed, unless the caller already parsed it (the searcher parses once
    and hands the plan to every side)."""
    if isinstance(query, ParsedQuery):
        return query
    return parse_query(query) if syntax else parse_plain(query)


YEARS = (1000, 2999)  # the years ingest keeps (ingest.text.MIN_YEAR, MAX_YEAR)


def _count(searcher: Any, query: Any, filters: Filters) -> int:
    """How many documents ``query`` (``filters`` alone) matches.

    A filter on years alone (the usual one) is a sum of one term count per year, read
    from the term dictionary: counting the matches of "2010-2020" instead visits
    millions of postings (~100 ms per shard at 10M articles). Deleted documents not yet
    merged away still count there, a difference callers only use to choose a path.
    """
    if (
        filters.empty
        or filters.journals
        or filters.publication_types
        or filters.languages
        or filters.exclude_retracted
        or filters.date_from is not None
        or filters.date_to is not None
    ):
        return int(searcher.search(query, 1, count=True).count or 0)
    low = max(YEARS[0], filters.year_from if filters.year_from is not None else YEARS[0])
    high = min(YEARS[1], filters.year_to if filters.year_to is not None else YEARS[1])
    return sum(int(searcher.doc_freq(ls.YEAR, year)) for year in range(low, high + 1))


def recorded_version(path: Path) -> Any:
    """The schema version the index at ``path`` recorded as it was created (None if its
    marker is missing or unreadable)."""
    try:
        return json.loads((path / VERSION_FILE).read_text()).get("schema")
    except (OSError, ValueError, AttributeError):
        return None


def _check_version(path: Path, *, write: bool) -> int:
    """The index's format; one this process cannot use (write: only the current one)
    is a StoreError that names the fix."""
    version = recorded_version(path)
    usable = (ls.SCHEMA_VERSION,) if write else ls.READABLE_VERSIONS
    if version not in usable:
        raise StoreError(
            f"the lexical index at {path} has schema version {version}, this medsearch"
            f" needs {ls.SCHEMA_VERSION}{REBUILD_HINT}"
        )
    return int(version)


def one_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (tantivy's run to several)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
