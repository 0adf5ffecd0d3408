"""A screening project's file: its schema, its rows as values, and opening it.

What :class:`medsearch.screening.project.Project` is built on, apart so that each module
stays short: the decisions and reasons it knows, the SQLite schema, the frozen rows
(:class:`Decision`, :class:`Strategy`, :class:`Added`), project names and paths, and
the connection settings (WAL, ``synchronous=FULL``) that make a decision survive a
``kill -9``.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from medsearch.errors import MedsearchError, UsageError
from medsearch.screening.dedup import Duplicate
from medsearch.screening.items import Item

DECISIONS = ("include", "exclude", "maybe")
DEFAULT_REVIEWER = "reviewer1"
DEFAULT_REASONS = (
    "wrong population",
    "wrong intervention",
    "wrong comparator",
    "wrong outcome",
    "wrong study design",
    "wrong publication type",
    "not in English",
    "no abstract or full text",
)
"""PICO and design: the reasons PRISMA 2020 item 16b asks to be reported, editable per
project (:meth:`Project.set_reasons`)."""

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS strategies (
    id INTEGER PRIMARY KEY, label TEXT NOT NULL, query TEXT, history INTEGER,
    identified INTEGER NOT NULL, at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id INTEGER PRIMARY KEY, pmid INTEGER, doi TEXT, title TEXT NOT NULL,
    abstract TEXT NOT NULL, year INTEGER, authors TEXT NOT NULL, journal TEXT NOT NULL,
    keywords TEXT NOT NULL, mesh TEXT NOT NULL, label INTEGER, row INTEGER,
    matched_by TEXT, rank INTEGER NOT NULL, strategy INTEGER NOT NULL,
    duplicate_of INTEGER, duplicate_key TEXT);
CREATE INDEX IF NOT EXISTS records_rank ON records(rank) WHERE duplicate_of IS NULL;
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id INTEGER NOT NULL,
    reviewer TEXT NOT NULL, decision TEXT NOT NULL, reason TEXT, at TEXT NOT NULL,
    undone INTEGER NOT NULL DEFAULT 0, source TEXT NOT NULL DEFAULT 'screen');
CREATE INDEX IF NOT EXISTS decisions_by ON decisions(reviewer, record_id);
CREATE TABLE IF NOT EXISTS notes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, record_id INTEGER NOT NULL,
    reviewer TEXT NOT NULL, kind TEXT NOT NULL, text TEXT NOT NULL, at TEXT NOT NULL);
"""


class ProjectError(MedsearchError):
    """A screening project is missing, exists already, or cannot be read."""


@dataclass(frozen=True, slots=True)
class Decision:
    seq: int
    record_id: int
    reviewer: str
    decision: str
    reason: str | None
    at: str
    source: str = "screen"


@dataclass(frozen=True, slots=True)
class Strategy:
    """Where records came from: a history line, a query, or a file (PRISMA's
    "records identified" per source)."""

    label: str
    query: str | None = None
    history: int | None = None


@dataclass(frozen=True, slots=True)
class Added:
    """What :meth:`Project.add` did: records added, duplicates flagged (by key)."""

    added: int
    duplicates: tuple[Duplicate, ...]
    strategy_id: int


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def check_name(name: str) -> str:
    if _NAME.fullmatch(name) is None:
        raise UsageError(
            f"{name!r} is not a project name: letters, digits, '.', '_' and '-', up to 64"
        )
    return name


def project_path(folder: Path, name: str) -> Path:
    return folder / f"{check_name(name)}.sqlite"


def list_projects(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.sqlite")) if folder.is_dir() else []


_ITEM_COLUMNS = (
    "title, abstract, pmid, doi, year, authors, journal, keywords, mesh, label, row, matched_by"
)


def _item(row: Sequence[object]) -> Item:
    title, abstract, pmid, doi, year, authors, journal, keywords, mesh, label, rid, how = row
    return Item(
        title=str(title),
        abstract=str(abstract),
        pmid=None if pmid is None else int(str(pmid)),
        doi=None if doi is None else str(doi),
        year=None if year is None else int(str(year)),
        authors=tuple(json.loads(str(authors))),
        journal=str(journal),
        keywords=tuple(json.loads(str(keywords))),
        mesh=tuple(json.loads(str(mesh))),
        label=None if label is None else int(str(label)),
        row=None if rid is None else int(str(rid)),
        matched_by=None if how is None else str(how),
    )


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=10)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, *rest: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
