"""PRISMA 2020 flow counts for the title-and-abstract stage, from the project: records
identified per strategy, duplicates removed, screened, excluded (by reason), included,
and what is still unscreened or marked maybe. Written as Markdown, CSV and an SVG flow
diagram (Page et al. 2021, BMJ 372:n71, Figure 1's boxes for databases).

With several reviewers the standing decision of a record is the latest made by anyone
(the resolution of a conflict is the last word); ``screen conflicts`` lists disagreements.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from medsearch.screening.project import Project


@dataclass(frozen=True, slots=True)
class Counts:
    identified: tuple[tuple[str, int], ...]
    """(strategy, records identified) in the order added."""
    duplicates: int
    screened: int
    excluded: int
    reasons: tuple[tuple[str, int], ...]
    included: int
    maybe: int
    unscreened: int

    @property
    def identified_total(self) -> int:
        return sum(n for _, n in self.identified)

    @property
    def after_duplicates(self) -> int:
        return self.identified_total - self.duplicates

    def to_dict(self) -> dict[str, Any]:
        return {
            "identified": [{"strategy": s, "records": n} for s, n in self.identified],
            "identified_total": self.identified_total,
            "duplicates_removed": self.duplicates,
            "records_screened": self.screened,
            "records_excluded": self.excluded,
            "excluded_by_reason": {r: n for r, n in self.reasons},
            "included": self.included,
            "maybe": self.maybe,
            "not_screened": self.unscreened,
        }


def counts(project: Project) -> Counts:
    decisions = project.decisions(None)
    kinds = Counter(d.decision for d in decisions.values())
    reasons = Counter(
        d.reason or "no reason given" for d in decisions.values() if d.decision == "exclude"
    )
    duplicates = len(project.duplicates())
    total = project.count()
    return Counts(
        identified=tuple(
            (s.label if s.query is None else f"{s.label}: {s.query}", n)
            for _, s, n in project.strategies()
        ),
        duplicates=duplicates,
        screened=len(decisions),
        excluded=kinds["exclude"],
        reasons=tuple(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
        included=kinds["include"],
        maybe=kinds["maybe"],
        unscreened=total - len(decisions),
    )


def markdown(c: Counts, name: str) -> str:
    lines = [f"# PRISMA 2020 flow: {name}", "", "| Stage | Records |", "|---|---|"]
    for label, n in c.identified:
        cell = label.replace("|", "\\|")
        lines.append(f"| Identified: {cell} | {n:,} |")
    lines += [
        f"| Identified in all | {c.identified_total:,} |",
        f"| Duplicates removed | {c.duplicates:,} |",
        f"| Records screened (title and abstract) | {c.screened:,} |",
        f"| Records excluded | {c.excluded:,} |",
    ]
    lines += [f"| — excluded: {r} | {n:,} |" for r, n in c.reasons]
    lines += [
        f"| Included (title and abstract) | {c.included:,} |",
        f"| Maybe (awaiting a decision) | {c.maybe:,} |",
        f"| Not yet screened | {c.unscreened:,} |",
    ]
    return "\n".join(lines) + "\n"


def csv_text(c: Counts) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("stage", "detail", "records"))
    for label, n in c.identified:
        writer.writerow(("identified", label, n))
    writer.writerow(("duplicates_removed", "", c.duplicates))
    writer.writerow(("screened", "", c.screened))
    writer.writerow(("excluded", "", c.excluded))
    for reason, n in c.reasons:
        writer.writerow(("excluded_reason", reason, n))
    writer.writerow(("included", "", c.included))
    writer.writerow(("maybe", "", c.maybe))
    writer.writerow(("not_screened", "", c.unscreened))
    return out.getvalue()


_W, _BOX, _SIDE = 760, 330, 360


def svg(c: Counts, name: str) -> str:
    """The flow diagram: main boxes down the left, removals and exclusions on the right."""
    parts: list[str] = []
    y = 50

    def box(x: int, top: int, lines: list[str], width: int = _BOX) -> int:
        height = 18 * len(lines) + 16
        parts.append(
            f'<rect x="{x}" y="{top}" width="{width}" height="{height}" rx="4"'
            ' fill="#ffffff" stroke="#333333"/>'
        )
        for i, line in enumerate(lines):
            weight = ' font-weight="bold"' if i == 0 else ""
            parts.append(
                f'<text x="{x + 10}" y="{top + 22 + 18 * i}"{weight}>{escape(line)}</text>'
            )
        return top + height

    def arrow(x1: int, y1: int, x2: int, y2: int) -> None:
        parts.append(
            f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#333333"'
            ' marker-end="url(#arrow)"/>'
        )

    ident = [f"Records identified (n = {c.identified_total:,})"]
    ident += [f"{_short(label)} (n = {n:,})" for label, n in c.identified]
    bottom = box(20, y, ident)
    dup_bottom = box(
        _SIDE + 40,
        y,
        ["Records removed before screening", f"Duplicates (n = {c.duplicates:,})"],
        360,
    )
    arrow(20 + _BOX, y + 20, _SIDE + 40, y + 20)
    y = max(bottom, dup_bottom) + 40
    arrow(20 + _BOX // 2, bottom, 20 + _BOX // 2, y)
    screened = [
        f"Records screened (n = {c.screened:,})",
        f"of {c.after_duplicates:,}; not yet screened: {c.unscreened:,}",
    ]
    bottom = box(20, y, screened)
    excl = [f"Records excluded (n = {c.excluded:,})"]
    excl += [f"{_short(r, 40)} (n = {n:,})" for r, n in c.reasons]
    ex_bottom = box(_SIDE + 40, y, excl, 360)
    arrow(20 + _BOX, y + 20, _SIDE + 40, y + 20)
    y = max(bottom, ex_bottom) + 40
    arrow(20 + _BOX // 2, bottom, 20 + _BOX // 2, y)
    inc = [f"Included after title and abstract (n = {c.included:,})", f"Maybe: {c.maybe:,}"]
    bottom = box(20, y, inc)
    height = bottom + 30
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}"'
        f' viewBox="0 0 {_W} {height}" font-family="Helvetica, Arial, sans-serif"'
        ' font-size="13">'
        '<defs><marker id="arrow" markerWidth="10" markerHeight="8" refX="9" refY="4"'
        ' orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#333333"/></marker></defs>'
        f'<text x="20" y="30" font-size="16" font-weight="bold">'
        f"PRISMA 2020 flow: {escape(name)}</text>"
    )
    return head + "".join(parts) + "</svg>\n"


def _short(text: str, width: int = 38) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def write(project: Project, folder: Path) -> tuple[Path, Path, Path]:
    """``prisma.md``, ``prisma.csv`` and ``prisma.svg`` in ``folder`` (created)."""
    c = counts(project)
    folder.mkdir(parents=True, exist_ok=True)
    md, table, diagram = folder / "prisma.md", folder / "prisma.csv", folder / "prisma.svg"
    md.write_text(markdown(c, project.name), encoding="utf-8")
    table.write_text(csv_text(c), encoding="utf-8")
    diagram.write_text(svg(c, project.name), encoding="utf-8")
    return md, table, diagram
