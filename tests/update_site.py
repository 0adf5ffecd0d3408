"""A small NCBI site for update tests: a 2026 baseline file and two days of update files
(new articles, a replacement, deletions), hand-built PubMed XML, with their md5 files."""

from __future__ import annotations

import hashlib
from pathlib import Path

from benchmarks.synth import article_xml, pubmed_file

HF = "Statin therapy in heart failure"
FILLERS = 55
"""Baseline articles that match the ranked watch, so its threshold is a real 50th hit."""


def publish(folder: Path, name: str, articles: list[str], deletions: tuple[int, ...] = ()) -> Path:
    """Write ``folder/name`` gzipped with its NCBI-style ``.md5`` file."""
    folder.mkdir(parents=True, exist_ok=True)
    path = pubmed_file(folder / name, articles, deletions, gz=True)
    digest = hashlib.md5(path.read_bytes()).hexdigest()
    (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")
    return path


def baseline(root: Path, year: int = 26) -> Path:
    """PMIDs 1-3 (one in the 'heart failure' set), and fillers 100.. for the ranked watch."""
    articles = [
        article_xml(1, HF, "Statins reduce admissions.", year=2019),
        article_xml(2, "Aspirin in stroke", "Aspirin prevents strokes."),
        article_xml(3, "Statin therapy in gout", "Statins and gout flares."),
    ] + [
        article_xml(100 + i, f"Kidney registry report {i}", "Kidney outcomes in a registry.")
        for i in range(FILLERS)
    ]
    return publish(root / "pubmed" / "baseline", f"pubmed{year}n0001.xml.gz", articles)


def day_one(root: Path) -> Path:
    """New 10 (matches), new 11 (does not), 2 replaced into the set, 3 deleted."""
    return publish(
        root / "pubmed" / "updatefiles",
        "pubmed26n0002.xml.gz",
        [
            article_xml(10, "Statin withdrawal in heart failure", "A kidney registry trial."),
            article_xml(11, "Statins and the liver", "Liver enzymes."),
            article_xml(2, "Statin use in heart failure", "Revised record.", version=1),
        ],
        deletions=(3,),
    )


def day_two(root: Path) -> Path:
    """New 12 (matches), 10 replaced (already reported), 11 deleted."""
    return publish(
        root / "pubmed" / "updatefiles",
        "pubmed26n0003.xml.gz",
        [
            article_xml(12, "Statin dosing in heart failure", "Dose finding."),
            article_xml(10, "Statin withdrawal in heart failure", "Corrected abstract."),
        ],
        deletions=(11,),
    )
