"""What an ingest run did, for its printed summary and ``--json``: counts, failures,
inputs set aside, stage times and notes, filled in as each unit commits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ingest.inputs import Ignored


@dataclass
class IngestSummary:
    """What a run did; ``ok`` is False when any input failed."""

    files: int = 0
    ingested: int = 0
    skipped: int = 0
    added: int = 0
    replaced: int = 0
    deleted: int = 0
    books: int = 0
    articles: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    """Wall time of the whole run: :meth:`~ingest.pipeline.Ingestor.run`'s own, or the command's."""
    stages: dict[str, float] = field(default_factory=dict)
    """Wall time of each stage the command ran (prepare, download, ingest, vectors); the
    download overlaps the ingest, so stages may add up to more than ``seconds``."""
    commits: int = 0
    """Units written: files in one transaction and one tantivy commit (see UNIT_FILES)."""
    encoded: int = 0
    notes: list[str] = field(default_factory=list)
    ignored: list[Ignored] = field(default_factory=list)
    """Inputs set aside, each with its reason (not PubMed XML, a duplicate, ...)."""
    rejected: int = 0
    """Records and DeleteCitation entries left out of ingested files: no valid PMID."""
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "ingested": self.ingested,
            "skipped": self.skipped,
            "failed": len(self.failures),
            "articles": self.articles,
            "added": self.added,
            "replaced": self.replaced,
            "deleted": self.deleted,
            "books": self.books,
            "encoded": self.encoded,
            "seconds": round(self.seconds, 3),
            "stages": {name: round(t, 3) for name, t in self.stages.items()},
            "commits": self.commits,
            "failures": [{"file": f, "error": e} for f, e in self.failures],
            "ignored": len(self.ignored),
            "ignored_files": [i.to_dict() for i in self.ignored],
            "rejected": self.rejected,
            "warnings": self.warnings,
            "notes": self.notes,
        }
