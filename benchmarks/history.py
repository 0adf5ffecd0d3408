"""What the search history costs: recording a search, and checking a MeSH translation.

    python -m benchmarks.history [recording] --n 30000 --lines 10000 --repeat 30
    python -m benchmarks.history translation --terms 4 16 64 --repeat 2000

``recording``: What recording a search in the history costs, beside the search itself.

Builds a synthetic lexical-only home (``benchmarks.synth``), fills its history with
``--lines`` earlier lines (a long-used history), then for set queries of several sizes
times, per search:

- the search itself (lexical, top 10: the reference, measured in the same run);
- recording it (:func:`medsearch.history.recording.record_search`) in a history kept
  open (as the TUI keeps it, and the CLI until its output is printed): parsing and
  printing the query as run, the corpus snapshot, the insert and its commit to the
  write-ahead log, and listing the set when the hits do not already hold all of it;
- a CLI search's whole recording: open, record, close (the close checkpoints the log
  into the file and syncs it: the one fsync-bound step, paid after the output);
- listing the set alone (``result_set`` in a loop of its own: warmer caches than
  inside a recording, so a lower bound of its share);

and the packed size of a set per PMID, for the synthetic set and for a random 10K set
spread over PubMed's 41M PMIDs (gaps of ~4,000: the realistic worst).

``translation``: What checking a MeSH translation adds to recording a search in the history.

With MeSH installed, a history line keeps the translation that ran, and whether it reads
back as that query (:func:`medsearch.history.recording.reads_back`: a parse and a print).
This times that check against the reference measured in the same run: reading the typed
query into the query as read (``parse_query`` and ``format_query``), which every
recording already does. Both are pure CPU, independent of the corpus size: the same at
40.9M articles as here.

The queries are review-style: ``--terms`` untagged words, each mapped to a heading as
automatic term mapping prints it (``("Heading"[MeSH Terms] OR word)``), in OR-groups of
four ANDed together, with a date range.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.modes import run_mode
from benchmarks.synth import write_synthetic_pubmed
from ingest.pipeline import Ingestor
from medsearch.history.entries import SET_LIMIT, pack_pmids, reads_back
from medsearch.history.recording import record_search, result_set
from medsearch.history.store import now, open_history
from medsearch.paths import Paths
from medsearch.query.parser import parse_query
from medsearch.query.printer import format_query
from medsearch.retrieval.searcher import open_searcher


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def words_by_frequency(paths: Paths, targets: list[int]) -> list[tuple[str, int]]:
    """For each target set size, a title word whose ``word[ti]`` set size is nearest."""
    seen: dict[str, int] = {}
    with open_searcher(paths) as searcher:
        for batch in searcher.store.iter_articles(batch=300):
            for article in batch:
                for word in article.title.lower().split():
                    word = word.strip(".,;:()")
                    if word.isalpha() and word not in seen:
                        found = searcher.search(f"{word}[ti]", mode="lexical", k=1, rerank="none")
                        seen[word] = found.total
            break
    return [(w, seen[w]) for w in (min(seen, key=lambda w: abs(seen[w] - t)) for t in targets)]


def fill_history(paths: Paths, lines: int) -> None:
    """``lines`` earlier searches, each with a kept 1,000-PMID set (a used history)."""
    store = open_history(paths)
    assert store is not None
    blob = pack_pmids(np.arange(1, 1_001, dtype=np.int64) * 37)
    rows = [
        (now(), "cli", "search", f"query {i}", f"query {i}", "lexical", blob) for i in range(lines)
    ]
    with store:
        store.conn.executemany(
            "INSERT INTO searches(at, source, command, typed, query, mode, pmids)"
            " VALUES (?,?,?,?,?,?,?)",
            rows,
        )
        store.conn.execute("COMMIT") if store.conn.in_transaction else None


def packing(repeat: int) -> dict[str, dict[str, float]]:
    """A 10K set spread over PubMed's 41M PMIDs, packed three ways: bytes a PMID, ms."""
    import zlib

    import zstandard

    pmids = np.sort(np.random.default_rng(0).choice(41_000_000, 10_000, replace=False))
    gaps = np.diff(pmids, prepend=0).astype("<u4")
    ways: dict[str, Callable[[], bytes]] = {
        "planes_zstd3 (kept)": lambda: pack_pmids(pmids),
        "gaps_zstd3": lambda: zstandard.ZstdCompressor(level=3).compress(gaps.tobytes()),
        "gaps_zlib6": lambda: zlib.compress(gaps.tobytes(), 6),
    }
    out = {}
    for name, pack in ways.items():
        times = []
        for _ in range(repeat):
            t = time.perf_counter()
            size = len(pack())
            times.append(time.perf_counter() - t)
        out[name] = {
            "bytes_per_pmid": round(size / len(pmids), 3),
            "ms": round(median_ms(times), 3),
        }
    return out


