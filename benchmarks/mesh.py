"""MeSH at full size: import, automatic term mapping, and an exploded heading's search.

NLM's files cannot be downloaded here, so this writes a MeSH of the real size in the
real format (``DescriptorRecordSet``, the shape of tests/fixtures/mesh/desc2025.xml):
~31K descriptors in 16 trees, ~300K entry terms, ~15 allowed qualifiers each, and one
heading with ~4,000 descendants (Neoplasms, C04, has ~4,000 in MeSH 2025 counting
every tree position). Measured in one run:

1. ``medsearch mesh import`` of the descriptor file into a fresh store, against the
   reference of lxml iterparse over the same file doing nothing (the parse alone);
2. automatic term mapping (``medsearch.mesh.expand.translate``) of 2-8-word queries,
   half of them holding entry terms, against parsing the same queries;
3. ``root[mh]`` (the ~4,000-descendant heading): resolving its explosion in the store,
   then top-1000 with the count from a lexical index of ``--docs`` synthetic documents
   carrying ~12 headings each (~10% under the big heading, as ~10% of PubMed is under
   Neoplasms), against the unexploded ``root[mh:noexp]`` query on the same index.

    python -m benchmarks.mesh --docs 1000000 --work /tmp/mesh-bench
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
import orjson
from lxml import etree

from benchmarks.synth import pseudo_vocabulary

DESCRIPTORS = 31_000
TERMS_PER_DESCRIPTOR = 9.7  # ~300K entry terms
BIG_DESCENDANTS = 4_000
CATEGORIES = (*(f"{c}01" for c in "ABDEFGHIJKLMNVZ"), "C01")
QUALIFIERS = [(f"Q{i:06d}", f"qualifier {i}", f"Q{i}") for i in range(80)]
HEADINGS_PER_ARTICLE = 12
BIG_SHARE = 0.10


def tree(seed: int) -> list[tuple[str, str, list[str], list[str]]]:
    """(UI, name, tree numbers, entry terms) of a MeSH-sized vocabulary; descriptor 0
    is the big heading (C04) and the next ``BIG_DESCENDANTS`` lie under it."""
    rng = np.random.default_rng(seed)
    words = pseudo_vocabulary(60_000, seed + 7)
    out: list[tuple[str, str, list[str], list[str]]] = []
    numbers: list[str] = []
    used: set[str] = set()

    def name() -> str:
        while True:
            n = int(rng.integers(1, 4))
            text = " ".join(words[int(i)] for i in rng.integers(0, len(words), n)).capitalize()
            if text not in used:
                used.add(text)
                return text

    def child_of(parent: str, counts: dict[str, int]) -> str:
        counts[parent] = counts.get(parent, 0) + 1
        return f"{parent}.{counts[parent]:03d}"

    counts: dict[str, int] = {}
    roots = [c for c in CATEGORIES if c != "C04"]
    first_other = BIG_DESCENDANTS + 1 + len(roots)
    for i in range(DESCRIPTORS):
        if i == 0:
            trees = ["C04"]
        elif i <= BIG_DESCENDANTS:  # under C04, a few levels deep
            parent = "C04" if i <= 40 else numbers[int(rng.integers(1, i))]
            trees = [child_of(parent, counts)]
        elif i < first_other:
            trees = [roots[i - BIG_DESCENDANTS - 1]]
        else:
            parent = numbers[int(rng.integers(BIG_DESCENDANTS + 1, i))]
            trees = [child_of(parent, counts)]
            if rng.random() < 0.6:  # real descriptors have ~1.9 tree numbers
                other = numbers[int(rng.integers(BIG_DESCENDANTS + 1, i))]
                trees.append(child_of(other, counts))
        numbers.append(trees[0])
        heading = name()
        extra = int(rng.poisson(TERMS_PER_DESCRIPTOR - 1))
        out.append(
            (f"D{100_000 + i:06d}", heading, trees, [heading] + [name() for _ in range(extra)])
        )
    return out


def write_descriptors(path: Path, vocabulary: list[tuple[str, str, list[str], list[str]]]) -> None:
    """The descriptor file, written record by record in NLM's format."""
    with path.open("w", encoding="utf-8") as out:
        out.write('<?xml version="1.0"?>\n<!DOCTYPE DescriptorRecordSet SYSTEM ')
        out.write('"https://www.nlm.nih.gov/databases/dtd/nlmdescriptorrecordset_20250101.dtd">\n')
        out.write('<DescriptorRecordSet LanguageCode = "eng">\n')
        for n, (ui, name, trees, terms) in enumerate(vocabulary):
            out.write(_record(n, ui, name, trees, terms))
        out.write("</DescriptorRecordSet>\n")


