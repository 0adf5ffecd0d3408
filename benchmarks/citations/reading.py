"""The citation graph's costs: parsing reference lists, and the graph at scale.

``parse``: real records (../shared/data/pubmed) cycled into an uncompressed file, parsed
by ``parse_file`` with reference lists read and, as the reference in the same run, with
``_references`` switched off; best of ``--repeat`` alternated rounds. Two mixes: every
real record, and only those holding a ``ReferenceList`` (what 2026's records look like).

``ingest``: the CPU time of whole in-process ingests (parse, store, lexical index, the
cited-by arrays) of such a file into a fresh home, with and without references.

``graph``: a synthetic graph of PubMed's shape written into a store's ``article_refs``
table through the store's own writer (:func:`medsearch.store.refs.write_lists`), built
into the memory-mapped cited-by arrays, then timed: references and cited-by of one
article, counts for 1,000 hits, the build, and the bytes on disk, each beside a
reference measured in the same run. Citing articles hold ~``--refs-per-article``
references each (a lognormal count, mean ~25, as PMC's reference lists); cited PMIDs are
drawn in proportion to a Pareto(1.5) weight per PMID, so in-degrees follow a power law
(most articles cited a few times, a few tens of thousands of times) over a PMID range
1.3x the citing articles (some are cited and cite nothing in the corpus).

    python -m benchmarks.citations parse --articles 5000
    python -m benchmarks.citations ingest --articles 5000
    python -m benchmarks.citations stages --articles 4000
    python -m benchmarks.citations graph --edges 100000000
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np

from benchmarks.real_records import load_records, write_cycled_pubmed
from medsearch.index.citations import CitationGraph, build, refresh
from medsearch.store.db import Store
from medsearch.store.refs import write_lists

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "pubmed"


def _parse_seconds(path: Path, with_references: bool) -> float:
    import ingest.pubmed_xml as parser

    original = parser._references
    if not with_references:
        parser._references = lambda parent: ()  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        for _ in parser.parse_file(path):
            pass
        return time.perf_counter() - start
    finally:
        parser._references = original


def _encode_seconds(path: Path) -> tuple[float, float]:
    """Building the store rows and compressing them, without and with the references."""
    import dataclasses

    from ingest.pubmed_xml import parse_file
    from medsearch.records import Article
    from medsearch.store import codec
    from medsearch.store.rows import row_of

    full = [a for a in parse_file(path) if isinstance(a, Article)]
    bare = [dataclasses.replace(a, references=()) for a in full]
    best: list[float] = []
    for batch in (bare, full):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            for a in batch:
                codec.compress(row_of(a)[4])
            times.append(time.perf_counter() - start)
        best.append(min(times))
    return best[0], best[1]


def parse(articles: int, repeat: int) -> None:
    records = load_records(SHARED)
    mixes = {
        "all real records": records,
        "records with a ReferenceList": [r for r in records if b"<ReferenceList" in r[0] + r[1]],
    }
    with TemporaryDirectory() as tmp:
        for name, mix in mixes.items():
            path = Path(tmp) / "cycled.xml"
            write_cycled_pubmed(path, articles, mix, gzip=False)
            without: list[float] = []
            with_refs: list[float] = []
            for _ in range(repeat):
                without.append(_parse_seconds(path, False))
                with_refs.append(_parse_seconds(path, True))
            base, ours = min(without), min(with_refs)
            enc_base, enc_ours = _encode_seconds(path)
            print(
                f"  row_of + zstd (the parser process's other work): without references "
                f"{enc_base / articles * 1e6:.1f} us/article, with "
                f"{enc_ours / articles * 1e6:.1f}: x{enc_ours / enc_base:.3f}"
            )
            print(
                f"{name} ({len(mix)} distinct, cycled to {articles}): without references "
                f"{base / articles * 1e6:.1f} us/article (reference), with "
                f"{ours / articles * 1e6:.1f} us/article: x{ours / base:.3f}"
            )


def _ingest_cpu(path: Path, with_references: bool, tmp: Path) -> float:
    """CPU seconds of one in-process ingest (parse, store, index, citation arrays) of
    ``path`` into a fresh home: process time, so other tenants' load does not count."""
    import shutil

    import ingest.pubmed_xml as parser
    from ingest.pipeline import Ingestor
    from medsearch.index.citations import refresh
    from medsearch.paths import Paths

    home = tmp / "home"
    shutil.rmtree(home, ignore_errors=True)
    original = parser._references
    if not with_references:
        parser._references = lambda parent: ()  # type: ignore[assignment]
    try:
        start = time.process_time()
        with Ingestor(Paths(home), jobs=0) as ingestor:
            ingestor.run([path])
            refresh(Paths(home).citations, ingestor.store.conn)
        return time.process_time() - start
    finally:
        parser._references = original


