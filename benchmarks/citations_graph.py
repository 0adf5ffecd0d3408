"""A synthetic citation graph of PubMed's shape, stored and built as medsearch does.

Shape: citing articles hold ~``refs`` references each (a lognormal count, mean ~25, as
PMC's reference lists); cited PMIDs are drawn in proportion to a Pareto(1.5) weight per
PMID, so in-degrees follow a power law (most articles cited a few times, a few cited
tens of thousands of times) over a PMID range 1.3x the citing articles (some are cited
and cite nothing in the corpus). Edges go straight into ``article_refs`` through the
store's own writer (:func:`medsearch.store.refs.write_lists`), a transaction per chunk.
"""

from __future__ import annotations

import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from medsearch.index.citations import CitationGraph, build, refresh
from medsearch.store.db import Store
from medsearch.store.refs import write_lists

CHUNK_CITING = 100_000


def _fill(store: Store, edges: int, refs: int, rng: np.random.Generator) -> tuple[int, int, int]:
    citing_n = edges // refs
    pmid_range = int(citing_n * 1.3)
    weights = rng.pareto(1.5, pmid_range) + 1.0
    cumulative = np.cumsum(weights)
    citing_pmids = np.sort(rng.choice(np.arange(1, pmid_range + 1), citing_n, replace=False))
    written = 0
    for lo in range(0, citing_n, CHUNK_CITING):
        pmids = citing_pmids[lo : lo + CHUNK_CITING]
        counts = np.clip(rng.lognormal(np.log(refs) - 0.18, 0.6, len(pmids)), 1, 2000).astype(
            np.int64
        )
        draws = np.searchsorted(cumulative, rng.random(int(counts.sum())) * cumulative[-1]) + 1
        row_of = np.repeat(np.arange(len(pmids), dtype=np.uint64), counts)
        keys = np.unique((row_of << np.uint64(32)) | draws.astype(np.uint64))  # per row, once
        cited = (keys & np.uint64(0xFFFFFFFF)).astype("<u4")
        bounds = np.searchsorted(keys >> np.uint64(32), np.arange(len(pmids) + 1, dtype=np.uint64))
        data = cited.tobytes()
        rows = [
            (int(p), data[4 * int(bounds[i]) : 4 * int(bounds[i + 1])]) for i, p in enumerate(pmids)
        ]
        written += len(cited)
        with store.transaction():
            write_lists(store.conn, rows)
    return written, pmid_range, citing_n


def _du(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _best(fn: object, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def graph(edges: int, refs: int, where: Path | None) -> None:
    rng = np.random.default_rng(0)
    with TemporaryDirectory(dir=where) as tmp:
        home = Path(tmp)
        store = Store(home / "store.sqlite")
        t0 = time.perf_counter()
        written, pmid_range, citing_n = _fill(store, edges, refs, rng)
        fill_s = time.perf_counter() - t0
        store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        table_bytes = _du(home / "store.sqlite")
        print(f"edges {written:,} from {citing_n:,} citing articles, PMIDs 1..{pmid_range:,}")
        print(f"writing article_refs: {fill_s:.1f} s ({fill_s / written * 1e9:.0f} ns/edge)")

        reference = _best(
            lambda: sum(1 for _ in store.conn.execute("SELECT edges FROM article_refs")), 1
        )
        info = build(home / "citations", store.conn)
        print(
            f"build: {info.seconds:.1f} s ({info.seconds / written * 1e9:.0f} ns/edge); reference,"
            f" one read of the table: {reference:.1f} s: x{info.seconds / reference:.1f}"
        )
        arrays = _du(home / "citations")
        print(
            f"disk: article_refs store {table_bytes / 1e9:.2f} GB"
            f" ({table_bytes / written:.2f} B/edge),"
            f" cited-by arrays {arrays / 1e9:.2f} GB ({arrays / written:.2f} B/edge);"
            f" at 1B edges ~{(table_bytes + arrays) / written:.2f} GB"
            f" + the offsets' share of 42M PMIDs"
        )

        conn = store.conn
        t0 = time.perf_counter()
        g = CitationGraph.open(home / "citations", conn)
        open_s = time.perf_counter() - t0
        probes = rng.integers(1, pmid_range, 1000)
        degrees = g.counts(probes)
        assert g.offsets is not None and g.keys is not None
        top = int(g.keys[int(np.argmax(np.diff(g.offsets.astype(np.int64))))])
        one_cited = _best(lambda: [g.cited_by(int(p)) for p in probes]) / len(probes)
        one_refs = _best(lambda: [g.references(int(p)) for p in probes]) / len(probes)
        top_cited = _best(lambda: g.cited_by(top))
        counts = _best(lambda: g.counts(probes))
        row_reads = _best(
            lambda: [
                conn.execute("SELECT 1 FROM article_refs WHERE pmid = ?", (int(p),)).fetchone()
                for p in probes
            ]
        )
        print(f"open (arrays mapped, no overlay): {open_s * 1e3:.2f} ms")
        print(
            f"cited-by of one article: {one_cited * 1e3:.3f} ms (mean degree of the probes"
            f" {degrees.mean():.1f}); of the most cited ({g.count(top):,} citing):"
            f" {top_cited * 1e3:.2f} ms"
        )
        print(f"references of one article: {one_refs * 1e3:.3f} ms")
        print(
            f"counts for 1,000 hits: {counts * 1e3:.3f} ms; reference, 1,000 primary-key"
            f" lookups in article_refs: {row_reads * 1e3:.2f} ms: x{counts / row_reads:.3f}"
        )

        # an update file's worth of changed records, then the overlay
        changed = rng.choice(np.arange(1, pmid_range), 30_000, replace=False)
        with store.transaction():
            write_lists(
                conn,
                [
                    (int(p), np.unique(rng.integers(1, pmid_range, 25)).astype("<u4").tobytes())
                    for p in changed
                ],
            )
        t0 = time.perf_counter()
        refresh(home / "citations", conn)
        refresh_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        g = CitationGraph.open(home / "citations", conn)
        open_s = time.perf_counter() - t0
        one_cited = _best(lambda: [g.cited_by(int(p)) for p in probes]) / len(probes)
        counts = _best(lambda: g.counts(probes))
        print(
            f"after 30,000 changed citing articles: refresh (overlay saved) {refresh_s:.2f} s,"
            f" open {open_s * 1e3:.1f} ms, cited-by {one_cited * 1e3:.3f} ms,"
            f" counts for 1,000 {counts * 1e3:.3f} ms"
        )
        store.close()
