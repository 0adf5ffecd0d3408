"""A reviewer's screening session: the project, its ranker and the stopping estimate,
as the TUI and the ``screen`` commands use them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from medsearch.screening import stopping
from medsearch.screening.items import Item
from medsearch.screening.project import DEFAULT_REVIEWER, Decision, Project
from medsearch.screening.ranker import Ranker


def relevance(decision: str) -> int:
    """What a decision counts as for the model and the stopping rule: an include is
    relevant, and so is a maybe until it is resolved (the rule stays on the safe side)."""
    return 0 if decision == "exclude" else 1


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    screened: int
    included: int
    excluded: int
    maybe: int
    estimate: stopping.Estimate

    @property
    def line(self) -> str:
        return (
            f"{self.screened:,}/{self.total:,} screened · {self.included:,} included ·"
            f" {self.maybe:,} maybe · {self.estimate.line}"
        )


class Session:
    """One reviewer screening one project."""

    def __init__(self, project: Project, reviewer: str = DEFAULT_REVIEWER) -> None:
        self.project = project
        self.reviewer = reviewer
        ids = project.ids_in_rank_order()
        self.ranker = Ranker(ids, self._texts)
        self._decisions = project.decisions(reviewer)
        for record_id in self._decisions:
            self.ranker.mark(record_id)
        self._learn()

    def _texts(self) -> list[str]:
        # its own connection: the worker thread reads while the reviewer writes
        import sqlite3

        conn = sqlite3.connect(self.project.path)
        try:
            return [
                f"{t} {a} {k}"
                for t, a, k in conn.execute(
                    "SELECT title, abstract, keywords FROM records"
                    " WHERE duplicate_of IS NULL ORDER BY rank"
                )
            ]
        finally:
            conn.close()

    def _learn(self) -> None:
        self.ranker.learn({r: relevance(d.decision) for r, d in self._decisions.items()})

    def next(self) -> int | None:
        return self.ranker.next()

    def record(self, record_id: int) -> Item:
        return self.project.record(record_id)

    def decide(self, record_id: int, decision: str, reason: str | None = None) -> Decision:
        made = self.project.decide(record_id, decision, reviewer=self.reviewer, reason=reason)
        self._decisions[record_id] = made
        self.ranker.mark(record_id)
        self._learn()
        return made

    def undo(self) -> Decision | None:
        undone = self.project.undo(self.reviewer)
        if undone is None:
            return None
        self._decisions = self.project.decisions(self.reviewer)
        if undone.record_id not in self._decisions:
            self.ranker.mark(undone.record_id, screened=False)
        self._learn()
        return undone

    def decision(self, record_id: int) -> Decision | None:
        return self._decisions.get(record_id)

    def progress(
        self,
        recall_target: float = stopping.DEFAULT_RECALL,
        confidence: float = stopping.DEFAULT_CONFIDENCE,
    ) -> Progress:
        return progress(self.project, self.reviewer, recall_target, confidence)

    def close(self) -> None:
        self.ranker.close()


def progress(
    project: Project,
    reviewer: str = DEFAULT_REVIEWER,
    recall_target: float = stopping.DEFAULT_RECALL,
    confidence: float = stopping.DEFAULT_CONFIDENCE,
) -> Progress:
    order = project.order(reviewer)
    kinds = [d.decision for d in order]
    labels = np.asarray([relevance(k) for k in kinds], dtype=np.int64)
    total = project.count()
    return Progress(
        total=total,
        screened=len(order),
        included=kinds.count("include"),
        excluded=kinds.count("exclude"),
        maybe=kinds.count("maybe"),
        estimate=stopping.estimate(
            labels, total, recall_target=recall_target, confidence=confidence
        ),
    )
