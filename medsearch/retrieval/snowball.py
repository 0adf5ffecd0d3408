"""Citation chasing from a seed set (backward: references; forward: citing articles),
counted the way a PRISMA flow diagram reports it, candidates ranked by their text's
closeness to the seeds.

Counts: ``found`` is every record the lists identified, repeats included; ``duplicates``
are those found more than once or that are seeds themselves; ``excluded`` are distinct
candidates already screened (``--exclude``); ``new`` is what is left to screen. So
``found = duplicates + excluded + new``.

Ranking: by the hybrid searcher's two sides restricted to the candidates
(:mod:`medsearch.retrieval.seed_similarity`): BM25 of the seeds' titles and headings
among the candidates, fused with the candidates' closeness to the seeds' mean article
vector when the home has vectors (lexical alone otherwise). Without a searcher (a bare
store), TF-IDF cosine over title, abstract and MeSH headings, with the IDF taken over
seeds and candidates. Candidates outside the store (no text) come last, ordered by how
many seeds they link to.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medsearch.errors import UsageError
from medsearch.index.citations import CitationGraph
from medsearch.records import Article, pmid_from
from medsearch.retrieval.citations import _hit, citation_texts
from medsearch.retrieval.results import SearchResult

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher
    from medsearch.store import Store

WORD = re.compile(r"[a-z0-9][a-z0-9\-]+")
STOP = frozenset(
    [
        "the",
        "and",
        "for",
        "with",
        "from",
        "that",
        "this",
        "were",
        "was",
        "are",
        "have",
        "has",
        "been",
        "into",
        "than",
        "which",
        "their",
        "these",
        "those",
        "between",
        "after",
        "before",
        "during",
        "within",
        "among",
        "about",
        "also",
        "not",
        "but",
        "our",
        "its",
    ]
)


@dataclass(frozen=True, slots=True)
class SnowballCounts:
    seeds: int
    found: int
    duplicates: int
    excluded: int
    new: int

    def to_dict(self) -> dict[str, int]:
        return {
            "seeds": self.seeds,
            "found": self.found,
            "duplicates": self.duplicates,
            "excluded": self.excluded,
            "new": self.new,
        }


@dataclass(frozen=True, slots=True)
class Snowball:
    counts: SnowballCounts
    result: SearchResult

    def to_dict(self) -> dict[str, Any]:
        return {"counts": self.counts.to_dict(), **self.result.to_dict()}


def neighbours(graph: CitationGraph, pmid: int, backward: bool, forward: bool) -> list[int]:
    out: list[int] = []
    if backward:
        out.extend(int(p) for p in graph.references(pmid)[0])
    if forward:
        out.extend(int(p) for p in graph.cited_by(pmid))
    return out


def snowball(
    store: Store,
    graph: CitationGraph,
    seeds: Sequence[int],
    *,
    backward: bool = True,
    forward: bool = True,
    depth: int = 1,
    exclude: Iterable[int] = (),
    searcher: Searcher | None = None,
) -> Snowball:
    if depth not in (1, 2):
        raise UsageError("--depth is 1 or 2")
    seed_set = set(seeds)
    found, candidates, links = _collect(graph, seeds, backward, forward, depth)
    excluded = candidates & set(exclude)
    new = sorted(candidates - excluded)
    counts = SnowballCounts(
        seeds=len(seed_set),
        found=found,
        duplicates=found - len(candidates),
        excluded=len(excluded),
        new=len(new),
    )
    articles = store.get_many(new)
    seed_articles = store.get_many(sorted(seed_set))
    notes: tuple[str, ...] = ()
    if searcher is not None:
        from medsearch.retrieval.seed_similarity import rank_by_seeds

        ranking = rank_by_seeds(searcher, seed_articles, sorted(articles))
        score, notes = ranking.scores, ranking.notes
    else:
        score = text_similarity(seed_articles.values(), articles)
    cited = dict(zip(new, graph.counts(new).tolist(), strict=True)) if new else {}
    ordered = sorted(new, key=lambda p: (p not in articles, -score.get(p, 0.0), -links[p], p))
    texts = citation_texts(
        store, graph, [p for p in ordered if p not in articles], tuple(seed_articles.values())
    )
    hits = tuple(
        _hit(
            i,
            p,
            round(score.get(p, 0.0), 6),
            articles.get(p),
            citation=texts.get(p),
            seed_links=links[p],
            cited_by=cited[p],
        )
        for i, p in enumerate(ordered, 1)
    )
    result = SearchResult(
        hits=hits,
        mode="snowball",
        total=len(hits),
        details=(
            ("seeds", sorted(seed_set)),
            ("direction", _direction(backward, forward)),
            ("depth", depth),
        ),
        notes=notes,
    )
    return Snowball(counts, result)


def _collect(
    graph: CitationGraph, seeds: Sequence[int], backward: bool, forward: bool, depth: int
) -> tuple[int, set[int], Counter[int]]:
    """(records found, repeats included; the distinct candidates; how many seeds each
    candidate is linked to). Depth 2 follows the same directions from depth 1's
    candidates."""
    seed_set = set(seeds)
    found = 0
    seen: set[int] = set()
    links: Counter[int] = Counter()
    frontier = list(dict.fromkeys(seeds))
    for level in range(depth):
        reached: set[int] = set()
        for pmid in frontier:
            near = neighbours(graph, pmid, backward, forward)
            found += len(near)
            reached.update(near)
            if level == 0:
                links.update(set(near))
        frontier = sorted(reached - seen - seed_set)
        seen |= reached
    return found, seen - seed_set, links


def _direction(backward: bool, forward: bool) -> str:
    return "both" if backward and forward else "backward" if backward else "forward"


def _terms(article: Article) -> Counter[str]:
    text = " ".join(
        [article.title, article.abstract_text, *(m.descriptor for m in article.mesh)]
    ).lower()
    return Counter(w for w in WORD.findall(text) if w not in STOP and not w.isdigit())


def text_similarity(seeds: Iterable[Article], candidates: dict[int, Article]) -> dict[int, float]:
    """Cosine of TF-IDF vectors: each candidate against the seeds' pooled terms."""
    bags = {p: _terms(a) for p, a in candidates.items()}
    seed_bag: Counter[str] = Counter()
    seed_list = list(seeds)
    for article in seed_list:
        seed_bag.update(_terms(article))
    documents = len(bags) + len(seed_list)
    df: Counter[str] = Counter()
    for bag in bags.values():
        df.update(bag.keys())
    for article in seed_list:
        df.update(_terms(article).keys())

    def weights(bag: Counter[str]) -> dict[str, float]:
        return {
            w: (1 + math.log(n)) * math.log(1 + documents / (1 + df[w])) for w, n in bag.items()
        }

    query = weights(seed_bag)
    query_norm = math.sqrt(sum(v * v for v in query.values())) or 1.0
    out: dict[int, float] = {}
    for pmid, bag in bags.items():
        vec = weights(bag)
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        out[pmid] = sum(v * query.get(w, 0.0) for w, v in vec.items()) / (norm * query_norm)
    return out


