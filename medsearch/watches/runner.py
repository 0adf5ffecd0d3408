"""Run every watch against what the store received since it last ran; the digest.

Runs read the corpus (store and lexical index, read-only) and write only
``watches.sqlite`` and the feeds, so ``watch run`` needs no writer lock and can run
beside a search. ``update`` calls :func:`run_watches` after its files are applied.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from medsearch.errors import MedsearchError, StoreError
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.safe_text import terminal_text
from medsearch.store import Store
from medsearch.store.changes import Changes
from medsearch.watches.book import WatchBook, now
from medsearch.watches.feed import FEED_ENTRIES, write_feed
from medsearch.watches.finder import Candidates, find_new, gather_candidates, watch_plan
from medsearch.watches.model import REFERENCES, Found, Watch
from medsearch.watches.references import changed_and_noticed, find_notices

DIGEST_LINES = 10
"""Hits a digest lists per watch; the rest are counted (the feed and ``watch show``
have them all)."""


@dataclass(frozen=True, slots=True)
class NewHit:
    pmid: int
    change: str
    score: float
    title: str
    journal: str
    year: int | None
    notice: int | None = None
    """A reference list's hit: the notice's PMID (``change`` is the status)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pmid": self.pmid,
            "change": self.change,
            "score": round(self.score, 6),
            "title": self.title,
            "journal": self.journal,
            "year": self.year,
            "notice": self.notice,
        }


@dataclass(frozen=True, slots=True)
class WatchNews:
    """What one run brought one watch: the hits it did not hold before."""

    watch: Watch
    hits: tuple[NewHit, ...]
    checked: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.watch.name,
            "query": self.watch.query,
            "kind": self.watch.kind,
            "threshold": self.watch.threshold,
            "new": len(self.hits),
            "checked": self.checked,
            "hits": [{"rank": i, **h.to_dict()} for i, h in enumerate(self.hits, 1)],
        }


@dataclass(frozen=True, slots=True)
class RunReport:
    news: tuple[WatchNews, ...] = ()
    files: tuple[str, ...] = ()
    """Update files whose changes the watches read this run."""
    notes: tuple[str, ...] = ()
    exec_failures: tuple[str, ...] = field(default=())

    @property
    def new(self) -> int:
        return sum(len(n.hits) for n in self.news)

    def to_dict(self) -> dict[str, Any]:
        return {
            "new": self.new,
            "files": list(self.files),
            "watches": [n.to_dict() for n in self.news],
            "notes": list(self.notes),
            "exec_failures": list(self.exec_failures),
        }


def run_watches(paths: Paths, *, names: Sequence[str] = ()) -> RunReport:
    """Run the watches called ``names`` (every watch when empty)."""
    from medsearch.index.lexical.shards import open_lexical

    with WatchBook(paths.watches_file) as book:
        watches = [book.get(n) for n in names] if names else book.all()
        if not watches:
            return RunReport()
        if not paths.store.exists():
            raise StoreError(f"no corpus in {paths.home} yet; run `medsearch ingest` first")
        with Store(paths.store, readonly=True) as store:
            if store.unindexed.count():
                return RunReport(
                    notes=(
                        "the lexical index is catching up with the store (another"
                        " medsearch is writing); watches run once it has: run `medsearch"
                        " watch run` after it finishes",
                    )
                )
            with open_lexical(paths.lexical_index, create=False) as lexical:
                by_point: dict[int, Changes] = {}
                gathered: dict[tuple[int, bool], Candidates] = {}
                touched: dict[int, frozenset[int]] = {}
                news: list[WatchNews] = []
                notes: list[str] = []
                files: dict[str, None] = {}
                when = now()
                for watch in watches:
                    if watch.last_change not in by_point:
                        by_point[watch.last_change] = store.changes_after(
                            watch.last_change, baseline=False
                        )
                    changes = by_point[watch.last_change]
                    files.update(dict.fromkeys(changes.files))
                    if watch.kind == REFERENCES:
                        if watch.last_change not in touched:
                            touched[watch.last_change] = changed_and_noticed(changes, store)
                        news.append(
                            _record_references(
                                paths,
                                book,
                                store,
                                watch,
                                touched[watch.last_change],
                                changes.last,
                                when,
                                notes,
                            )
                        )
                        continue
                    key = (watch.last_change, watch.replaced)
                    try:
                        if key not in gathered:
                            gathered[key] = gather_candidates(watch, changes, lexical)
                        plan = watch_plan(watch.query, store, lexical, watch.filters)
                        found = find_new(watch, changes, lexical, gathered[key], plan=plan)
                    except MedsearchError as exc:  # one broken watch does not stop the rest
                        notes.append(f"watch {watch.name} did not run: {exc}")
                        continue
                    news.append(_record(paths, book, store, found, changes.last, when, notes))
    return RunReport(news=tuple(news), files=tuple(files), notes=tuple(notes))


