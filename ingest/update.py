"""What ``medsearch update`` fetches and applies: NCBI's daily files for the home's year.

NCBI numbers each year's files on from its baseline (``pubmed26n0001`` ...
``pubmed26n1334`` in ``baseline/``, then ``pubmed26n1335`` ... in ``updatefiles/``) and
starts again with a new baseline each December (``pubmed27n0001``). Update files of a
year apply on top of that year's baseline only, so:

- the home's year is the newest year among the PubMed files its ledger records as done;
- an update applies the listed update files of that year the ledger lacks, in order;
- when the mirror lists a newer baseline, the update says so and what the move costs,
  and ``update --baseline`` fetches it (then its update files); until then the newer
  year's update files wait;
- a move that was stopped half-way (the ledger holds files of two years and the newer
  baseline is incomplete) applies no update files until ``--baseline`` finishes it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ingest.download import DEFAULT_MIRROR, RemoteFile, list_remote
from medsearch.errors import UsageError

_PUBMED_FILE = re.compile(r"pubmed(\d\d)n(\d{4})\.xml(?:\.gz)?")

INGEST_RATE = 4_000
"""Articles a second a lexical ingest writes (one writer; measured 3,680-4,779 on 2 to 16
cores, DESIGN.md), for the cost of a new baseline."""
ARTICLES_PER_FILE = 30_000
"""Citations in one baseline file (NCBI's 1,334 files of 2026 hold 40.9M)."""


def file_year(name: str) -> int | None:
    """The year of a PubMed file from its name (``pubmed26n0001.xml.gz``: 2026)."""
    match = _PUBMED_FILE.fullmatch(name)
    return 2000 + int(match.group(1)) if match else None


def home_year(done: Iterable[str]) -> int | None:
    """The newest year among the PubMed files applied (None: none has such a name)."""
    years = [y for y in map(file_year, done) if y is not None]
    return max(years, default=None)


@dataclass(frozen=True)
class BaselineOffer:
    """A newer baseline on the mirror, and what moving to it costs."""

    year: int
    files: tuple[RemoteFile, ...]

    @property
    def bytes(self) -> int:
        return sum(f.size or 0 for f in self.files)

    def message(self) -> str:
        n = len(self.files)
        hours = n * ARTICLES_PER_FILE / INGEST_RATE / 3600
        return (
            f"NCBI has published the {self.year} baseline ({n:,} files, {self.bytes / 1e9:.1f} GB"
            f" to download, about {hours:.1f} h of lexical ingest on one writer);"
            f" `medsearch update --baseline` moves this home to it (only articles whose text"
            f" changed are encoded again). Until then {self.year} update files wait."
        )


@dataclass(frozen=True)
class UpdatePlan:
    """The files to fetch and apply, in order, and what the mirror says beside them."""

    year: int
    """The year whose files are applied."""
    files: tuple[RemoteFile, ...]
    offer: BaselineOffer | None = None
    baseline: tuple[RemoteFile, ...] = ()
    """With ``--baseline``: the new baseline's files still to apply (before ``files``)."""


def plan_update(
    done: frozenset[str],
    *,
    mirror: str = DEFAULT_MIRROR,
    move_baseline: bool = False,
) -> UpdatePlan:
    """What to fetch for a home whose ledger holds ``done`` (the names applied)."""
    year = home_year(done)
    if year is None:
        raise UsageError(
            "this data home holds no PubMed baseline yet: run `medsearch ingest --download"
            " baseline` first (update applies NCBI's daily files on top of it)"
        )
    baseline = list_remote("baseline", mirror=mirror)
    updates = list_remote("updates", mirror=mirror)
    listed_years = [y for y in (file_year(f.name) for f in baseline) if y is not None]
    newest = max(listed_years, default=year)
    if move_baseline:
        if newest <= year and not _moving(done, baseline, year):
            raise UsageError(
                f"the mirror lists no baseline newer than this home's ({year}): nothing to move to"
            )
        todo = tuple(f for f in baseline if file_year(f.name) == newest and f.name not in done)
        return UpdatePlan(newest, _of_year(updates, newest, done), baseline=todo)
    if _moving(done, baseline, year):
        raise UsageError(
            f"the move to the {year} baseline stopped before it finished: run"
            " `medsearch update --baseline` to complete it"
        )
    offer = None
    if newest > year:
        offer = BaselineOffer(newest, tuple(f for f in baseline if file_year(f.name) == newest))
    return UpdatePlan(year, _of_year(updates, year, done), offer=offer)


def _of_year(
    files: Iterable[RemoteFile], year: int, done: frozenset[str]
) -> tuple[RemoteFile, ...]:
    return tuple(f for f in files if file_year(f.name) == year and f.name not in done)


def _moving(done: frozenset[str], baseline: list[RemoteFile], year: int) -> bool:
    """Whether the home holds files of an older year too and ``year``'s baseline, as
    listed, is not all applied: a move to it that was stopped."""
    older = any((y or year) < year for y in map(file_year, done))
    listed = [f for f in baseline if file_year(f.name) == year]
    return older and bool(listed) and any(f.name not in done for f in listed)