def run(n: int, lines: int, repeat: int, targets: list[int]) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        xml = root / "pubmed26n0001.xml"
        write_synthetic_pubmed(xml, n)
        paths = Paths(root / "home")
        t0 = time.perf_counter()
        with Ingestor(paths, jobs=0) as ingestor:
            ingestor.run([xml])
        built = time.perf_counter() - t0
        fill_history(paths, lines)
        rows = []
        recorder = open_history(paths)
        assert recorder is not None
        with open_searcher(paths) as searcher, recorder:
            for word, _ in words_by_frequency(paths, targets):
                query = f"{word}[ti]"
                search_t, record_t, list_t = [], [], []
                for _ in range(repeat):
                    t = time.perf_counter()
                    result = searcher.search(query, mode="lexical", k=10, rerank="none")
                    search_t.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    record_search(paths, searcher, query, result, history=recorder)
                    record_t.append(time.perf_counter() - t)
                    t = time.perf_counter()
                    result_set(searcher, result)
                    list_t.append(time.perf_counter() - t)
                listed = result.total <= SET_LIMIT and result.total > len(result.hits)
                rows.append(
                    {
                        "query": query,
                        "set": result.total,
                        "search_ms": round(median_ms(search_t), 3),
                        "record_ms": round(median_ms(record_t), 3),
                        "listing_alone_ms": round(median_ms(list_t), 3) if listed else 0.0,
                        "ratio_record_to_search": round(
                            median_ms(record_t) / median_ms(search_t), 3
                        ),
                    }
                )
        with open_searcher(paths) as searcher:
            query = str(rows[0]["query"])
            result = searcher.search(query, mode="lexical", k=10, rerank="none")
            closing = []  # a CLI search: open, record, close (the close syncs the file)
            for _ in range(repeat):
                t = time.perf_counter()
                record_search(paths, searcher, query, result)
                closing.append(time.perf_counter() - t)
        spread = np.sort(np.random.default_rng(0).choice(41_000_000, 10_000, replace=False))
        history_bytes = paths.history_db.stat().st_size
        con = sqlite3.connect(paths.history_db)
        biggest = con.execute(
            "SELECT total, length(pmids) FROM searches WHERE pmids IS NOT NULL"
            " AND total IS NOT NULL ORDER BY total DESC LIMIT 1"
        ).fetchone()
        con.close()
    return {
        "articles": n,
        "history_lines_before": lines,
        "build_s": round(built, 1),
        "rows": rows,
        "packed_bytes_per_pmid_synthetic": round(biggest[1] / max(1, biggest[0]), 3)
        if biggest
        else None,
        "packed_bytes_per_pmid_random_10k_of_41m": round(len(pack_pmids(spread)) / 10_000, 3),
        "packing_10k_of_41m": packing(repeat),
        "history_file_mb": round(history_bytes / 1e6, 1),
        "cli_open_record_close_ms": round(median_ms(closing), 3),
    }


def recording() -> None:
    """What recording a search in the history costs, beside the search itself."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=30_000)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sizes", default="5,100,1000,5000,10000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(json.dumps(run(args.n, args.lines, args.repeat, sizes), indent=2))


def queries(terms: int) -> tuple[str, str]:
    """A typed query of ``terms`` words and its translation."""
    words = [f"word{i}" for i in range(terms)]
    groups = [words[i : i + 4] for i in range(0, terms, 4)]
    typed = " AND ".join("(" + " OR ".join(g) + ")" for g in groups) + " AND 2015:2020[dp]"

    def mapped(word: str) -> str:
        return f'("Heading {word}"[MeSH Terms] OR {word})'

    translation = " AND ".join("(" + " OR ".join(map(mapped, g)) + ")" for g in groups)
    return typed, translation + " AND 2015:2020[dp]"


def per_call(fn: Callable[[], object], repeat: int) -> float:
    """Median of five runs of ``repeat`` calls, microseconds a call."""
    runs = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(repeat):
            fn()
        runs.append((time.perf_counter() - t0) / repeat * 1e6)
    return statistics.median(runs)


def translation() -> None:
    """What checking a MeSH translation adds to recording a search in the history."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terms", type=int, nargs="+", default=[4, 16, 64])
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    print(f"{'words':>5} {'chars':>6} {'read typed us':>14} {'reads_back us':>14} {'ratio':>6}")
    for terms in args.terms:
        typed, translation = queries(terms)
        assert reads_back(translation), translation
        reference = per_call(lambda typed=typed: format_query(parse_query(typed)), args.repeat)
        check = per_call(lambda t=translation: reads_back(t), args.repeat)
        print(
            f"{terms:>5} {len(translation):>6} {reference:>14.1f} {check:>14.1f}"
            f" {check / reference:>6.2f}"
        )


if __name__ == "__main__":
    run_mode(
        "benchmarks.history",
        {"recording": recording, "translation": translation},
        default="recording",
    )