PMID_FIELD = re.compile(
    r"(?im)^\s*(?:pmid\s*=\s*[{\"]?\s*(\d+)|AN\s+-\s+(\d+)|PMID\s*[-:]\s*(\d+))"
)
DOI_FIELD = re.compile(r"(?im)^\s*(?:doi\s*=\s*[{\"]\s*([^}\"]+)|DO\s+-\s+(\S+))")


def read_exclusions(path: Path, store: Store) -> set[int]:
    """PMIDs already screened: a list of PMIDs (one a line, or separated by commas or
    spaces), or a BibTeX / RIS / MEDLINE file whose records name a PMID or a DOI of a
    stored article."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if path.suffix.lower() in (".bib", ".ris", ".nbib", ".txt") and (
        "@" in text or re.search(r"(?m)^[A-Z][A-Z0-9]\s{1,2}-", text)
    ):
        pmids = {_pmid(path, next(g for g in m.groups() if g)) for m in PMID_FIELD.finditer(text)}
        dois = {next(g for g in m.groups() if g).strip().lower() for m in DOI_FIELD.finditer(text)}
        return pmids | _by_doi(store, dois)
    out: set[int] = set()
    for token in re.split(r"[\s,;]+", text):
        if token:
            out.add(_pmid(path, token))
    return out


def _pmid(path: Path, token: str) -> int:
    """``token`` read by the one PMID rule (a 5,000-digit value is refused in one line,
    not handed to ``int``)."""
    pmid = pmid_from(token)
    if pmid is None:
        shown = token[:30] + ("..." if len(token) > 30 else "")
        raise UsageError(f"{path}: {shown!r} is not a PMID")
    return pmid


def _by_doi(store: Store, dois: set[str]) -> set[int]:
    """Stored articles with these DOIs (the ``articles`` table's ``doi`` column)."""
    found: set[int] = set()
    wanted = sorted(dois)
    for i in range(0, len(wanted), 500):
        chunk = wanted[i : i + 500]
        marks = ",".join("?" * len(chunk))
        rows = store.conn.execute(
            f"SELECT pmid FROM articles WHERE lower(doi) IN ({marks})", tuple(chunk)
        )
        found.update(r[0] for r in rows)
    return found
