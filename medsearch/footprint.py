"""How much disk a data home takes per article, and what all of PubMed would need.

A user about to ingest 40.9M citations needs to know whether the disk can hold them,
and the best evidence is their own corpus: its parts divided by what they hold. Each
part scales with what it stores: the store, the lexical index and the article vectors
with citations, the sentence vectors with abstract sentences; models, settings and
evaluation caches do not scale at all.

Articles without an abstract are smaller (a title, authors, MeSH terms), and PubMed has
more of them (28% of 2026's 40.9M citations) than most test corpora (SciFact: none).
A part measured on an all-abstract corpus would overstate PubMed, so article-scaled
parts carry ``without_abstract``: how large a citation without an abstract is relative to
one with. :func:`project` weighs the corpus's and the target's mix with it.

Everything here is plain arithmetic on numbers passed in: :mod:`medsearch.status`
measures the home, ``ingest --download`` plans a download, and
``benchmarks/footprint.py`` reports, all with the same functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Unit = Literal["article", "sentence", "fixed"]


@dataclass(frozen=True)
class Scale:
    """A corpus's size in the units the parts scale with."""

    citations: int
    with_abstract: int
    sentences: int


PUBMED = Scale(citations=40_900_000, with_abstract=29_300_000, sentences=350_000_000)
"""PubMed 2026 (DESIGN.md): 40.9M citations, 29.3M with an abstract; ~350M abstract
sentences is the issue's planning figure (8.6 per abstract measured on 60K real ones
gives ~250M; the larger number keeps the estimate on the safe side)."""

PUBMED_BASELINE_GZ_BYTES = 51_800_000_000
"""The 2026 baseline as downloaded: 1,334 gzipped files."""

REPRESENTATIVE_CITATIONS = 10_000
"""Citations a data home needs before its store and lexical index weigh per citation what
they will at PubMed's size. Below it the store has no compression dictionary yet (it trains
one at 5,000 records) or still holds the pages its first records were rewritten from, and
fixed overheads weigh: SciFact text cycled to N articles, lexical only, projects the store
at 55.9 / 53.4 / 40.5 / 33.3 GB and the lexical index at 23.1 / 19.2 / 17.7 / 16.0 GB for
1K / 4.9K / 10K / 40K articles (936 real citations: store 2.6 KB each, ~0.9 KB at scale).
Vector parts are projected in their PubMed-scale layout and hold at any size."""

GZ_BYTES_PER_CITATION = PUBMED_BASELINE_GZ_BYTES / PUBMED.citations
"""~1,270 bytes of gzipped XML per citation: how ``ingest --download`` turns a listing's
file sizes into a number of articles before it has parsed any."""


@dataclass(frozen=True)
class Part:
    """One part of a data home as measured: its bytes and what it scales with."""

    name: str
    bytes: int
    unit: Unit
    without_abstract: float = 1.0
    """Bytes of a citation without an abstract relative to one with (article units)."""
    at_scale: float | None = None
    """Bytes per unit in the layout the part will have at the target, when its layout
    now differs (a small vector collection is exact; PubMed's is compressed)."""
    fixed_at_scale: int = 0
    """Bytes the part holds at the target whatever its size (a training sample)."""


@dataclass(frozen=True)
class Projection:
    """A part's measured size, its bytes per article/sentence and its size at a target."""

    name: str
    bytes: int
    unit: Unit
    per_article: float | None
    per_sentence: float | None
    projected: int | None
    """None when the part has bytes but the corpus none of its unit (nothing to scale
    from); an empty part stays empty (a home built without vectors projects none)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "part": self.name,
            "bytes": self.bytes,
            "scales_with": self.unit,
            "bytes_per_article": _round(self.per_article),
            "bytes_per_sentence": _round(self.per_sentence),
            "projected_bytes": self.projected,
        }


def weighted_articles(scale: Scale, without_abstract: float) -> float:
    """Citations counted in units of "one citation with an abstract"."""
    without = max(0, scale.citations - scale.with_abstract)
    return min(scale.with_abstract, scale.citations) + without_abstract * without


def project(parts: Sequence[Part], corpus: Scale, target: Scale = PUBMED) -> list[Projection]:
    """Each part's size at ``target``, scaled by the corpus's own bytes per unit."""
    out: list[Projection] = []
    for part in parts:
        per_article = part.bytes / corpus.citations if corpus.citations else None
        per_sentence = part.bytes / corpus.sentences if corpus.sentences else None
        projected: int | None
        if part.unit == "fixed" or not part.bytes:
            projected = part.bytes
        elif part.at_scale is not None:
            units = (
                target.sentences
                if part.unit == "sentence"
                else weighted_articles(target, part.without_abstract)
            )
            projected = round(part.at_scale * units) + part.fixed_at_scale
        elif part.unit == "sentence":
            projected = (
                round(part.bytes / corpus.sentences * target.sentences)
                if corpus.sentences
                else None
            )
        else:
            have = weighted_articles(corpus, part.without_abstract)
            want = weighted_articles(target, part.without_abstract)
            projected = round(part.bytes / have * want) if have else None
        out.append(
            Projection(
                name=part.name,
                bytes=part.bytes,
                unit=part.unit,
                per_article=per_article,
                per_sentence=per_sentence if part.unit == "sentence" else None,
                projected=projected,
            )
        )
    return out


def total(projections: Sequence[Projection]) -> tuple[int, int | None]:
    """(bytes now, bytes at the target); the second is None if any part cannot scale."""
    now = sum(p.bytes for p in projections)
    later = [p.projected for p in projections]
    return now, (None if any(v is None for v in later) else sum(v for v in later if v))


def human(n: float | None) -> str:
    """``1.4 KB``, ``57 GB``: decimal units, as disks are sold and ``df -H`` prints."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 100 else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)
