"""What resolving DOI-only references costs (docs/citations.md, "References that give
only a DOI").

- ``lookup``: a lexical index of ``--articles`` synthetic articles, each with a DOI in
  ``[aid]``; ``--lookups`` DOIs (half of them stored) resolved in batches of 1,000 as
  the ingest resolves its queue (:func:`medsearch.index.citations_dois.lexical_lookup`).
- ``arrival``: a store holding ``--pending`` pending references; the probe each written
  article's DOI makes among them (:func:`medsearch.store.ref_dois.arrivals`), and the
  bytes a pending reference takes.

    python -m benchmarks.citations dois --articles 200000 --lookups 100000 --pending 1000000
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from medsearch.records import Article


def _articles(n: int) -> list[Article]:
    return [
        Article(pmid=p, title=f"article {p}", article_ids=(("doi", f"10.{1000 + p % 97}/j.{p}"),))
        for p in range(1, n + 1)
    ]


def lookup(folder: Path, articles: int, lookups: int) -> None:
    from medsearch.index.citations_dois import BATCH, lexical_lookup
    from medsearch.index.lexical.index import LexicalIndex
    from medsearch.store.db import Store

    rows = _articles(articles)
    with Store(folder / "store.sqlite") as store:
        with store.transaction():
            store.upsert(rows)
        index = LexicalIndex.open(folder / "lexical", write=True)
        for i in range(0, len(rows), 20_000):
            index.add(rows[i : i + 20_000])
        index.commit()
        rng = random.Random(1)
        wanted = [
            f"10.{1000 + p % 97}/j.{p}" if rng.random() < 0.5 else f"10.1/absent.{p}"
            for p in rng.sample(range(1, articles + 1), lookups)
        ]
        find = lexical_lookup(index, store.conn)
        start = time.perf_counter()
        found = 0
        for i in range(0, len(wanted), BATCH):
            found += len(find(wanted[i : i + BATCH]))
        seconds = time.perf_counter() - start
        index.close()
    print(
        f"lookup: {lookups:,} DOIs ({found:,} found) among {articles:,} articles in"
        f" {seconds:.2f} s: {seconds / lookups * 1e6:.1f} us a DOI,"
        f" {seconds / lookups * 1e6:.0f} s per 1M"
    )


def arrival(folder: Path, articles: int, pending: int) -> None:
    from medsearch.store import ref_dois
    from medsearch.store.db import Store

    rows = _articles(articles)
    with Store(folder / "arrival.sqlite") as store:
        with store.transaction():
            store.upsert(rows)
        conn = store.conn

        def pages() -> int:
            return int(conn.execute("PRAGMA page_count").fetchone()[0])

        size = conn.execute("PRAGMA page_size").fetchone()[0]
        before = pages()
        rng = random.Random(2)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT OR IGNORE INTO ref_dois(citing, key) VALUES (?, ?)",
            (
                (rng.randrange(1, 40_000_000), ref_dois.doi_key(f"10.1/absent.{i}"))
                for i in range(pending)
            ),
        )
        conn.execute("COMMIT")
        grown = (pages() - before) * size
        pmids = [a.pmid for a in rows]
        conn.execute("BEGIN")
        start = time.perf_counter()
        ref_dois.arrivals(conn, pmids)
        seconds = time.perf_counter() - start
        conn.execute("ROLLBACK")
    print(
        f"arrival: {pending:,} pending references take {grown / pending:.1f} bytes each;"
        f" probing {articles:,} written articles' DOIs: {seconds / articles * 1e6:.1f} us"
        " an article"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--articles", type=int, default=200_000)
    ap.add_argument("--lookups", type=int, default=100_000)
    ap.add_argument("--pending", type=int, default=1_000_000)
    args = ap.parse_args()
    with TemporaryDirectory() as tmp:
        lookup(Path(tmp), args.articles, args.lookups)
        arrival(Path(tmp), args.articles, args.pending)


if __name__ == "__main__":
    main()
