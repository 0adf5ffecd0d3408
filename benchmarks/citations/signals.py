"""Do citation signals (co-citation and bibliographic coupling) help ``similar`` and
``cite``? Held-out measurements on whatever a data home holds (docs/citations.md).

Every trial hides one edge ``c -> r`` (``c`` cites ``r``) and asks whether the graph,
read without that edge, raises ``r``:

- ``graph``: for every citing article with at least two references, each reference in
  turn: ``r`` ranked by the neighbourhood of ``c``'s other references
  (:func:`~medsearch.retrieval.citation_signals.neighbourhood_of_set`), against the
  same candidates ranked by how often they are cited (a popularity prior). A trial is
  *reachable* when some other article cites ``r``: co-citation cannot find a reference
  nobody else cites.
- ``similar``: pairs ``s, r`` of stored references of ``c`` (both with vectors): where
  ``r`` ranks in ``similar s`` by vectors alone, and fused with ``s``'s neighbourhood
  (``--by text+citations``). Needs a home with vectors.
- ``cite``: PMC citances (JATS ``<xref ref-type="bibr">`` sentences with the ref-list's
  PMIDs, ``../shared/data/jats``) whose citing article and cited reference are stored:
  where ``r`` ranks among the citance's 50 hybrid candidates, alone and fused with the
  neighbourhood of the citing article's other references (``cite --cited``).

Without ``--home`` a lexical-only home is built from ``../shared/data/pubmed``.
``--synthetic N`` checks the harness alone on a graph with planted topics.

    python -m benchmarks.citations signals            # the shared data
    python -m benchmarks.citations signals --home ~/.medsearch --max-trials 2000
    python -m benchmarks.citations signals --synthetic 5000 --max-trials 500
"""

from __future__ import annotations

import argparse
import random
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from medsearch.index.citations import CitationGraph
    from medsearch.retrieval.searcher import Searcher

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
DEPTH = 50


@dataclass
class Ranks:
    """Where the held-out reference ranked in each trial (None: not in the list)."""

    name: str
    ranks: list[int | None] = field(default_factory=list)

    def line(self) -> str:
        n = len(self.ranks)
        if not n:
            return f"  {self.name}: no trials"
        hit10 = sum(1 for r in self.ranks if r is not None and r <= 10) / n
        mrr = sum(1.0 / r for r in self.ranks if r is not None) / n
        return f"  {self.name}: {n} trials, hit@10 {hit10:.3f}, MRR {mrr:.3f}"


def rank_of(order: Sequence[int], pmid: int) -> int | None:
    for i, p in enumerate(order, 1):
        if p == pmid:
            return i
    return None


def graph_trials(graph: CitationGraph, max_trials: int, rng: random.Random) -> None:
    from medsearch.retrieval.citation_signals import neighbourhood_of_set, ranked

    trials: list[tuple[int, int]] = []
    for c in sorted(_built(graph)):
        refs = _refs(graph, c)
        if len(refs) >= 2:
            trials.extend((c, r) for r in refs)
    rng.shuffle(trials)
    trials = trials[:max_trials]
    signal, popular = Ranks("neighbourhood"), Ranks("popularity prior")
    reachable = 0
    for c, r in trials:
        others = [x for x in _refs(graph, c) if x != r]
        reachable += any(x != c for x in graph.cited_by(r).tolist())
        scores = neighbourhood_of_set(graph, others, hidden={c: r})
        signal.ranks.append(rank_of(ranked(scores), r))
        counts = dict(zip(scores, graph.counts(list(scores)).tolist(), strict=True))
        popular.ranks.append(rank_of(sorted(scores, key=lambda p: (-counts[p], p)), r))
    print(f"graph: {len(trials)} held-out edges, {reachable} reachable (r cited by another)")
    print(signal.line())
    print(popular.line())


def _built(graph: CitationGraph) -> set[int]:
    rows = graph.conn.execute("SELECT pmid FROM article_refs")
    return {int(p) for (p,) in rows}


