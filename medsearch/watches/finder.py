"""What a watch is, once parsed, and which of an update's articles are new to it.

The candidates are the articles the update files applied since the watch last ran
added (and, when the watch asks, replaced): the store's ``file_changes`` rows say which,
so the cost follows the update (~30K articles a day), never the corpus. The lexical
index then answers one query restricted to those PMIDs (a term set), the watch's query
as a search runs it (its :class:`~medsearch.retrieval.sets.Plan`: MeSH headings
exploded and words mapped where MeSH is installed, so an article indexed under a
narrower heading is new to ``heading[mh]`` as it is to the search's count):

- a set query keeps the candidates its set now holds (PubMed's semantics: the set is
  what matches, whatever the order);
- a ranked query (plain words) keeps those scoring at least the watch's threshold, a
  BM25 score fixed when it was made (its :data:`~medsearch.watches.model.THRESHOLD_RANK`
  th hit's), so "new" means "as relevant as the first pages were".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from medsearch.index.lexical.index import LexicalIndex
from medsearch.mesh.expand import MeshLookup
from medsearch.records import Filters
from medsearch.retrieval.query_text import make_plan
from medsearch.retrieval.sets import Plan
from medsearch.store import Store
from medsearch.store.changes import ADDED, REPLACED, Changes
from medsearch.watches.book import now
from medsearch.watches.model import RANKED, SET, THRESHOLD_RANK, Found, Watch, check_name

CHUNK = 100_000
"""Candidates per index query: a term set of 100K PMIDs is ~1 MB of query; a watch
that has not run for months may have millions to check."""


def make_watch(
    name: str,
    query: str,
    *,
    store: Store,
    lexical: LexicalIndex,
    mode: str | None = None,
    filters: Filters | None = None,
    threshold: float | None = None,
    replaced: bool = False,
) -> Watch:
    """A new watch, starting from the store as it is now: what is already in the corpus
    is never new to it. A ranked watch's threshold, unless given, is the score of its
    :data:`THRESHOLD_RANK` th hit now (every match counts when it has fewer)."""
    check_name(name)
    query_plan = watch_plan(query, store, lexical, filters)
    parsed = query_plan.parsed
    kind = SET if query_plan.is_set else RANKED
    chosen = query_plan.filters
    if kind == RANKED and threshold is None:
        ranked = lexical.rank(parsed, k=THRESHOLD_RANK, filters=chosen, count=False)
        threshold = ranked.scores[-1] if len(ranked.scores) >= THRESHOLD_RANK else 0.0
    return Watch(
        name=name,
        query=query,
        kind=kind,
        mode=mode,
        filters=chosen,
        threshold=threshold if kind == RANKED else None,
        replaced=replaced,
        created=now(),
        last_run=None,
        last_change=store.last_change(),
    )


def watch_plan(
    query: str, store: Store, lexical: LexicalIndex, filters: Filters | None = None
) -> Plan:
    """The plan a search of ``query`` with ``filters`` runs on this corpus, MeSH applied
    where installed, the restrictions in it
    (:func:`~medsearch.retrieval.query_text.make_plan`; the query language always: a
    watch is saved from a query that parsed)."""
    mesh = MeshLookup.open(store.conn)
    return make_plan(query, mesh=mesh, lexical=lexical, filters=filters)


def candidates(watch: Watch, changes: Changes) -> dict[int, str]:
    """The articles to check, each with how it came: added, or replaced when the watch
    counts replacements."""
    found = dict.fromkeys(changes.added, ADDED)
    if watch.replaced:
        found.update(dict.fromkeys(changes.replaced, REPLACED))
    return found


@dataclass(frozen=True)
class Candidates:
    """The articles to check and the index's restriction to them, built once for every
    watch that reads the same changes (a term set of 24K PMIDs costs ~15 ms to build)."""

    how: dict[int, str]
    chunks: tuple[tuple[Sequence[int], Any], ...]


def gather_candidates(watch: Watch, changes: Changes, lexical: LexicalIndex) -> Candidates:
    """The articles of ``changes`` that ``watch`` must check, chunked with the lexical
    index's restriction to each chunk."""
    how = candidates(watch, changes)
    chunks = tuple((chunk, lexical.within(chunk)) for chunk in _chunks(how))
    return Candidates(how, chunks)


def find_new(
    watch: Watch,
    changes: Changes,
    lexical: LexicalIndex,
    gathered: Candidates | None = None,
    *,
    plan: Plan,
) -> Found:
    """The candidates ``watch`` matches: a set query's members newest PMID first, a
    ranked query's at or above its threshold best first. ``gathered``: the candidates of
    ``changes`` for this watch, from :func:`gather_candidates`; ``plan``: the watch's
    query as a search runs it now (:func:`watch_plan`: today's MeSH decides the
    explosion, as it does for the search's count)."""
    todo = gathered or gather_candidates(watch, changes, lexical)
    parsed = plan.parsed
    hits: list[tuple[int, str, float]]
    if watch.kind == SET:
        members: set[int] = set()
        for chunk, within in todo.chunks:
            members |= lexical.members(chunk, parsed, plan.filters, within)
        hits = [(p, todo.how[p], 0.0) for p in sorted(members, reverse=True)]
    else:
        scored: dict[int, float] = {}
        for chunk, within in todo.chunks:
            scored.update(lexical.scores(chunk, parsed, plan.filters, within=within))
        floor = watch.threshold or 0.0
        kept = [(p, s) for p, s in scored.items() if s >= floor]
        kept.sort(key=lambda ps: (-ps[1], -ps[0]))
        hits = [(p, todo.how[p], s) for p, s in kept]
    return Found(watch=watch, hits=tuple(hits), candidates=len(todo.how))


def _chunks(pmids: Iterable[int]) -> Iterable[Sequence[int]]:
    ordered = sorted(pmids)
    for start in range(0, len(ordered), CHUNK):
        yield ordered[start : start + CHUNK]