def _record(n: int, ui: str, name: str, trees: list[str], terms: list[str]) -> str:
    date = "  <Year>2000</Year>\n  <Month>01</Month>\n  <Day>01</Day>\n"
    parts = [
        f'<DescriptorRecord DescriptorClass = "1">\n <DescriptorUI>{ui}</DescriptorUI>\n',
        f" <DescriptorName>\n  <String>{escape(name)}</String>\n </DescriptorName>\n",
        f" <DateCreated>\n{date} </DateCreated>\n <AllowableQualifiersList>\n",
    ]
    for q_ui, q_name, abbreviation in QUALIFIERS[n % 60 : n % 60 + 15]:
        parts.append(
            f"  <AllowableQualifier>\n   <QualifierReferredTo>\n    <QualifierUI>{q_ui}"
            f"</QualifierUI>\n    <QualifierName>\n     <String>{q_name}</String>\n"
            "    </QualifierName>\n   </QualifierReferredTo>\n"
            f"   <Abbreviation>{abbreviation}</Abbreviation>\n  </AllowableQualifier>\n"
        )
    parts.append(" </AllowableQualifiersList>\n <TreeNumberList>\n")
    parts.extend(f"  <TreeNumber>{t}</TreeNumber>\n" for t in trees)
    parts.append(' </TreeNumberList>\n <ConceptList>\n  <Concept PreferredConceptYN="Y">\n')
    parts.append(f"   <ConceptUI>M{n:07d}</ConceptUI>\n   <ConceptName>\n")
    parts.append(f"    <String>{escape(name)}</String>\n   </ConceptName>\n")
    parts.append(f"   <ScopeNote>A synthetic scope note of {escape(name)}, about as long as the")
    parts.append(
        " real ones, which run to two or three sentences of definition.\n   </ScopeNote>\n"
    )
    parts.append("   <TermList>\n")
    for i, term in enumerate(terms):
        preferred = "Y" if i == 0 else "N"
        parts.append(
            f'    <Term ConceptPreferredTermYN="{preferred}" IsPermutedTermYN="N"'
            f' LexicalTag="NON" RecordPreferredTermYN="{preferred}">\n'
            f"     <TermUI>T{n:07d}{i:02d}</TermUI>\n     <String>{escape(term)}</String>\n"
            f"     <DateCreated>\n {date}     </DateCreated>\n"
            "     <ThesaurusIDlist>\n      <ThesaurusID>NLM (2000)</ThesaurusID>\n"
            "     </ThesaurusIDlist>\n    </Term>\n"
        )
    parts.append("   </TermList>\n  </Concept>\n </ConceptList>\n</DescriptorRecord>\n")
    return "".join(parts)


def ms_stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 3),
    }


class Timer:
    """Wall and CPU seconds (this thread's) of each timed call: on a machine whose cores
    are shared, the CPU time is what the call costs, the wall time what it waited too."""

    def __init__(self) -> None:
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def __enter__(self) -> Timer:
        self._wall, self._cpu = time.perf_counter(), time.thread_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall.append(time.perf_counter() - self._wall)
        self.cpu.append(time.thread_time() - self._cpu)

    def stats(self) -> dict[str, dict[str, float]]:
        return {"wall": ms_stats(self.wall), "cpu": ms_stats(self.cpu)}


