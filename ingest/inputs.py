"""Which files an ingest reads, and in which order it applies them.

``medsearch ingest ~/pubmed`` is most often pointed at a copy of NCBI's FTP layout:
``baseline/`` (``pubmed26n0001`` ... ``n1334``) next to ``updatefiles/`` (``n1335`` ...),
every data file beside its ``.md5``. So a directory is walked to any depth, and anything
in it that is not PubMed is set aside with its reason (an ``.md5``, a README, a
``NAME.part`` that :mod:`ingest.download` is still writing, a hidden file, a PMC full
text or an OAI-PMH harvest: XML, but not citations), counted in the summary rather than
failed. What a file is, is told from its first bytes (:mod:`ingest.sources`), so PubMed's
MEDLINE exports are taken whatever their name (``.nbib``, ``.txt``) and a ``.xml`` with
another root element is set aside; only a file that claims to be PubMed (an XML root of
PubMed's, an NCBI name, a ``.nbib``) and cannot be read counts as failed.

The order is NCBI's, not the paths': update files only mean what NCBI intends (a later
record for a PMID replaces the earlier one, a DeleteCitation removes a PMID the baseline
added) when they are applied after the baseline and in their own sequence. Paths would
put ``baseline/`` first only by the luck of folder names (``2026-updates/`` sorts before
it), so the key is the ``pubmedYYnNNNN`` in the name, across folders: year first (a
newer year's baseline is a full snapshot that supersedes the older year's update files),
then number. Files not named that way (efetch output, the PubMed web export) come after,
ordered by path so that every run sees the same order.

A file reached twice (named and inside a named folder, or through a symlink) is one
input. Two files with the same *content* are told apart later, by their checksum
(:meth:`ingest.pipeline.Ingestor.run`), because that needs the bytes read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from ingest.sources import Kind, sniff_file

SUFFIXES = (".xml", ".xml.gz")
MEDLINE_NAMES = (".nbib", ".nbib.gz")
"""Taken whatever their content: an unreadable one fails with the MEDLINE reader's line."""
PARTIAL_SUFFIXES = (".part", ".partial", ".crdownload", ".tmp")
"""Files still being written: ``NAME.part`` is :mod:`ingest.download`'s (and
:mod:`ingest.embeddings`'), the rest are browsers' and other downloaders'."""
EXAMPLES = 3
"""Paths named per reason in the one-line description; JSON lists them all."""

_NCBI_NAME = re.compile(r"(?:pubmed|medline)(\d{2})n(\d+)\.xml(?:\.gz)?", re.IGNORECASE)


class Reason(StrEnum):
    """Why an input was set aside rather than ingested."""

    DUPLICATE = "duplicate"
    NOT_XML = "not PubMed XML"
    OTHER_XML = "other XML"
    CHECKSUM = "md5 checksum"
    PARTIAL = "partial download"
    HIDDEN = "hidden"
    SPECIAL = "not a regular file"


_PLURAL = {
    Reason.DUPLICATE: "duplicates",
    Reason.CHECKSUM: "md5 checksums",
    Reason.PARTIAL: "partial downloads",
}


@dataclass(frozen=True, slots=True)
class Ignored:
    """An input set aside: ``same_as`` is the input kept in its place (duplicates only),
    ``root`` the root element of XML that is not PubMed's (other XML only)."""

    path: Path
    reason: Reason
    same_as: Path | None = None
    root: str | None = None

    def to_dict(self) -> dict[str, str]:
        out = {"file": str(self.path), "reason": str(self.reason)}
        if self.same_as is not None:
            out["same_as"] = str(self.same_as)
        if self.root is not None:
            out["root"] = self.root
        return out

    def example(self) -> str:
        if self.same_as is not None:
            return f"{self.path} = {self.same_as}"
        return f"{self.path} <{self.root}>" if self.root is not None else str(self.path)


@dataclass(frozen=True, slots=True)
class Inputs:
    """What ``ingest PATH...`` found: the files in application order, what it set aside,
    and ``(path, problem)`` for each input it could not reach."""

    files: tuple[Path, ...]
    ignored: tuple[Ignored, ...]
    missing: tuple[tuple[str, str], ...]


def ncbi_number(name: str) -> tuple[int, int] | None:
    """``(year, number)`` of an NCBI file name (``pubmed26n1335.xml.gz`` -> (26, 1335)),
    or None for any other name."""
    match = _NCBI_NAME.fullmatch(name)
    return (int(match.group(1)), int(match.group(2))) if match else None


def application_order(path: Path) -> tuple[int, int, int, tuple[str, ...]]:
    """Sort key: NCBI files by (year, number), then every other file by path."""
    number = ncbi_number(path.name)
    if number is None:
        return (1, 0, 0, path.parts)
    return (0, *number, path.parts)


def order_inputs(paths: Iterable[Path]) -> list[Path]:
    return sorted(paths, key=application_order)


