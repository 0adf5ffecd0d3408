"""What the SQL ``articles`` table costs and buys: CPU per article, bytes, query times.

    python -m benchmarks.ingest sql [--articles 30000] [--repeat 3]

Parsed synthetic PubMed (benchmarks.synth) is written the way ingest writes it: rows
built as the parsers build them, inserted 10K per transaction into a file-backed WAL
database. CPU time (not wall time) is measured, so the figures hold on a busy machine:

- the parser side: ``row_of`` with the ``articles`` row and without it;
- the writer side, schema by schema: the records alone (what the writer did before), plus
  the ``articles`` table, plus its three indexes, plus the two side tables their
  triggers keep (the full schema);
- bytes per article of each table and index (``dbstat``);
- the queries the table is for, answered from the indexes and side tables and, for
  comparison, by scanning the JSON columns;
- the fill of ``articles`` in a store an older medsearch wrote (``backfill.fill``).
"""

from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.synth import write_synthetic_pubmed
from ingest.pubmed_xml import parse_file
from medsearch.records import Article
from medsearch.store import codec
from medsearch.store.columns import ARTICLES_UPSERT, MESH_INSERT, TYPES_INSERT, side_rows
from medsearch.store.db import WRITER_CACHE_KIB, Store
from medsearch.store.rows import RECORDS_UPSERT, Row, row_of
from medsearch.store.schema import MIGRATIONS, RECORDS_SCHEMA, migrate, statements

BATCH = 10_000