def bench_import(work: Path, desc: Path) -> dict[str, float]:
    from medsearch.commands.mesh import import_files
    from medsearch.paths import Paths

    started, cpu = time.perf_counter(), time.process_time()
    for _event, elem in etree.iterparse(str(desc), tag="DescriptorRecord", load_dtd=False):
        elem.clear()
    parse_only = time.perf_counter() - started
    parse_cpu = time.process_time() - cpu
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    cpu = time.process_time()
    counts = import_files(Paths(home), [desc])
    import_cpu = time.process_time() - cpu
    store_mb = (home / "store.sqlite").stat().st_size / 1e6
    return {
        "file_mb": round(desc.stat().st_size / 1e6, 1),
        "descriptors": counts["descriptors"],
        "entry_terms": counts["terms"],
        "import_s": counts["seconds"],
        "import_cpu_s": round(import_cpu, 1),
        "iterparse_alone_s": round(parse_only, 2),
        "iterparse_alone_cpu_s": round(parse_cpu, 1),
        "ratio_to_iterparse": round(counts["seconds"] / parse_only, 2),
        "store_mb": round(store_mb, 1),
    }


def queries(
    vocabulary: list[tuple[str, str, list[str], list[str]]], n: int, seed: int
) -> list[str]:
    """2-8-word queries; half hold an entry term among other words."""
    rng = np.random.default_rng(seed)
    words = pseudo_vocabulary(60_000, seed + 7)
    out = []
    for i in range(n):
        plain = [words[int(j)] for j in rng.integers(0, len(words), int(rng.integers(2, 7)))]
        if i % 2 == 0:
            terms = vocabulary[int(rng.integers(len(vocabulary)))][3]
            plain.insert(int(rng.integers(len(plain) + 1)), terms[int(rng.integers(len(terms)))])
        out.append(" AND ".join(plain) if i % 4 == 0 else " ".join(plain))
    return out


def bench_mapping(work: Path, texts: list[str]) -> dict[str, object]:
    from medsearch.mesh.expand import MeshLookup, translate
    from medsearch.query.parser import parse_query
    from medsearch.store import Store

    with Store(work / "home" / "store.sqlite", readonly=True) as store:
        mesh = MeshLookup.open(store.conn)
        assert mesh is not None
        parse, mapping = Timer(), Timer()
        mapped = 0
        for text in texts:
            with parse:
                parsed = parse_query(text)
            fresh = MeshLookup(mesh.conn, mesh.year)  # no answers kept between queries
            with mapping:
                done = translate(parsed, fresh)
            mapped += done.mapped
    out: dict[str, object] = {
        "queries": len(texts),
        "mapped": mapped,
        "translate": mapping.stats(),
        "parse": parse.stats(),
    }
    out["ratio_cpu_p95_to_parse"] = round(
        mapping.stats()["cpu"]["p95_ms"] / max(parse.stats()["cpu"]["p95_ms"], 1e-3), 1
    )
    return out


def heading_documents(
    docs: int, vocabulary: list[tuple[str, str, list[str], list[str]]], seed: int
) -> Iterator[tuple[int, str]]:
    """Documents of the lexical index's own schema holding only what an ``[mh]`` query
    reads (``mesh_heading``, ``mesh_major_heading`` keys; the text fields add nothing to
    its cost), ~12 headings each drawn Zipf-like, ~10% with one under the big heading.
    Drawn in bulk: 10M of them take minutes here, where whole articles took hours."""
    from medsearch.field_keys import name_key
    from medsearch.index.lexical import schema as ls

    rng = np.random.default_rng(seed)
    keys = [name_key(v[1]) for v in vocabulary]
    rest = np.arange(BIG_DESCENDANTS + 1, len(keys))
    weights = 1.0 / np.arange(1, len(rest) + 1) ** 0.9
    cdf = np.cumsum(weights / weights.sum())
    batch = 100_000
    for start in range(0, docs, batch):
        size = min(batch, docs - start)
        picks = rest[
            np.minimum(
                np.searchsorted(cdf, rng.random((size, HEADINGS_PER_ARTICLE))), len(rest) - 1
            )
        ]
        big = rng.random(size) < BIG_SHARE
        picks[big, 0] = rng.integers(1, BIG_DESCENDANTS + 1, int(big.sum()))
        for i, row in enumerate(picks.tolist()):
            pmid = start + i + 1
            chosen = sorted({keys[j] for j in row})
            yield (
                pmid,
                orjson.dumps(
                    {
                        ls.PMID: [pmid],
                        ls.MESH_HEADING: chosen,
                        ls.MESH_MAJOR_HEADING: [keys[row[0]]],
                    }
                ).decode(),
            )


