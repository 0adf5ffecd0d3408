"""Two reviewers: where they disagree, and Cohen's kappa over the records both screened.

Kappa (Cohen 1960) is ``(p_o - p_e) / (1 - p_e)``: the observed agreement corrected for
the agreement two reviewers deciding at random with their own rates would reach. The
categories are the decisions themselves (include, exclude, maybe).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from medsearch.screening.project import DECISIONS, Project


@dataclass(frozen=True, slots=True)
class Agreement:
    first: str
    second: str
    both: int
    agreed: int
    kappa: float | None
    conflicts: tuple[tuple[int, str, str], ...]
    """(record id, first's decision, second's) where they differ."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "reviewers": [self.first, self.second],
            "screened_by_both": self.both,
            "agreed": self.agreed,
            "kappa": None if self.kappa is None else round(self.kappa, 4),
            "conflicts": [
                {"record": r, self.first: a, self.second: b} for r, a, b in self.conflicts
            ],
        }


def kappa(pairs: list[tuple[str, str]]) -> float | None:
    """Cohen's kappa of paired decisions; None when there are none, 1.0 when both
    reviewers used one and the same category throughout."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[c] * second[c] for c in DECISIONS) / (n * n)
    if expected >= 1.0:
        return 1.0
    return (observed - expected) / (1.0 - expected)


def compare(project: Project, first: str, second: str) -> Agreement:
    a = project.decisions(first)
    b = project.decisions(second)
    common = sorted(set(a) & set(b))
    pairs = [(a[r].decision, b[r].decision) for r in common]
    conflicts = tuple(
        (r, a[r].decision, b[r].decision) for r in common if a[r].decision != b[r].decision
    )
    return Agreement(
        first, second, len(common), len(common) - len(conflicts), kappa(pairs), conflicts
    )


def import_decisions(
    target: Project, source: Project, reviewer: str, *, as_reviewer: str | None = None
) -> int:
    """Copy ``reviewer``'s standing decisions from another copy of the project (matched by
    PMID, else DOI, else the record's id when both files hold the same records); the
    number copied."""
    theirs = source.decisions(reviewer)
    ours = {}
    for record_id, item in target.records():
        if item.pmid is not None:
            ours[("pmid", str(item.pmid))] = record_id
        if item.doi:
            ours[("doi", item.doi.casefold())] = record_id
    copied = 0
    for record_id, decision in sorted(theirs.items(), key=lambda kv: kv[1].seq):
        item = source.record(record_id)
        target_id = None
        if item.pmid is not None:
            target_id = ours.get(("pmid", str(item.pmid)))
        if target_id is None and item.doi:
            target_id = ours.get(("doi", item.doi.casefold()))
        if target_id is None and target.count(duplicates=True) == source.count(duplicates=True):
            target_id = record_id
        if target_id is None:
            continue
        target.decide(
            target_id,
            decision.decision,
            reviewer=as_reviewer or reviewer,
            reason=decision.reason,
            source="imported",
        )
        copied += 1
    return copied