def cpu(fn: Callable[[], object], repeat: int) -> float:
    """Least process CPU seconds of ``repeat`` calls."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def articles_ddl() -> list[str]:
    """The migration that made the ``articles`` table, with the columns and indexes later
    migrations add to it (the writer's upsert fills them)."""
    later = [
        s
        for migration in MIGRATIONS[RECORDS_SCHEMA:]
        for s in statements(migration)
        if s.startswith(("ALTER TABLE articles ADD COLUMN", "CREATE INDEX articles_"))
    ]
    return statements(MIGRATIONS[RECORDS_SCHEMA - 1]) + later


def schema_variants() -> dict[str, list[str]]:
    """The ``articles`` schema cut down step by step (statements dropped from it)."""
    full = articles_ddl()
    side = ("articles_mesh_major", "articles_publication_types")
    no_side = [s for s in full if not any(name in s for name in side)]
    bare = [s for s in no_side if not s.startswith("CREATE INDEX")]
    return {
        "records only (the writer before)": [
            s
            for s in bare
            if "articles (" not in s and not s.startswith("ALTER TABLE articles ADD")
        ],
        "+ articles table": bare,
        "+ its indexes": no_side,
        "+ side tables (full schema)": full,
    }


def database(path: Path, articles_schema: list[str], cache_kib: int) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA cache_size=-{cache_kib}")
    migrate(conn, target=RECORDS_SCHEMA - 1)
    for statement in articles_schema:
        conn.execute(statement)
    return conn


def write(
    path: Path,
    articles_schema: list[str],
    rows: list[Row],
    *,
    cache_kib: int = WRITER_CACHE_KIB,
    per_file: int = 30_000,
    batch: int = 1_000,
    side: bool = True,
) -> tuple[float, float]:
    """(CPU, wall) seconds to write ``rows`` (compressed) into a fresh database as ingest
    does: one transaction per input file of ``per_file`` articles, ``batch`` rows per
    insert (the parsers' batch), the Store's statements."""
    conn = database(path, articles_schema, cache_kib)
    has_articles = any("articles (" in s for s in articles_schema)
    has_side = side and any("articles_mesh_major" in s for s in articles_schema)
    t0, c0 = time.perf_counter(), time.process_time()
    for f in range(0, len(rows), per_file):
        conn.execute("BEGIN IMMEDIATE")
        for i in range(f, min(len(rows), f + per_file), batch):
            part = rows[i : i + batch]
            conn.executemany(RECORDS_UPSERT, [(p, v, y, h, 1, d) for p, v, y, h, d, _ in part])
            if has_articles:
                conn.executemany(ARTICLES_UPSERT, [r[5] for r in part])
            if has_side:
                mesh, types = side_rows(r[5] for r in part)
                conn.executemany(MESH_INSERT, mesh)
                conn.executemany(TYPES_INSERT, types)
        conn.execute("COMMIT")
    spent = time.process_time() - c0, time.perf_counter() - t0
    conn.close()
    return spent


TRIGGER_INSERT = """CREATE TRIGGER articles_insert AFTER INSERT ON articles BEGIN
    INSERT OR IGNORE INTO articles_mesh_major(heading, pmid)
        SELECT value, new.pmid FROM json_each(new.mesh_major);
    INSERT OR IGNORE INTO articles_publication_types(publication_type, pmid)
        SELECT value, new.pmid FROM json_each(new.publication_types);
END"""


def pubmed_like_rows(n: int, seed: int = 0) -> list[Row]:
    """``n`` store rows with PubMed's cardinalities, no XML: ~30K journals and ~30K
    headings drawn Zipf-like, 3 major headings and 1-3 publication types per article,
    years rising with the PMID; the record blob is 900 random bytes (its size compressed).
    What decides the cost of the ``articles`` indexes is how many different pages new
    rows land on, and that is set by these cardinalities, not by the text."""
    import os

    import numpy as np
    import orjson

    rng = np.random.default_rng(seed)

    def zipf(k: int, size: int, a: float) -> np.ndarray:
        w = 1.0 / np.arange(1, k + 1) ** a
        return rng.choice(k, size=size, p=w / w.sum())

    journals = zipf(30_000, n, 1.1)
    headings = zipf(30_000, 3 * n, 1.0).reshape(n, 3)
    kinds = rng.random(n)
    blob = os.urandom(900)
    out: list[Row] = []
    for i in range(n):
        pmid, j = i + 1, int(journals[i])
        year = 1950 + 75 * i // n + int(rng.integers(0, 3))
        types = ["Journal Article"]
        types += ["Review"] if kinds[i] < 0.1 else []
        types += ["Randomized Controlled Trial"] if kinds[i] > 0.97 else []
        majors = list(dict.fromkeys(f"Heading {int(h)} (synthetic)" for h in headings[i]))
        article = (
            pmid,
            f"A synthetic title of about the length PubMed's titles have, number {pmid}",
            year,
            f"Journal of Synthetic Studies {j}",
            f"J Synth Stud {j}",
            "Smith JA",
            "Lee B",
            f"10.1000/synth.{pmid}",
            None,
            '["eng"]',
            orjson.dumps(types).decode(),
            orjson.dumps(majors).decode(),
            0,  # no notice: retracted, notice, notices, notice_for
            None,
            "[]",
            "[]",
        )
        out.append((pmid, 1, year, "0" * 32, blob, article))
    return out


def at_scale(n: int, work: Path) -> None:
    """The writer's SQL per article over ``n`` PubMed-like rows, for this design and the
    ones it was chosen over (wall and CPU; one run each: minutes at 1M)."""
    full = articles_ddl()
    records_only = [s for s in full if s.startswith("ALTER TABLE articles RENAME")]
    rows = pubmed_like_rows(n)
    variants = [
        ("records only, 2 MB cache (the writer before)", records_only, 2000),
        ("this design, 2 MB cache (SQLite's default)", full, 2000),
        ("this design (256 MB writer cache)", full, WRITER_CACHE_KIB),
        (
            "+ a (journal, year) index",
            [*full, "CREATE INDEX articles_journal_year ON articles(journal, year)"],
            WRITER_CACHE_KIB,
        ),
        ("side rows by a per-row trigger", [*full, TRIGGER_INSERT], WRITER_CACHE_KIB),
    ]
    print(f"writer SQL at {n:,} PubMed-like articles (1,000-row inserts, 30K per transaction):")
    for label, articles_schema, cache in variants:
        path = work / "scale.sqlite"
        cpu_s, wall = write(
            path, articles_schema, rows, cache_kib=cache, side=("trigger" not in label)
        )
        size = sum(p.stat().st_size for p in work.glob("scale.sqlite*"))
        print(
            f"  {label:46s} {1e6 * wall / n:6.1f} us wall {1e6 * cpu_s / n:6.1f} us CPU"
            f" {size / n:6.0f} B/article"
        )
        if label.startswith("this design (256"):
            kept = work / "kept.sqlite"
            path.rename(kept)
        for p in work.glob("scale.sqlite*"):
            p.unlink()
    print(f"queries at {n:,} (wall, least of 3; rows):")
    for label, seconds, count in query_times(work / "kept.sqlite", 3):
        print(f"  {label:54s} {1e3 * seconds:8.2f} ms  {count:7,}")


def sizes(path: Path, n: int) -> list[tuple[str, float]]:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        found = conn.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC"
        ).fetchall()
    finally:
        conn.close()
    return [(name, size / n) for name, size in found]