def _record(
    paths: Paths,
    book: WatchBook,
    store: Store,
    found: Found,
    last: int,
    when: str,
    notes: list[str],
) -> WatchNews:
    """Keep one watch's run (its hits, how far it read) and rewrite its feed."""
    name = found.watch.name
    fresh = set(book.record_run(name, found.hits, last, when))
    chosen = [h for h in found.hits if h[0] in fresh]
    articles = store.get_many([p for p, _, _ in chosen])
    _write_feed(paths, book, store, name, when, notes)
    watch = book.get(name)
    return WatchNews(
        watch, tuple(_new_hit(h, articles.get(h[0])) for h in chosen), found.candidates
    )


def _record_references(
    paths: Paths,
    book: WatchBook,
    store: Store,
    watch: Watch,
    touched: frozenset[int],
    last: int,
    when: str,
    notes: list[str],
) -> WatchNews:
    """Keep one reference list's run and rewrite its feed."""
    refs = book.references(watch.name)
    flagged, known = find_notices(refs, touched, store)
    book.record_notices(watch.name, flagged, known, last, when)
    articles = store.get_many([p for p, _, _ in flagged])
    _write_feed(paths, book, store, watch.name, when, notes)
    hits = []
    for pmid, status, notice in flagged:
        article = articles.get(pmid)
        hits.append(
            NewHit(
                pmid,
                status,
                0.0,
                article.title if article else "",
                article.journal if article else "",
                article.year if article else None,
                notice,
            )
        )
    return WatchNews(book.get(watch.name), tuple(hits), len(touched.intersection(refs)))


def _write_feed(
    paths: Paths, book: WatchBook, store: Store, name: str, when: str, notes: list[str]
) -> None:
    latest = book.hits(name)[:FEED_ENTRIES]
    try:
        write_feed(
            paths.feeds, book.get(name), latest, store.get_many([h.pmid for h in latest]), when
        )
    except OSError as exc:
        notes.append(f"watch {name}: cannot write its feed: {exc.strerror or exc}")


def _new_hit(hit: tuple[int, str, float], article: Article | None) -> NewHit:
    pmid, change, score = hit
    if article is None:  # deleted since: the digest still says which PMID it was
        return NewHit(pmid, change, score, "", "", None)
    return NewHit(pmid, change, score, article.title, article.journal, article.year)


def digest_text(report: RunReport, *, only_new: bool = False) -> str:
    """The digest people read (and ``--exec`` commands receive): a line per watch, then
    its new hits. ``only_new``: leave out watches with nothing new ("" when none has)."""
    shown = [n for n in report.news if n.hits or not only_new]
    if not shown:
        return ""
    lines: list[str] = []
    for news in shown:
        lines.extend(watch_digest(news))
    return "\n".join(lines) + "\n"


def watch_digest(news: WatchNews) -> list[str]:
    """One watch's part of the digest."""
    watch = news.watch
    count = len(news.hits)
    noun = "newly flagged reference" if watch.kind == REFERENCES else "new article"
    what = f"{count} {noun}{'s' * (count != 1)}" if count else "nothing new"
    lines = [f"{watch.name} ({terminal_text(watch.query)}): {what}"]
    for hit in news.hits[:DIGEST_LINES]:
        where = terminal_text(", ".join(str(x) for x in (hit.journal, hit.year) if x))
        mark = " [revised]" if hit.change == "replaced" else ""
        if watch.kind == REFERENCES:
            mark = f" {flag(hit.change, hit.notice)}"
        title = terminal_text(hit.title or "(deleted since)")  # a record's text, shown raw
        lines.append(f"  PMID {hit.pmid}{mark}  {title}" + (f" ({where})" if where else ""))
    if count > DIGEST_LINES:
        lines.append(
            f"  ... and {count - DIGEST_LINES} more: medsearch watch show {watch.name} --new"
        )
    return lines


def flag(status: str, notice: int | None) -> str:
    """``RETRACTED (notice PMID 32167152)``: how a flagged reference is marked."""
    return status.upper() + (f" (notice PMID {notice})" if notice else "")


def pipe_digests(report: RunReport, command: str) -> tuple[str, ...]:
    """Pipe each watch's digest that has news to ``command`` (run by the shell, the
    watch's name in ``MEDSEARCH_WATCH`` and its count in ``MEDSEARCH_NEW``): a user can
    mail it with their own tools, and medsearch holds no credentials. The failures, one
    line each."""
    failures: list[str] = []
    for news in report.news:
        if not news.hits:
            continue
        env = {
            **os.environ,
            "MEDSEARCH_WATCH": news.watch.name,
            "MEDSEARCH_NEW": str(len(news.hits)),
        }
        text = "\n".join(watch_digest(news)) + "\n"
        try:
            done = subprocess.run(
                command, shell=True, input=text, text=True, env=env, check=False, timeout=300
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{news.watch.name}: {command!r} failed: {exc}")
            continue
        if done.returncode != 0:
            failures.append(f"{news.watch.name}: {command!r} exited {done.returncode}")
    return tuple(failures)
