"""A project's records with their decisions: CSV, RIS with labels, ASReview's CSV."""

from __future__ import annotations

import csv
import io

from medsearch.screening.project import DEFAULT_REVIEWER, Project

CSV_COLUMNS = (
    "record_id", "pmid", "doi", "title", "authors", "journal", "year", "decision",
    "reason", "reviewer", "duplicate_of",
)  # fmt: skip


def to_csv(project: Project, reviewer: str = DEFAULT_REVIEWER) -> str:
    decisions = project.decisions(reviewer)
    duplicates = {r: of for r, of, _, _ in project.duplicates()}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for record_id, item in project.records(sorted(_all_ids(project))):
        d = decisions.get(record_id)
        writer.writerow(
            (
                record_id, item.pmid or "", item.doi or "", item.title,
                "; ".join(item.authors), item.journal, item.year or "",
                d.decision if d else "", (d.reason or "") if d else "", reviewer if d else "",
                duplicates.get(record_id, ""),
            )
        )  # fmt: skip
    return out.getvalue()


def to_asreview_csv(project: Project, reviewer: str = DEFAULT_REVIEWER) -> str:
    """ASReview's data set format: ``label_included`` 1/0, empty while unscreened (a
    maybe is left empty too: ASReview has no third label)."""
    decisions = project.decisions(reviewer)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("record_id", "title", "abstract", "authors", "year", "doi", "pmid",
                     "keywords", "label_included"))  # fmt: skip
    for record_id, item in project.records():
        d = decisions.get(record_id)
        label = "" if d is None or d.decision == "maybe" else int(d.decision == "include")
        writer.writerow(
            (record_id, item.title, item.abstract, "; ".join(item.authors), item.year or "",
             item.doi or "", item.pmid or "", "; ".join(item.keywords), label)
        )  # fmt: skip
    return out.getvalue()


def to_ris(project: Project, reviewer: str = DEFAULT_REVIEWER) -> str:
    """RIS with the decision as a keyword (``screening: included``) and in ``N1`` as
    ASReview writes it (``ASReview_relevant``), so either tool reads the label back."""
    decisions = project.decisions(reviewer)
    lines: list[str] = []
    for record_id, item in project.records():
        d = decisions.get(record_id)
        lines.append("TY  - JOUR")
        lines.append(f"ID  - {record_id}")
        if item.title:
            lines.append(f"TI  - {item.title}")
        lines.extend(f"AU  - {a}" for a in item.authors)
        if item.journal:
            lines.append(f"T2  - {item.journal}")
        if item.year:
            lines.append(f"PY  - {item.year}")
        if item.doi:
            lines.append(f"DO  - {item.doi}")
        if item.pmid:
            lines.append(f"AN  - {item.pmid}")
            lines.append(f"UR  - https://pubmed.ncbi.nlm.nih.gov/{item.pmid}/")
        if item.abstract:
            lines.append(f"AB  - {item.abstract}")
        lines.extend(f"KW  - {k}" for k in item.keywords)
        if d is not None:
            word = {"include": "included", "exclude": "excluded", "maybe": "maybe"}[d.decision]
            lines.append(f"KW  - screening: {word}")
            if d.decision != "maybe":
                relevant = "relevant" if d.decision == "include" else "irrelevant"
                lines.append(f"N1  - ASReview_{relevant}")
            if d.reason:
                lines.append(f"N1  - exclusion reason: {d.reason}")
        lines.append("ER  - ")
        lines.append("")
    return "\n".join(lines)


def _all_ids(project: Project) -> list[int]:
    return [int(r[0]) for r in project.conn.execute("SELECT id FROM records ORDER BY id")]
