"""The search history as a PRISMA-S search log (Markdown for the report, CSV for tables).

PRISMA-S (Rethlefsen et al. 2021, doi:10.1186/s13643-020-01542-z) asks a systematic
review to report each database searched, its interface, the full strategy exactly as
run (item 8), any limits and filters (item 9), and the date each search was run
(item 13). PubMed changes daily, so the log also names the state of the local copy
each line ran on: the baseline year, the last update file applied and the article
count, which is what makes the line reproducible rather than only reportable.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

from medsearch.history.entries import Entry
from medsearch.safe_text import csv_cell, markdown_code

CSV_COLUMNS = (
    "number",
    "date",
    "query_as_run",
    "query_typed",
    "mode",
    "count",
    "counted",
    "baseline_year",
    "last_file",
    "articles_in_corpus",
)


def csv_text(entries: Sequence[Entry]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for e in _run(entries):
        snap = e.snapshot
        writer.writerow(
            (
                e.number,
                e.at,
                csv_cell(e.shown or ""),
                csv_cell(e.typed or ""),
                e.mode or "",
                "" if e.total is None else e.total,
                e.counted or "",
                "" if snap is None or snap.baseline_year is None else snap.baseline_year,
                "" if snap is None or snap.last_file is None else snap.last_file,
                "" if snap is None else snap.articles,
            )
        )
    return out.getvalue()


def markdown_text(entries: Sequence[Entry], *, version: str) -> str:
    lines = [
        "# Search log (PRISMA-S)",
        "",
        f"- Database: PubMed (MEDLINE and PubMed citations), a local copy searched with"
        f" medsearch {version}",
        "- Interface: medsearch, PubMed's query syntax (field tags, Boolean operators);"
        " `#N` combines earlier searches",
        "- Each line: the search exactly as run (restrictions written as field tags;"
        " with MeSH installed, its translation: automatic term mapping and exploded"
        " headings, as PubMed's Search details print them), the date and time it ran"
        " (UTC), the number of records, and the state of the local copy it ran on.",
        "",
        "| # | Date (UTC) | Search as run | Records"
        " | Corpus: baseline, last file applied, articles |",
        "|---|---|---|---|---|",
    ]
    for e in _run(entries):
        snap = e.snapshot
        corpus = (
            "unknown"
            if snap is None
            else f"{snap.baseline_year or 'no baseline'}, {snap.last_file or 'no files'},"
            f" {snap.articles:,}"
        )
        count = "" if e.total is None else f"{e.total:,}"
        if e.counted == "all_words":
            count += " (ranked words; records holding every word)"
        elif e.command in ("similar", "cite"):
            count += " (listed)"
        query = markdown_code(e.shown or "").replace("|", "\\|")
        lines.append(f"| {e.number} | {e.at} | {query} | {count} | {corpus} |")
    return "\n".join(lines) + "\n"


def _run(entries: Sequence[Entry]) -> list[Entry]:
    """The lines that ran here (imported recall lines were never run)."""
    return [e for e in entries if e.ran]
