"""Recording a search, resolving ``#N``, and re-running a line to see what changed.

Plain functions of a :class:`~medsearch.retrieval.searcher.Searcher` and a data home:
the CLI and the TUI call the same ones, after the search they ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from medsearch.errors import NotFoundError, QuerySyntaxError, UsageError
from medsearch.history.entries import SET_LIMIT, Entry
from medsearch.history.store import HistoryStore, now, open_history
from medsearch.paths import Paths
from medsearch.query.nodes import ParsedQuery
from medsearch.query.normalize import repair_undecodable
from medsearch.query.parser import parse_plain, parse_query
from medsearch.query.printer import format_query
from medsearch.records import Filters
from medsearch.store.snapshot import Snapshot, corpus_snapshot, provenance

if TYPE_CHECKING:
    from medsearch.retrieval.cite import CiteResult
    from medsearch.retrieval.results import SearchResult
    from medsearch.retrieval.searcher import Searcher


def _line(paths: Paths, number: int) -> Entry | None:
    """Line ``number`` of this home's history, read-only; None when there is no such
    line (or no history yet)."""
    history = open_history(paths, write=False)
    if history is None:
        return None
    with history:
        return history.get(number)


def resolver(paths: Paths) -> Callable[[int], str]:
    """``#N`` -> the query as run of line N of this home's history (read when a query
    holds a reference, never otherwise)."""

    def resolve(number: int) -> str:
        entry = _line(paths, number)
        if entry is None:
            raise QuerySyntaxError(f"no search #{number} in the history (see: medsearch history)")
        if not entry.ran or entry.line is None:
            raise QuerySyntaxError(
                f"search #{number} was imported from the old recall file and never run here;"
                " search it again and use its new number"
            )
        if entry.command != "search":
            raise QuerySyntaxError(
                f"#{number} is a list of {_LISTS.get(entry.command, 'articles')}, not a query:"
                " it cannot be combined"
            )
        return entry.line

    return resolve


_LISTS = {"similar": "similar articles", "cite": "suggested references"}


def parsed_as_run(text: str, paths: Paths) -> ParsedQuery:
    """``text`` as the searcher read it: the query language with ``#N`` expanded, or,
    for prose that does not parse, its plain words (the searcher's own fallback)."""
    try:
        return parse_query(text, history=resolver(paths))
    except QuerySyntaxError:
        return parse_plain(text)


def result_set(searcher: Searcher, result: SearchResult) -> np.ndarray | None:
    """The PMIDs of a set query's whole set when it holds at most :data:`SET_LIMIT`;
    listed from the hits when they are all of it, else from the lexical index with the
    search's own plan (the query as run: MeSH exploded, its filters), so the set kept
    is the set counted. None for ranked words or a larger set."""
    if result.counted != "set" or result.total > SET_LIMIT:
        return None
    if result.total <= len(result.hits):
        return np.array(sorted(h.pmid for h in result.hits), dtype=np.int64)
    assert result.plan is not None, "a search's result carries its plan"
    plan = result.plan
    return np.sort(searcher.lexical.set_pmids(plan.parsed, result.total, plan.filters))


def _as_read(result: SearchResult, typed: str, paths: Paths) -> str:
    """The query as read (before MeSH), printed: the plan's own reading."""
    parsed = result.plan.as_read if result.plan is not None else parsed_as_run(typed, paths)
    return format_query(parsed)


@dataclass(frozen=True, slots=True)
class SearchRecord:
    """What the history keeps of a search beyond what was typed and the filters: the
    query as read and as run, its count and set, and the corpus it ran against.

    The searcher that ran the search makes it (:func:`search_record`); a running service
    sends it to the CLI (``to_dict``), which records it in its own history, so the
    service writes nothing in the home and a served search is kept as one run alone."""

    query: str
    mode: str
    total: int
    counted: str | None
    snapshot: Snapshot
    pmids: np.ndarray | None
    translation: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "total": self.total,
            "counted": self.counted,
            "snapshot": asdict(self.snapshot),
            "pmids": None if self.pmids is None else self.pmids.tolist(),
            "translation": self.translation,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SearchRecord:
        pmids = data.get("pmids")
        return cls(
            query=str(data["query"]),
            mode=str(data["mode"]),
            total=int(data["total"]),
            counted=data.get("counted"),
            snapshot=Snapshot(**data["snapshot"]),
            pmids=None if pmids is None else np.array(pmids, dtype=np.int64),
            translation=data.get("translation"),
        )


def search_record(
    paths: Paths, searcher: Searcher, typed: str, result: SearchResult
) -> SearchRecord:
    """What :func:`record_search` keeps of ``result``, read from the searcher that ran it."""
    return SearchRecord(
        query=_as_read(result, repair_undecodable(typed), paths),
        mode=result.mode,
        total=result.total,
        counted=result.counted,
        snapshot=corpus_snapshot(searcher.store),
        pmids=result_set(searcher, result),
        translation=_translation(result),
    )


def record_search(
    paths: Paths,
    searcher: Searcher,
    typed: str,
    result: SearchResult,
    *,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """Append the search just run to the history; its ``#N``, or None when the home is
    read-only (nothing is recorded there, and the search is not the worse for it). The
    restrictions recorded are the plan's (``--year`` ... as the search ran them).

    ``history``: a connection the caller keeps open (the TUI's, for its whole run; the
    CLI's, closed after the results are printed). Its close is what costs: the last
    connection folds the write-ahead log into the file and syncs it (two fsyncs, ~28 ms
    on this project's VM disk); the line itself is a commit to the log, not synced.
    """
    assert result.plan is not None, "a search's result carries its plan"
    kept = search_record(paths, searcher, typed, result)
    filters = result.plan.filters
    return record_kept(paths, typed, kept, filters=filters, source=source, history=history)


def record_kept(
    paths: Paths,
    typed: str,
    kept: SearchRecord,
    *,
    filters: Filters,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """Append a search from its :class:`SearchRecord` (made here or by the service);
    its ``#N``, or None in a read-only home."""
    typed = repair_undecodable(typed)  # argv bytes that were not UTF-8, as the search read them
    entry = Entry(
        number=0,
        at=now(),
        command="search",
        typed=" ".join(typed.split()),
        query=kept.query,
        mode=kept.mode,
        filters=filters,
        total=kept.total,
        counted=kept.counted,
        snapshot=kept.snapshot,
        pmids=kept.pmids,
        source=source,
        translation=kept.translation,
    )
    return _append(paths, history, entry)


def _translation(result: SearchResult) -> str | None:
    """The MeSH translation the search ran (none without MeSH, or for plain words MeSH
    left as typed)."""
    return result.translation or None


def record_similar(
    paths: Paths,
    searcher: Searcher,
    pmid: int,
    result: SearchResult,
    *,
    filters: Filters,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """Append a similar-articles list to the history (its count: the articles listed);
    its ``#N``, or None in a read-only home. Not a set: ``#N`` cannot combine it."""
    snapshot = corpus_snapshot(searcher.store)
    return record_similar_kept(
        paths, pmid, result, snapshot, filters=filters, source=source, history=history
    )


def record_similar_kept(
    paths: Paths,
    pmid: int,
    result: SearchResult,
    snapshot: Snapshot,
    *,
    filters: Filters,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """:func:`record_similar` from the corpus ``snapshot`` the list ran against (the
    running service sends it with a served list)."""
    entry = Entry(
        number=0,
        at=now(),
        command="similar",
        typed=f"similar {pmid}",
        query=f"similar articles to PMID {pmid}, top {len(result.hits)}",
        mode=result.mode,
        filters=filters,
        total=len(result.hits),
        snapshot=snapshot,
        source=source,
    )
    return _append(paths, history, entry)


def record_cite(
    paths: Paths,
    searcher: Searcher,
    paragraph: str,
    result: CiteResult,
    *,
    k: int,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """Append the references suggested for a paragraph: the paragraph as typed, and
    every suggested PMID as the line's set (its count: how many distinct ones). A list
    ranked per sentence by the dense side, not a query: ``#N`` cannot combine it and it
    does not re-run, as for similar articles; the set is what the log keeps of it.
    Its ``#N``, or None in a read-only home."""
    pmids = np.array([h.pmid for c in result.citances for h in c.result.hits], dtype=np.int64)
    return record_cite_kept(
        paths,
        paragraph,
        CiteKept(
            pmids=pmids,
            sentences=len(result.citances),
            before=result.before,
            modes=tuple(c.result.mode for c in result.citances),
            snapshot=corpus_snapshot(searcher.store),
        ),
        k=k,
        source=source,
        history=history,
    )


@dataclass(frozen=True, slots=True)
class CiteKept:
    """What the history keeps of a cite run: every suggested PMID, how many citing
    sentences, the ``--before`` year, each sentence's mode and the corpus snapshot (a
    running service's answer gives them all, so the CLI records a served cite too)."""

    pmids: np.ndarray
    sentences: int
    before: int | None
    modes: tuple[str, ...]
    snapshot: Snapshot


def record_cite_kept(
    paths: Paths,
    paragraph: str,
    kept: CiteKept,
    *,
    k: int,
    source: str = "cli",
    history: HistoryStore | None = None,
) -> int | None:
    """:func:`record_cite` from what it keeps; its ``#N``, or None in a read-only home."""
    pmids = np.unique(kept.pmids.astype(np.int64))
    sentences = kept.sentences
    asked = f"references suggested for {sentences} citing sentence{'s' * (sentences != 1)}"
    asked += f", top {k} each"
    if kept.before is not None:
        asked += f", published before {kept.before}"
    modes = set(kept.modes)
    entry = Entry(
        number=0,
        at=now(),
        command="cite",
        typed=" ".join(paragraph.split()),
        query=asked,
        mode=modes.pop() if len(modes) == 1 else None,
        total=len(pmids),
        snapshot=kept.snapshot,
        pmids=pmids,
        source=source,
    )
    return _append(paths, history, entry)


@dataclass(frozen=True, slots=True)
class Change:
    """One article that entered, left or changed within a line's set since it ran."""

    pmid: int
    file: str | None
    """The ledger file that brought the change (None: no file after the search did)."""
    why: str


@dataclass(frozen=True, slots=True)
class Rerun:
    """A history line run again on today's corpus, and what changed since."""

    then: Entry
    now: Entry
    number: int | None
    """The new line's ``#N`` (None in a read-only home)."""
    added: tuple[Change, ...] = ()
    removed: tuple[Change, ...] = ()
    replaced: tuple[Change, ...] = ()
    unavailable: str | None = None
    """Why no article-level diff could be made (then only the counts compare)."""

    def to_dict(self) -> dict[str, object]:
        def rows(changes: tuple[Change, ...]) -> list[dict[str, object]]:
            return [{"pmid": c.pmid, "file": c.file, "why": c.why} for c in changes]

        return {
            "then": self.then.to_dict(),
            "now": {**self.now.to_dict(), "number": self.number},
            "diff_available": self.unavailable is None,
            "unavailable": self.unavailable,
            "added": rows(self.added),
            "removed": rows(self.removed),
            "replaced": rows(self.replaced),
        }


def rerun(paths: Paths, searcher: Searcher, number: int, *, source: str = "cli") -> Rerun:
    """Line ``number`` run again (lexical: a set is the same in every mode, and no model
    loads) and recorded as a new line typed ``#number``; with its diff when both runs
    kept their set. The query as read runs, translated by the MeSH installed now: after
    a new year's MeSH, its tree decides the explosion, and the diff shows what changed."""
    then = _line(paths, number)
    if then is None:
        raise NotFoundError(f"no search #{number} in the history (see: medsearch history)")
    if not then.ran or then.query is None:
        raise UsageError(
            f"#{number} was imported from the old recall file and never run here: nothing"
            " to compare with"
        )
    if then.command != "search":
        raise UsageError(
            f"#{number} is a list of {_LISTS.get(then.command, 'articles')}: only searches re-run"
        )
    result = searcher.search(
        then.query, mode="lexical", k=1, filters=then.filters, rerank="none", snippets=False
    )
    current = Entry(
        number=0,
        at=now(),
        command="search",
        typed=f"#{number}",
        query=then.query,
        mode=result.mode,
        filters=result.plan.filters if result.plan is not None else then.filters,
        total=result.total,
        counted=result.counted,
        snapshot=corpus_snapshot(searcher.store),
        pmids=result_set(searcher, result),
        source=source,
        translation=_translation(result),
    )
    writer = open_history(paths)
    new_number = None
    if writer is not None:
        with writer:
            new_number = writer.record(current)
    reason = _unavailable(then, current)
    if reason is not None:
        return Rerun(then, current, new_number, unavailable=reason)
    assert then.pmids is not None and current.pmids is not None and then.snapshot is not None
    return _diff(searcher, then, current, new_number, then.snapshot.file_mark)


def _unavailable(then: Entry, now_: Entry) -> str | None:
    if then.counted != "set":
        return "plain words are ranked, not a set: only the counts compare"
    for entry, when in ((then, "then"), (now_, "now")):
        if entry.pmids is None:
            return (
                f"the set had {entry.total:,} articles {when}; the history keeps sets of"
                f" at most {SET_LIMIT:,}"
            )
    if then.snapshot is None:
        return "the line has no corpus snapshot"
    return None


def _diff(searcher: Searcher, then: Entry, now_: Entry, number: int | None, mark: int) -> Rerun:
    assert then.pmids is not None and now_.pmids is not None
    before = set(then.pmids.tolist())
    after = set(now_.pmids.tolist())
    where = provenance(searcher.store, sorted(before | after))

    def later(pmid: int, table: dict[int, int | None]) -> str | None:
        file_id = table.get(pmid)
        if file_id is None or file_id <= mark:
            return None
        return where.names.get(file_id, f"file #{file_id}")

    added = tuple(
        Change(p, file, "new or revised article now in the set")
        if (file := later(p, where.written)) is not None
        else Change(p, None, "now matches (no file changed it)")
        for p in sorted(after - before)
    )
    removed = []
    for pmid in sorted(before - after):
        if pmid not in where.written:
            removed.append(Change(pmid, later(pmid, where.deleted), "deleted"))
        elif (file := later(pmid, where.written)) is not None:
            removed.append(Change(pmid, file, "revised; no longer matches"))
        else:
            removed.append(Change(pmid, None, "no longer matches (no file changed it)"))
    replaced = tuple(
        Change(p, file, "revised by a later file")
        for p in sorted(before & after)
        if (file := later(p, where.written)) is not None
    )
    return Rerun(then, now_, number, added=added, removed=tuple(removed), replaced=replaced)


def _append(paths: Paths, history: HistoryStore | None, entry: Entry) -> int | None:
    """Append ``entry``: to ``history`` when the caller keeps one open, else to the home's
    history opened (and closed) for this line; its ``#N``, or None in a read-only home."""
    if history is not None:
        return history.record(entry)
    own = open_history(paths)
    if own is None:
        return None
    with own:
        return own.record(entry)
