"""Reference-list watches: a manuscript's references, re-checked after every update.

``medsearch check FILE --watch NAME`` (and the TUI basket) saves the resolved PMIDs
with the notices each already has; a run reports the references that gained a
retraction, an expression of concern or a correction since, with the notice's PMID.

The cost follows the update, never the corpus: the ``file_changes`` rows since the
watch last ran say which PMIDs the applied files added or replaced. A reference's
status can change two ways, and both show there:

- its own record is sent again with a ``RetractionIn`` link (or the publication type
  ``Retracted Publication``): its PMID is among the changed ones;
- a notice record arrives (``RetractionOf`` a reference): the notice's PMID is among
  the changed ones, and its ``notice_for`` column names the reference (the writer has
  already given the reference's own record the link, :meth:`Store.add_late_notices`).

So only the watched PMIDs that are changed or named by a changed notice are read.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from medsearch import notices as nt
from medsearch.records import Filters, Notice
from medsearch.store import Store
from medsearch.store.changes import Changes
from medsearch.store.columns import notices_from_json
from medsearch.watches.book import now
from medsearch.watches.model import REFERENCES, Watch, check_name

ALERTS = (nt.RETRACTED, nt.CONCERN, nt.CORRECTED)
"""The statuses a reference list is alerted to (an ``UpdateIn`` is not news of a flaw)."""

Known = set[tuple[str, int | None]]
"""The (status, notice PMID) pairs already seen for one reference."""

_CHUNK = 500


def known_of(found: Iterable[Notice]) -> Known:
    return {(n.status, n.pmid) for n in found if n.status in ALERTS}


def make_reference_watch(
    name: str, pmids: Sequence[int], source: str, store: Store
) -> tuple[Watch, dict[int, Known]]:
    """A new watch of ``pmids`` and the notices they have now (never news to it)."""
    check_name(name)
    unique = sorted(set(pmids))
    articles = store.get_many(unique)
    known = {p: known_of(nt.notices(articles[p])) if p in articles else set() for p in unique}
    watch = Watch(
        name=name,
        query=f"{len(unique)} reference{'s' * (len(unique) != 1)} from {source}",
        kind=REFERENCES,
        mode=None,
        filters=Filters(),
        threshold=None,
        replaced=False,
        created=now(),
        last_run=None,
        last_change=store.last_change(),
    )
    return watch, known


def changed_and_noticed(changes: Changes, store: Store) -> frozenset[int]:
    """The PMIDs whose status may have changed in ``changes``: those added or replaced,
    and those a changed notice record is about. Built once per window and shared by
    every reference-list watch that reads it."""
    changed = sorted(changes.added | changes.replaced)
    try:
        return frozenset(changed) | noticed_by(store.conn, changed)
    except sqlite3.OperationalError:  # a store before the notice columns: read the records
        out: set[int] = set(changed)
        for start in range(0, len(changed), _CHUNK):
            for article in store.get_many(changed[start : start + _CHUNK]).values():
                out.update(n.pmid for n in nt.notice_for(article) if n.pmid is not None)
        return frozenset(out)


def noticed_by(conn: sqlite3.Connection, pmids: Sequence[int]) -> frozenset[int]:
    """The articles that the notice records among ``pmids`` are about: a primary-key
    lookup per PMID in ``articles`` (its ``notice_for`` column), ~30K a day."""
    out: set[int] = set()
    for start in range(0, len(pmids), _CHUNK):
        chunk = pmids[start : start + _CHUNK]
        marks = ",".join("?" * len(chunk))
        for (text,) in conn.execute(
            f"SELECT notice_for FROM articles WHERE pmid IN ({marks}) AND notice_for != '[]'",
            chunk,
        ):
            out.update(n.pmid for n in notices_from_json(text) if n.pmid is not None)
    return frozenset(out)


def find_notices(
    refs: dict[int, Known], touched: frozenset[int], store: Store
) -> tuple[list[tuple[int, str, int | None]], dict[int, Known]]:
    """The references among ``touched`` with a notice not seen before: (PMID, strongest
    new status, its notice PMID), strongest first; and every looked-at reference's
    notices now known (those seen before are kept, so nothing is reported twice)."""
    look = sorted(touched.intersection(refs))
    articles = store.get_many(look)
    news: list[tuple[int, str, int | None]] = []
    known: dict[int, Known] = {}
    for pmid in look:
        article = articles.get(pmid)
        if article is None:  # deleted: nothing to say about it
            continue
        found = nt.notices(article)
        fresh = [n for n in found if n.status in ALERTS and (n.status, n.pmid) not in refs[pmid]]
        if fresh:
            news.append((pmid, fresh[0].status, fresh[0].pmid))
            known[pmid] = refs[pmid] | known_of(found)
    order = {status: rank for rank, status in enumerate(ALERTS)}
    news.sort(key=lambda hit: (order[hit[1]], hit[0]))
    return news, known