def ingest(articles: int, repeat: int) -> None:
    records = load_records(SHARED)
    mixes = {
        "all real records": records,
        "records with a ReferenceList": [r for r in records if b"<ReferenceList" in r[0] + r[1]],
    }
    with TemporaryDirectory() as tmp:
        for name, mix in mixes.items():
            path = Path(tmp) / "pubmed26n0001.xml.gz"
            write_cycled_pubmed(path, articles, mix)
            without: list[float] = []
            with_refs: list[float] = []
            for round_ in range(repeat):  # which goes first alternates (order bias)
                for flag in (False, True) if round_ % 2 == 0 else (True, False):
                    spent = _ingest_cpu(path, flag, Path(tmp))
                    (with_refs if flag else without).append(spent)
            base, ours = min(without), min(with_refs)
            print(
                f"ingest CPU, {name} (cycled to {articles}, jobs=0): without references"
                f" {base / articles * 1e6:.0f} us/article (reference), with"
                f" {ours / articles * 1e6:.0f} us/article: x{ours / base:.3f}"
            )


def stages(articles: int, repeat: int) -> None:
    """Process time of each ingest stage on records that hold a reference list, with
    and without references (the reference): the parse streamed, then holding every
    record (the garbage collector's share grows with the objects alive), ``prepare``
    (rows, compression, lexical documents) and the store's writer."""
    import gc

    import ingest.pubmed_xml as parser
    from ingest.writer_rows import writer_batch
    from medsearch.records import Article
    from medsearch.store.db import Store

    mix = [r for r in load_records(SHARED) if b"<ReferenceList" in r[0] + r[1]]
    original = parser._references
    best: dict[tuple[str, bool], float] = {}

    def note(stage: str, flag: bool, seconds: float) -> None:
        best[stage, flag] = min(best.get((stage, flag), 9e9), seconds)

    with TemporaryDirectory() as tmp:
        path = Path(tmp) / "cycled.xml"
        write_cycled_pubmed(path, articles, mix, gzip=False)
        for round_ in range(repeat):
            for flag in (False, True):
                parser._references = original if flag else (lambda parent: ())  # type: ignore[assignment]
                try:
                    start = time.process_time()
                    for _ in parser.parse_file(path):
                        pass
                    note("parse, streamed", flag, time.process_time() - start)
                    start = time.process_time()
                    held = [a for a in parser.parse_file(path) if isinstance(a, Article)]
                    note("parse, every record held", flag, time.process_time() - start)
                finally:
                    parser._references = original
                start = time.process_time()
                batches = [writer_batch(held[i : i + 500]) for i in range(0, len(held), 500)]
                note("prepare", flag, time.process_time() - start)
                del held
                gc.collect()
                with Store(Path(tmp) / f"store-{round_}-{flag}.sqlite") as store:
                    start = time.process_time()
                    for batch in batches:
                        with store.transaction():
                            store.upsert_rows(batch.rows, cited=batch.cited)
                    note("store writer", flag, time.process_time() - start)
    for stage in dict.fromkeys(s for s, _ in best):
        base, ours = best[stage, False], best[stage, True]
        print(
            f"{stage}: without references {base / articles * 1e6:.0f} us/article (reference),"
            f" with {ours / articles * 1e6:.0f}: x{ours / base:.3f}"
        )


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


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    sub = args.add_subparsers(dest="what", required=True)
    p = sub.add_parser("parse")
    p.add_argument("--articles", type=int, default=5000)
    p.add_argument("--repeat", type=int, default=5)
    st = sub.add_parser("stages")
    st.add_argument("--articles", type=int, default=4000)
    st.add_argument("--repeat", type=int, default=3)
    i = sub.add_parser("ingest")
    i.add_argument("--articles", type=int, default=5000)
    i.add_argument("--repeat", type=int, default=3)
    g = sub.add_parser("graph")
    g.add_argument("--edges", type=int, default=10_000_000)
    g.add_argument("--refs-per-article", type=int, default=25)
    g.add_argument("--dir", type=Path, default=None)
    ns = args.parse_args()
    if ns.what == "parse":
        parse(ns.articles, ns.repeat)
    elif ns.what == "stages":
        stages(ns.articles, ns.repeat)
    elif ns.what == "ingest":
        ingest(ns.articles, ns.repeat)
    else:
        graph(ns.edges, ns.refs_per_article, ns.dir)


if __name__ == "__main__":
    main()