def build_index(
    path: Path, docs: int, vocabulary: list[tuple[str, str, list[str], list[str]]], seed: int
) -> float:
    from medsearch.index.lexical.index import LexicalIndex

    started = time.perf_counter()
    index = LexicalIndex.open(path)
    batch: list[tuple[int, str]] = []
    for n, doc in enumerate(heading_documents(docs, vocabulary, seed), 1):
        batch.append(doc)
        if len(batch) == 50_000:
            index.add_documents(batch)
            batch = []
        if n % 1_000_000 == 0:
            index.commit(f"{n}")
            print(f"  indexed {n:,}", file=sys.stderr, flush=True)
    if batch:
        index.add_documents(batch)
    index.commit("done")
    index.close()
    return time.perf_counter() - started


def bench_explosion(
    work: Path,
    docs: int,
    vocabulary: list[tuple[str, str, list[str], list[str]]],
    seed: int,
    repeat: int,
) -> dict[str, object]:
    from medsearch.index.lexical.index import LexicalIndex
    from medsearch.mesh.expand import MeshLookup, translate
    from medsearch.query.parser import parse_query
    from medsearch.store import Store

    path = work / f"lexical-{docs}"
    built = None
    if not path.exists():
        built = build_index(path, docs, vocabulary, seed)
    root = vocabulary[0][1]
    index = LexicalIndex.open(path)
    with Store(work / "home" / "store.sqlite", readonly=True) as store:
        mesh = MeshLookup.open(store.conn)
        assert mesh is not None
        resolve, exploded, alone = Timer(), Timer(), Timer()
        total = 0
        for _ in range(repeat):
            fresh = MeshLookup(mesh.conn, mesh.year)
            with resolve:
                plan = translate(parse_query(f'"{root}"[mh]'), fresh).parsed
            with exploded:
                ranked = index.rank(plan, k=1000)
            total = ranked.total
            noexp = translate(parse_query(f'"{root}"[mh:noexp]'), fresh).parsed
            with alone:
                index.rank(noexp, k=1000)
    keys = plan.node.keys if plan.node is not None and hasattr(plan.node, "keys") else ()
    index.close()
    out: dict[str, object] = {
        "docs": docs,
        "descendant_keys": len(keys),
        "matches": total,
        "resolve": resolve.stats(),
        "top1000_exploded": exploded.stats(),
        "top1000_noexp": alone.stats(),
        "ratio_cpu_p95_exploded_to_noexp": round(
            exploded.stats()["cpu"]["p95_ms"] / max(alone.stats()["cpu"]["p95_ms"], 1e-3), 1
        ),
    }
    if built is not None:
        out["index_build_s"] = round(built, 1)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/mesh-bench"))
    parser.add_argument("--docs", type=int, nargs="*", default=[200_000])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    vocabulary = tree(args.seed)
    desc = args.work / "desc2025.xml"
    if not desc.exists():
        write_descriptors(desc, vocabulary)
    report: dict[str, object] = {"import": bench_import(args.work, desc)}
    print(json.dumps(report["import"]), file=sys.stderr, flush=True)
    report["mapping"] = bench_mapping(args.work, queries(vocabulary, args.queries, args.seed))
    print(json.dumps(report["mapping"]), file=sys.stderr, flush=True)
    report["explosion"] = [
        bench_explosion(args.work, docs, vocabulary, args.seed, args.repeat) for docs in args.docs
    ]
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