def _refs(graph: CitationGraph, pmid: int) -> list[int]:
    return [int(x) for x in graph.references(pmid)[0].tolist()]


def similar_trials(
    searcher: Searcher, graph: CitationGraph, max_trials: int, rng: random.Random
) -> None:
    from medsearch.retrieval.citation_signals import fuse, neighbourhood
    from medsearch.retrieval.neighbours import similar

    if not searcher.has_vectors:
        print("similar: no vectors in this home: not measured")
        return
    vectors = searcher.dense_side("benchmark").articles
    pairs: list[tuple[int, int, int]] = []
    for c in sorted(_built(graph)):
        refs = [r for r in _refs(graph, c)]
        held = [r for r, ok in zip(refs, vectors.contains(refs), strict=True) if ok]
        pairs.extend((c, s, r) for s in held for r in held if s != r)
    rng.shuffle(pairs)
    pairs = pairs[:max_trials]
    alone, fused = Ranks("vectors alone"), Ranks("vectors + citations")
    for c, s, r in pairs:
        text = [h.pmid for h in similar(searcher, s, k=DEPTH).hits]
        alone.ranks.append(rank_of(text, r))
        signal = neighbourhood(graph, s, hidden={c: r})
        fused.ranks.append(rank_of([p for p, _ in fuse(text, signal, within=False)], r))
    print(f"similar: {len(pairs)} pairs of co-cited stored references with vectors")
    print(alone.line())
    print(fused.line())


@dataclass(frozen=True)
class JatsCitance:
    citing: int
    text: str
    cited: int


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[])")


def jats_citances(folder: Path) -> Iterator[JatsCitance]:
    """Each bibr xref's sentence (markers removed) with the PMID its ref-list entry
    gives and the citing article's PMID."""
    from lxml import etree

    from medsearch.retrieval.citances import split_citances

    for path in sorted([*folder.rglob("*.xml"), *folder.rglob("*.nxml")]):
        try:
            root = etree.parse(str(path)).getroot()
        except etree.XMLSyntaxError:
            continue
        citing = _pmid(root.xpath("//article-meta/article-id[@pub-id-type='pmid']/text()"))
        refs = {
            ref.get("id"): _pmid(ref.xpath(".//pub-id[@pub-id-type='pmid']/text()"))
            for ref in root.iter("ref")
        }
        if not citing:
            continue
        for para in root.iter("p"):
            text, xrefs = _render(para)
            bounds = [0, *(m.end() for m in SENTENCE_END.finditer(text)), len(text) + 1]
            for start, rid in xrefs:
                cited = refs.get(rid, 0)
                if not cited:
                    continue
                i = next(j for j in range(len(bounds) - 1) if start < bounds[j + 1])
                found = split_citances(text[bounds[i] : bounds[i + 1]])
                if found and found[0].text.strip():
                    yield JatsCitance(citing, found[0].text, cited)


def _render(para: Any) -> tuple[str, list[tuple[int, str]]]:
    """The paragraph's text and the offset of each bibr xref (rids split on spaces)."""
    parts: list[str] = []
    xrefs: list[tuple[int, str]] = []
    size = 0

    def walk(elem: Any) -> None:
        nonlocal size
        if elem.text:
            parts.append(elem.text)
            size += len(elem.text)
        for child in elem:
            if child.tag == "xref" and child.get("ref-type") == "bibr":
                xrefs.extend((size, rid) for rid in (child.get("rid") or "").split())
            walk(child)
            if child.tail:
                parts.append(child.tail)
                size += len(child.tail)

    walk(para)
    return "".join(parts), xrefs


def _pmid(values: Any) -> int:
    return int(values[0]) if values and str(values[0]).strip().isdigit() else 0