def query_times(path: Path, repeat: int) -> list[tuple[str, float, int]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    heading, journal = conn.execute(
        "SELECT heading, (SELECT journal_iso FROM articles LIMIT 1) FROM articles_mesh_major"
        " GROUP BY heading ORDER BY COUNT(*) DESC LIMIT 1 OFFSET 100"
    ).fetchone()
    queries = {
        "counts by year (index)": ("SELECT year, COUNT(*) FROM articles GROUP BY year", ()),
        "counts by journal (index)": (
            "SELECT journal_iso, COUNT(*) FROM articles GROUP BY journal_iso",
            (),
        ),
        "reviews in a journal since 2015 (index + side table)": (
            "SELECT a.pmid FROM articles a JOIN articles_publication_types t USING (pmid)"
            " WHERE a.journal_iso = ? AND a.year >= 2015 AND t.publication_type = 'Review'",
            (journal,),
        ),
        "reviews in a journal since 2015 (index + json_each)": (
            "SELECT pmid FROM articles WHERE journal_iso = ? AND year >= 2015 AND EXISTS"
            " (SELECT 1 FROM json_each(publication_types) WHERE value = 'Review')",
            (journal,),
        ),
        "articles of a MeSH heading (side table)": (
            "SELECT a.* FROM articles a JOIN articles_mesh_major m USING (pmid)"
            " WHERE m.heading = ?",
            (heading,),
        ),
        "articles of a MeSH heading (LIKE scan)": (
            "SELECT * FROM articles WHERE mesh_major LIKE ?",
            (f'%"{heading}"%',),
        ),
        "articles of a MeSH heading (json_each scan)": (
            "SELECT * FROM articles WHERE EXISTS"
            " (SELECT 1 FROM json_each(mesh_major) WHERE value = ?)",
            (heading,),
        ),
    }
    out = []
    for label, (sql, params) in queries.items():
        best, count = float("inf"), 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            count = len(conn.execute(sql, params).fetchall())
            best = min(best, time.perf_counter() - t0)
        out.append((label, best, count))
    conn.close()
    return out


def backfill_rate(path: Path, articles: list[Article]) -> float:
    """Articles per second filled into ``articles`` in a store from before the articles table."""
    from medsearch.store.backfill import fill

    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    migrate(conn, target=RECORDS_SCHEMA - 1)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO articles(pmid, version, year, content_hash, data) VALUES (?,?,?,?,?)",
        [(p, v, y, h, codec.compress(d)) for p, v, y, h, d, _ in map(row_of, articles)],
    )
    conn.execute("COMMIT")
    conn.close()
    with Store(path) as store:
        t0 = time.perf_counter()
        filled = fill(store)
        return filled / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=30_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--scale", type=int, default=0, help="also time the writer over N PubMed-like rows"
    )
    args = ap.parse_args()
    n = args.articles
    work = Path(tempfile.mkdtemp(prefix="medsearch-bench-sql-"))
    try:
        xml = work / "pubmed26n0001.xml.gz"
        write_synthetic_pubmed(xml, n, gzip=True, seed=1)
        articles = [a for a in parse_file(xml) if isinstance(a, Article)]
        assert len(articles) == n

        def records_only() -> None:
            for a in articles:
                (a.pmid, a.version, a.year, a.content_hash, codec.encode(a.to_dict()))

        def with_columns() -> None:
            for a in articles:
                row_of(a)

        before = cpu(records_only, args.repeat)
        after = cpu(with_columns, args.repeat)
        print(f"{n:,} synthetic articles; CPU time, least of {args.repeat}")
        print(
            f"parser, row per article: {1e6 * before / n:5.1f} us -> {1e6 * after / n:5.1f} us"
            f" with the articles row (+{1e6 * (after - before) / n:.1f} us)"
        )
        rows = [(*r[:4], codec.compress(r[4]), r[5]) for r in map(row_of, articles)]
        base = 0.0
        for label, variant in schema_variants().items():
            spent = []
            for r in range(args.repeat):
                path = work / f"w{r}.sqlite"
                spent.append(write(path, variant, rows)[0])
                if r < args.repeat - 1 or "full" not in label:
                    for p in work.glob(f"w{r}.sqlite*"):
                        p.unlink()
            us = 1e6 * min(spent) / n
            base = base or us
            print(f"writer SQL, {label:34s}: {us:5.1f} us/article (x{us / base:.2f})")
        full = work / f"w{args.repeat - 1}.sqlite"
        print("bytes per article (dbstat):")
        total = 0.0
        for name, per in sizes(full, n):
            total += per
            if per >= 1:  # not the empty ledger, meta ...
                print(f"  {name:34s} {per:7.0f}")
        print(f"  {'total':34s} {total:7.0f}")
        print("queries (wall, least of repeats; rows):")
        for label, seconds, count in query_times(full, args.repeat):
            print(f"  {label:54s} {1e3 * seconds:8.2f} ms  {count:7,}")
        rate = backfill_rate(work / "old.sqlite", articles)
        print(
            f"fill of an older store: {rate:,.0f} articles/s"
            f" ({40.9e6 / rate / 60:.0f} min for 40.9M on one core)"
        )
        if args.scale:
            at_scale(args.scale, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