def reason_to_skip(name: str) -> Reason | None:
    """Why a file met while walking a folder is not ingested, by its name alone; None
    when the name says PubMed XML. NOT_XML is only a first guess: :func:`judge` reads
    the file's first bytes before it sets one aside for that reason."""
    lower = name.lower()
    if name.startswith("."):
        return Reason.HIDDEN  # editors' and macOS's ._NAME.xml.gz companions among them
    if lower.endswith(SUFFIXES):
        return None
    if lower.endswith(PARTIAL_SUFFIXES):
        return Reason.PARTIAL
    if lower.endswith(".md5"):
        return Reason.CHECKSUM
    return Reason.NOT_XML


def judge(path: Path, reason: Reason | None) -> Ignored | None:
    """Why ``path`` is set aside, given what its name says (:func:`reason_to_skip`) and
    what its first bytes say; None when it is ingested.

    PubMed XML and MEDLINE content is taken whatever the name. A file named as XML is set
    aside only when it is well-formed XML of another kind (its root element is not
    PubMed's) and its name is not NCBI's (``pubmed26n0005.xml`` holding an HTML page is
    a damaged download, which fails); an XML name over bytes that are no XML at all, or
    unreadable ones, is a damaged PubMed file and goes to the parser, which says what is
    wrong.
    """
    if reason is not None and reason is not Reason.NOT_XML:
        return Ignored(path, reason)
    sniffed = sniff_file(path)
    if sniffed.kind in (Kind.PUBMED_XML, Kind.MEDLINE):
        return None
    if sniffed.kind is Kind.OTHER_XML and ncbi_number(path.name) is None:
        return Ignored(path, Reason.OTHER_XML, root=sniffed.root)
    if reason is None or path.name.lower().endswith(MEDLINE_NAMES):
        return None
    return Ignored(path, Reason.NOT_XML)


def discover(paths: Iterable[Path]) -> Inputs:
    """The PubMed files under ``paths``, in application order.

    A file named on the command line is judged by the same rules as one met inside a
    folder (:func:`reason_to_skip`), because ``ingest baseline/*`` names every ``.md5``
    too, except that a hidden file named on purpose is taken: a shell's ``*`` never
    expands to one.
    """
    found: dict[Path, Path] = {}  # the file itself (symlinks resolved) -> the path met
    ignored: list[Ignored] = []
    missing: list[tuple[str, str]] = []
    for given in paths:
        if given.is_dir():
            _walk(given, found, ignored, missing)
        elif given.is_file():
            reason = reason_to_skip(given.name)
            skip = None if reason is Reason.HIDDEN else judge(given, reason)
            if skip is None:
                found.setdefault(given.resolve(), given)
            else:
                ignored.append(skip)
        else:
            missing.append((str(given), "no such file or directory"))
    return Inputs(
        files=tuple(order_inputs(found.values())),
        ignored=tuple(sorted(ignored, key=lambda i: i.path.parts)),
        missing=tuple(missing),
    )


def _walk(
    root: Path,
    found: dict[Path, Path],
    ignored: list[Ignored],
    missing: list[tuple[str, str]],
) -> None:
    """Every file under ``root``, following symlinked folders (a mirror on another disk)
    but entering each real folder once, so a link loop ends."""
    entered: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            info = folder.stat()
            if (info.st_dev, info.st_ino) in entered:
                continue
            entered.add((info.st_dev, info.st_ino))
            with os.scandir(folder) as scan:
                entries = list(scan)
        except OSError as exc:
            missing.append((str(folder), f"cannot read: {exc.strerror or exc}"))
            continue
        for entry in entries:
            path = Path(entry.path)
            if entry.name.startswith("."):
                ignored.append(Ignored(path, Reason.HIDDEN))
            elif entry.is_dir():
                stack.append(path)
            elif not entry.is_file():
                if entry.is_symlink() and not path.exists():
                    missing.append((str(path), "broken symbolic link"))
                else:
                    ignored.append(Ignored(path, Reason.SPECIAL))
            elif (skip := judge(path, reason_to_skip(entry.name))) is not None:
                ignored.append(skip)
            else:
                found.setdefault(path.resolve(), path)


def describe(ignored: Sequence[Ignored], examples: int = EXAMPLES) -> str:
    """One line: ``2: 1 duplicate (b/x.xml = a/x.xml), 1 not PubMed XML (README.txt)``."""
    groups: dict[Reason, list[Ignored]] = {}
    for item in ignored:
        groups.setdefault(item.reason, []).append(item)
    parts = []
    for reason in Reason:  # a fixed order, whatever order the files were met in
        items = groups.get(reason, [])
        if not items:
            continue
        label = _PLURAL.get(reason, str(reason)) if len(items) > 1 else str(reason)
        shown = [i.example() for i in items[:examples]]
        if len(items) > examples:
            shown.append(f"and {len(items) - examples:,} more")
        parts.append(f"{len(items):,} {label} ({', '.join(shown)})")
    return f"{len(ignored):,}: " + ", ".join(parts)
