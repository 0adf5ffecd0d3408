"""A watch, a hit, and what one run found: plain frozen records."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from medsearch.errors import UsageError
from medsearch.records import Filters

SET = "set"
RANKED = "ranked"
REFERENCES = "references"
"""A reference list's PMIDs (``check FILE --watch``): a hit is a reference that became
retracted, under an expression of concern or corrected, with the notice's PMID."""
THRESHOLD_RANK = 50
"""A ranked watch keeps new articles scoring at least as well as its 50th hit did when
it was made: close to what a reader scanning its first page or two would have seen."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def check_name(name: str) -> str:
    """A watch name is also its feed's file name: letters, digits, ``_.-``, 1-64."""
    if not _NAME.fullmatch(name):
        raise UsageError(
            f"watch name {name!r}: use 1-64 letters, digits, '_', '.' or '-',"
            " starting with a letter or digit"
        )
    return name


def filters_to_json(filters: Filters) -> str:
    return json.dumps(
        {k: v for k, v in dataclasses.asdict(filters).items() if v not in (None, ())},
        sort_keys=True,
    )


def filters_from_json(text: str) -> Filters:
    raw: dict[str, Any] = json.loads(text or "{}")
    known = {f.name for f in dataclasses.fields(Filters)}
    values: dict[str, Any] = {
        k: tuple(v) if isinstance(v, list) else v for k, v in raw.items() if k in known
    }
    return Filters(**values)


@dataclass(frozen=True, slots=True)
class Watch:
    """One saved search."""

    name: str
    query: str
    kind: str
    """:data:`SET` (operators, tags, phrases: the set PubMed returns) or :data:`RANKED`
    (plain words), as the query parser decides; :data:`REFERENCES` for a watched
    reference list (its ``query`` then says where the list came from)."""
    mode: str | None
    """The mode a full search of the watch uses; new hits are found lexically."""
    filters: Filters
    threshold: float | None
    """For a ranked watch, the BM25 score a new article must reach; None for a set."""
    replaced: bool
    """Whether revised records (replacements) that match count as new."""
    created: str
    last_run: str | None
    last_change: int
    """The store's last ``file_changes`` row this watch has read."""
    unread: int = 0
    total: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "query": self.query,
            "kind": self.kind,
            "mode": self.mode,
            "filters": json.loads(filters_to_json(self.filters)),
            "threshold": self.threshold,
            "replaced": self.replaced,
            "created": self.created,
            "last_run": self.last_run,
            "unread": self.unread,
            "hits": self.total,
        }


@dataclass(frozen=True, slots=True)
class WatchHit:
    """An article a watch found new: when, why (added or replaced), and its score."""

    pmid: int
    change: str
    score: float
    found: str
    read: bool
    notice: int | None = None
    """For a reference list's hit: the PMID of the notice (None when the record only
    carries the publication type)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pmid": self.pmid,
            "change": self.change,
            "score": round(self.score, 6),
            "found": self.found,
            "read": self.read,
            "notice": self.notice,
        }


@dataclass(frozen=True, slots=True)
class Found:
    """What one run of one watch found: new PMIDs (best first) with change and score."""

    watch: Watch
    hits: tuple[tuple[int, str, float], ...]
    candidates: int
    notices: tuple[tuple[int, str, int | None], ...] = ()
    """A reference list's news: (reference PMID, status, notice PMID), strongest first."""
    """Articles the update files brought that were checked."""
