"""A screening project on disk: one SQLite file in the data home's ``screening/``.

Every decision is one row appended to a log and committed on its own, in WAL mode with
``synchronous=FULL``: once :meth:`Project.decide` returns, a ``kill -9`` (or a power cut)
cannot take the decision back. Undo does not delete: it marks the reviewer's latest
decision undone, so the log is the whole history of the screening (what PRISMA and the
agreement figures read). Records flagged as duplicates stay in the file with the record
they repeat and the key that matched, and can be restored.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from medsearch.errors import NotFoundError, UsageError
from medsearch.screening.dedup import find_duplicates
from medsearch.screening.items import Item
from medsearch.screening.projectfile import (
    _ITEM_COLUMNS,
    DECISIONS,
    DEFAULT_REASONS,
    DEFAULT_REVIEWER,
    SCHEMA,
    Added,
    Decision,
    ProjectError,
    Strategy,
    _connect,
    _item,
    _Transaction,
    check_name,
    list_projects,
    now,
    project_path,
)

__all__ = [
    "DECISIONS",
    "DEFAULT_REASONS",
    "DEFAULT_REVIEWER",
    "Added",
    "Decision",
    "Project",
    "ProjectError",
    "Strategy",
    "_connect",
    "check_name",
    "list_projects",
    "project_path",
]


class Project:
    """An open project: a connection in autocommit mode, one transaction per write."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self.conn = conn

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(cls, folder: Path, name: str, *, question: str = "") -> Project:
        path = project_path(folder, name)
        if path.exists():
            raise ProjectError(f"a screening project {name!r} exists already ({path})")
        folder.mkdir(parents=True, exist_ok=True)
        project = cls(path, _connect(path))
        project.conn.executescript(SCHEMA)
        with project._write():
            project.conn.executemany(
                "INSERT INTO meta VALUES (?, ?)",
                [
                    ("name", name),
                    ("question", question),
                    ("created", now()),
                    ("reasons", json.dumps(list(DEFAULT_REASONS))),
                    ("schema", "1"),
                ],
            )
        return project

    @classmethod
    def open(cls, folder: Path, name: str) -> Project:
        path = project_path(folder, name)
        if not path.exists():
            known = ", ".join(list_projects(folder)) or "none yet"
            raise ProjectError(
                f"no screening project {name!r} (projects: {known}; start one with"
                " `medsearch screen start NAME`)"
            )
        try:
            conn = _connect(path)
            conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.DatabaseError as exc:
            raise ProjectError(f"{path} is not a screening project: {exc}") from exc
        return cls(path, conn)

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Project:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write(self) -> _Transaction:
        return _Transaction(self.conn)

    # -- meta ------------------------------------------------------------------------------

    def meta(self, key: str, default: str = "") -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self._write():
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    @property
    def name(self) -> str:
        return self.meta("name", self.path.stem)

    @property
    def question(self) -> str:
        return self.meta("question")

    def reasons(self) -> list[str]:
        return list(json.loads(self.meta("reasons", "[]")))

    def set_reasons(self, reasons: Sequence[str]) -> None:
        clean = [" ".join(r.split()) for r in reasons if r.strip()]
        self.set_meta("reasons", json.dumps(list(dict.fromkeys(clean))))

    # -- records ---------------------------------------------------------------------------

    def add(self, items: Sequence[Item], strategy: Strategy) -> Added:
        """Add ``items`` in their order (the strategy's ranking), flagging duplicates of
        one another and of the records already in."""
        known_rows = self.conn.execute(
            "SELECT id, pmid, doi, title, year, authors FROM records WHERE duplicate_of IS NULL"
        ).fetchall()
        known = [
            Item(title=t, pmid=p, doi=d, year=y, authors=tuple(json.loads(a)))
            for _, p, d, t, y, a in known_rows
        ]
        duplicates = find_duplicates(items, known)
        dup_of = {d.index: d for d in duplicates}
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO strategies (label, query, history, identified, at)"
                " VALUES (?, ?, ?, ?, ?)",
                (strategy.label, strategy.query, strategy.history, len(items), now()),
            )
            strategy_id = int(cur.lastrowid or 0)
            start = self.conn.execute("SELECT coalesce(max(id), 0) FROM records").fetchone()[0]
            rank0 = self.conn.execute("SELECT coalesce(max(rank), 0) FROM records").fetchone()[0]
            rows = []
            for index, item in enumerate(items):
                dup = dup_of.get(index)
                of: int | None = None
                if dup is not None:
                    of = known_rows[-1 - dup.of][0] if dup.of < 0 else start + 1 + dup.of
                rows.append(
                    (
                        start + 1 + index,
                        item.pmid,
                        item.doi,
                        item.title,
                        item.abstract,
                        item.year,
                        json.dumps(list(item.authors)),
                        item.journal,
                        json.dumps(list(item.keywords)),
                        json.dumps(list(item.mesh)),
                        item.label,
                        item.row,
                        item.matched_by,
                        rank0 + 1 + index,
                        strategy_id,
                        of,
                        None if dup is None else dup.key,
                    )
                )
            self.conn.executemany(f"INSERT INTO records VALUES ({','.join('?' * 17)})", rows)
        return Added(len(items) - len(duplicates), tuple(duplicates), strategy_id)

    def strategies(self) -> list[tuple[int, Strategy, int]]:
        """(id, strategy, records identified) in the order they were added."""
        return [
            (i, Strategy(label, query, history), identified)
            for i, label, query, history, identified in self.conn.execute(
                "SELECT id, label, query, history, identified FROM strategies ORDER BY id"
            )
        ]

    def count(self, *, duplicates: bool = False) -> int:
        where = "" if duplicates else " WHERE duplicate_of IS NULL"
        return int(self.conn.execute(f"SELECT count(*) FROM records{where}").fetchone()[0])

    def record(self, record_id: int) -> Item:
        row = self.conn.execute(f"SELECT {_ITEM_COLUMNS} FROM records WHERE id = ?", (record_id,))
        found = row.fetchone()
        if found is None:
            raise NotFoundError(f"no record {record_id} in the project {self.name!r}")
        return _item(found)

    def records(self, ids: Iterable[int] | None = None) -> Iterator[tuple[int, Item]]:
        """(id, record) for the screenable records (duplicates left out), in rank order."""
        if ids is None:
            cursor = self.conn.execute(
                f"SELECT id, {_ITEM_COLUMNS} FROM records WHERE duplicate_of IS NULL ORDER BY rank"
            )
            for row in cursor:
                yield int(row[0]), _item(row[1:])
            return
        for record_id in ids:
            yield record_id, self.record(record_id)

    def ids_in_rank_order(self) -> list[int]:
        return [
            int(r[0])
            for r in self.conn.execute(
                "SELECT id FROM records WHERE duplicate_of IS NULL ORDER BY rank"
            )
        ]

    def id_of(self, key: str) -> int:
        """A record by its id in the project (``12``) or its PMID (``PMID 123``/``pmid:123``)."""
        text = key.strip().lower().replace(":", " ")
        if text.startswith("pmid"):
            pmid = int(text.removeprefix("pmid").strip() or "0")
            row = self.conn.execute(
                "SELECT id FROM records WHERE pmid = ? ORDER BY duplicate_of IS NOT NULL, id",
                (pmid,),
            ).fetchone()
            if row is None:
                raise NotFoundError(f"no record with PMID {pmid} in the project {self.name!r}")
            return int(row[0])
        if not text.isdigit():
            raise UsageError(f"{key!r} is not a record id (a number, or PMID N)")
        self.record(int(text))
        return int(text)

    # -- duplicates ------------------------------------------------------------------------

    def duplicates(self) -> list[tuple[int, int, str, str]]:
        """(record id, id of the record it repeats, key, title) for each flagged one."""
        return [
            (int(i), int(of), str(key), str(title))
            for i, of, key, title in self.conn.execute(
                "SELECT id, duplicate_of, duplicate_key, title FROM records"
                " WHERE duplicate_of IS NOT NULL ORDER BY id"
            )
        ]

    def restore_duplicate(self, record_id: int) -> None:
        """Undo a duplicate flag: the record is screened on its own."""
        with self._write():
            cur = self.conn.execute(
                "UPDATE records SET duplicate_of = NULL, duplicate_key = NULL"
                " WHERE id = ? AND duplicate_of IS NOT NULL",
                (record_id,),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"record {record_id} is not flagged as a duplicate")

    def mark_duplicate(self, record_id: int, of: int) -> None:
        """Flag a duplicate by hand (one the keys missed)."""
        self.record(of)
        with self._write():
            self.conn.execute(
                "UPDATE records SET duplicate_of = ?, duplicate_key = 'by hand' WHERE id = ?",
                (of, record_id),
            )

    # -- decisions -------------------------------------------------------------------------

    def decide(
        self,
        record_id: int,
        decision: str,
        *,
        reviewer: str = DEFAULT_REVIEWER,
        reason: str | None = None,
        source: str = "screen",
    ) -> Decision:
        """Record a decision; it is on disk when this returns."""
        if decision not in DECISIONS:
            raise UsageError(f"{decision!r} is not a decision ({', '.join(DECISIONS)})")
        if reason is not None and decision != "exclude":
            raise UsageError("a reason goes with an exclusion")
        at = now()
        with self._write():
            cur = self.conn.execute(
                "INSERT INTO decisions (record_id, reviewer, decision, reason, at, source)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (record_id, reviewer, decision, reason, at, source),
            )
        return Decision(int(cur.lastrowid or 0), record_id, reviewer, decision, reason, at, source)

    def undo(self, reviewer: str = DEFAULT_REVIEWER) -> Decision | None:
        """Take back the reviewer's latest decision still standing; None when there is none."""
        row = self.conn.execute(
            "SELECT seq, record_id, reviewer, decision, reason, at, source FROM decisions"
            " WHERE reviewer = ? AND undone = 0 ORDER BY seq DESC LIMIT 1",
            (reviewer,),
        ).fetchone()
        if row is None:
            return None
        with self._write():
            self.conn.execute("UPDATE decisions SET undone = 1 WHERE seq = ?", (row[0],))
        return Decision(*row)

    def decisions(self, reviewer: str | None = DEFAULT_REVIEWER) -> dict[int, Decision]:
        """Each record's standing decision by ``reviewer`` (the latest not undone); with
        ``reviewer=None``, every reviewer's, the latest one winning."""
        sql = (
            "SELECT seq, record_id, reviewer, decision, reason, at, source FROM decisions"
            " WHERE undone = 0"
        )
        params: tuple[str, ...] = ()
        if reviewer is not None:
            sql += " AND reviewer = ?"
            params = (reviewer,)
        out: dict[int, Decision] = {}
        for row in self.conn.execute(sql + " ORDER BY seq", params):
            out[int(row[1])] = Decision(*row)
        return out

    def order(self, reviewer: str = DEFAULT_REVIEWER) -> list[Decision]:
        """The reviewer's standing decisions in the order they were made."""
        return sorted(self.decisions(reviewer).values(), key=lambda d: d.seq)

    def reviewers(self) -> list[str]:
        return [
            str(r[0])
            for r in self.conn.execute(
                "SELECT reviewer FROM decisions GROUP BY reviewer ORDER BY min(seq)"
            )
        ]

    # -- notes and tags --------------------------------------------------------------------

    def annotate(
        self, record_id: int, kind: str, text: str, *, reviewer: str = DEFAULT_REVIEWER
    ) -> None:
        if kind not in ("note", "tag"):
            raise UsageError(f"{kind!r}: a record takes a note or a tag")
        with self._write():
            self.conn.execute(
                "INSERT INTO notes (record_id, reviewer, kind, text, at) VALUES (?, ?, ?, ?, ?)",
                (record_id, reviewer, kind, " ".join(text.split()), now()),
            )

    def annotations(self, record_id: int) -> list[tuple[str, str, str]]:
        """(kind, reviewer, text) for a record, oldest first."""
        return [
            (str(k), str(r), str(t))
            for k, r, t in self.conn.execute(
                "SELECT kind, reviewer, text FROM notes WHERE record_id = ? ORDER BY seq",
                (record_id,),
            )
        ]

    def search(self, words: str, *, limit: int = 50) -> list[int]:
        """Records whose title, abstract, keywords or MeSH hold every word (case ignored):
        search within the project."""
        terms = [w for w in words.lower().split() if w]
        if not terms:
            return []
        clause = " AND ".join(
            "instr(lower(title || ' ' || abstract || ' ' || keywords || ' ' || mesh), ?) > 0"
            for _ in terms
        )
        return [
            int(r[0])
            for r in self.conn.execute(
                f"SELECT id FROM records WHERE duplicate_of IS NULL AND {clause}"
                " ORDER BY rank LIMIT ?",
                (*terms, limit),
            )
        ]