def cite_trials(searcher: Searcher, graph: CitationGraph, max_trials: int) -> None:
    from medsearch.retrieval.citation_signals import fuse, neighbourhood_of_set

    citances = list(jats_citances(SHARED / "jats"))
    stored = searcher.store.get_many(
        sorted({c.citing for c in citances} | {c.cited for c in citances})
    )
    usable = [c for c in citances if c.citing in stored and c.cited in stored][:max_trials]
    print(
        f"cite: {len(citances)} (sentence, cited PMID) pairs in {SHARED / 'jats'};"
        f" {sum(c.citing in stored for c in citances)} with the citing article stored,"
        f" {len(usable)} with the cited one stored too"
    )
    alone, fused = Ranks("text alone"), Ranks("text + citations")
    for c in usable:
        order = [h.pmid for h in searcher.search(c.text, k=DEPTH, syntax=False, rerank="none").hits]
        alone.ranks.append(rank_of(order, c.cited))
        others = [x for x in _refs(graph, c.citing) if x != c.cited]
        signal = neighbourhood_of_set(graph, others, hidden={c.citing: c.cited})
        fused.ranks.append(rank_of([p for p, _ in fuse(order, signal, within=True)], c.cited))
    print(alone.line())
    print(fused.line())


def build_home(folder: Path) -> Path:
    from click.testing import CliRunner

    from medsearch.cli import main

    files = sorted(str(p) for p in (SHARED / "pubmed").rglob("*.xml*"))
    home = folder / "home"
    out = CliRunner().invoke(
        main, ["--home", str(home), "ingest", *files, "--no-encode", "--jobs", "0"]
    )
    if out.exit_code != 0:
        sys.exit(out.output)
    return home


def synthetic_graph(folder: Path, citing: int, seed: int) -> CitationGraph:
    """A graph with planted topics, only to check the harness: 50 topics of 200 cited
    articles; each citing article takes 20 references from its topic and 5 from
    anywhere. Real reference lists are not this tidy; its figures are no evidence."""
    import numpy as np

    from medsearch.index.citations import CitationGraph
    from medsearch.index.citations_build import build
    from medsearch.store.db import Store
    from medsearch.store.refs import add_collection

    rng = np.random.default_rng(seed)
    store = Store(folder / "synthetic.sqlite")
    pairs: list[tuple[int, int]] = []
    for c in range(1, citing + 1):
        topic = int(rng.integers(50))
        own = rng.choice(200, 20, replace=False) + 1_000_000 + topic * 200
        anywhere = rng.choice(10_000, 5, replace=False) + 1_000_000
        pairs.extend((c, int(r)) for r in np.union1d(own, anywhere))
    edges = np.array(pairs, dtype=np.uint32)
    with store.transaction():
        add_collection(store.conn, edges[:, 0], edges[:, 1])
    build(folder / "synthetic", store.conn)
    return CitationGraph.open(folder / "synthetic", store.conn)


def run(home: Path, max_trials: int, seed: int) -> None:
    from medsearch.paths import Paths
    from medsearch.retrieval.citations import open_graph
    from medsearch.retrieval.searcher import open_searcher

    paths = Paths(home)
    rng = random.Random(seed)
    with open_searcher(paths) as searcher:
        graph = open_graph(paths.citations, searcher.store)
        graph_trials(graph, max_trials, rng)
        similar_trials(searcher, graph, max_trials, rng)
        cite_trials(searcher, graph, max_trials)


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--max-trials", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--synthetic",
        type=int,
        default=0,
        help="Only check the harness on a planted-topic graph of this many citing articles.",
    )
    args = ap.parse_args()
    if args.synthetic:
        with TemporaryDirectory() as tmp:
            graph = synthetic_graph(Path(tmp), args.synthetic, args.seed)
            graph_trials(graph, args.max_trials, random.Random(args.seed))
            graph.conn.close()
        return
    if args.home is not None:
        run(args.home, args.max_trials, args.seed)
        return
    with TemporaryDirectory() as tmp:
        run(build_home(Path(tmp)), args.max_trials, args.seed)


if __name__ == "__main__":
    main()
