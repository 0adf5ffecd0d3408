"""A summary of one data home: what ``stats`` prints and the TUI's status bar shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medsearch.footprint import (
    PUBMED,
    REPRESENTATIVE_CITATIONS,
    Part,
    Scale,
    Unit,
    human,
    project,
    total,
)
from medsearch.index.vectors.layout import SAMPLE_MAX, bytes_at_scale
from medsearch.paths import Paths

SAMPLE = 400
"""Records decoded to tell how many citations have an abstract and how much smaller the
others are: +-5 points on the share, in ~20 ms whatever the corpus size."""


def dir_size(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def vector_manifests(paths: Paths) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not paths.vectors.exists():
        return out
    for kind_dir in sorted(paths.vectors.iterdir()):
        manifest = kind_dir / "manifest.json"
        if manifest.exists():
            try:
                out[kind_dir.name] = json.loads(manifest.read_text())
            except (OSError, ValueError):
                out[kind_dir.name] = {"error": "unreadable manifest"}
    return out


def corpus_status(paths: Paths) -> dict[str, Any]:
    """Counts and sizes; works (with zeros) on a home that has nothing in it yet."""
    share, ratio = 1.0, 1.0
    info: dict[str, Any] = {
        "home": str(paths.home),
        "articles": 0,
        "deleted": 0,
        "files": 0,
        "failed_files": 0,
    }
    if paths.store.exists():
        from medsearch.store import Store
        from medsearch.store.sampling import sample

        with Store(paths.store, readonly=True) as store:
            ledger = store.files.entries()
            info["articles"] = store.count()
            info["deleted"] = store.count_deleted()
            info["files"] = sum(1 for e in ledger if e.status == "done")
            info["failed_files"] = sum(1 for e in ledger if e.status == "failed")
            info["store_bytes"] = store.size_bytes()
            from medsearch.mesh.tables import installed_year

            year = installed_year(store.conn)
            info["mesh"] = "not installed" if year is None else (f"MeSH {year}" if year else "MeSH")
            share, ratio = abstract_mix(sample(store, SAMPLE))
    info["lexical_index_bytes"] = dir_size(paths.lexical_index)
    from medsearch.index.lexical.schema import SCHEMA_VERSION
    from medsearch.index.lexical.shards import index_format

    found = index_format(paths.lexical_index)
    if found is not None:
        info["lexical_format"] = found
        if found < SCHEMA_VERSION:  # lacks the fields field tags need: refused by search
            info["lexical_upgrade"] = (
                f"format {found} lacks the fields PubMed's field tags need; the next"
                " `medsearch ingest` rebuilds it from the store"
            )
    vectors = vector_manifests(paths)
    for collection, manifest in vectors.items():
        info[f"{collection}_vectors"] = {
            "count": manifest.get("live", manifest.get("count")),
            "profile": manifest.get("profile"),
            "kind": manifest.get("kind"),
            "bytes": dir_size(paths.vector_dir(collection)),
        }
        if manifest.get("segments"):  # compressed sentence codes: how many files
            info[f"{collection}_vectors"]["parts"] = len(manifest["segments"])
    from medsearch.lock import active_writer

    writer = active_writer(paths)
    if writer is not None:  # e.g. an ingest in another terminal: these figures are moving
        info["writer"] = writer
    info["footprint"] = footprint(paths, info, share, ratio)
    return info


def abstract_mix(blobs: list[bytes]) -> tuple[float, float]:
    """(share of citations with an abstract, size of one without relative to one with).

    The second number comes from the records themselves: each sampled record with an
    abstract is compressed again without it. Measuring it this way works on corpora that
    have no abstract-less citations at all (SciFact), where it matters most.
    """
    import zstandard

    from medsearch.store import codec

    if not blobs:
        return 1.0, 1.0
    compressor = zstandard.ZstdCompressor(level=codec.LEVEL)
    with_abstract = full = bare = 0
    for blob in blobs:
        record = codec.decode(blob)
        if not record.get("abstract"):
            continue
        with_abstract += 1
        full += len(compressor.compress(codec.encode(record)))
        bare += len(compressor.compress(codec.encode({**record, "abstract": []})))
    share = with_abstract / len(blobs)
    return share, (bare / full if full else 1.0)


def vector_part(name: str, size: int, unit: Unit, paths: Paths) -> Part:
    """A vector collection as a footprint part, projected in its PubMed-scale layout.

    Sentence collections always: their fixed training sample (up to 768 MB) would
    dominate a small one's bytes per sentence. Article collections while exact (below
    500K): their float32 index is not what 40.9M articles will keep.
    """
    collection = "sentences" if unit == "sentence" else "articles"
    manifest = vector_manifests(paths).get(collection) or {}
    dim = manifest.get("dim")
    exact = manifest.get("kind") == "flat"  # the manifest's kind: the index type
    if not isinstance(dim, int) or (collection == "articles" and not exact):
        return Part(name, size, unit)
    fixed = SAMPLE_MAX * 2 * dim if collection == "sentences" else 0
    at_scale = bytes_at_scale(collection, dim)
    return Part(name, size, unit, at_scale=at_scale, fixed_at_scale=fixed)


def footprint(paths: Paths, info: dict[str, Any], share: float, ratio: float) -> dict[str, Any]:
    """Each part's bytes, per article (and per sentence), and at PubMed's size."""
    articles = int(info["articles"])
    sentences = int((info.get("sentences_vectors") or {}).get("count") or 0)
    named = {
        "store": info.get("store_bytes", 0),
        "lexical": info["lexical_index_bytes"],
        "articles": dir_size(paths.vector_dir("articles")),
        "sentences": dir_size(paths.vector_dir("sentences")),
        "downloads": dir_size(paths.downloads),
    }
    other = max(0, dir_size(paths.home) - sum(named.values()))
    parts = [
        Part("store", named["store"], "article", without_abstract=ratio),
        Part("lexical index", named["lexical"], "article", without_abstract=ratio),
        vector_part("article vectors", named["articles"], "article", paths),
        vector_part("sentence vectors", named["sentences"], "sentence", paths),
        Part("downloads", named["downloads"], "article"),
        Part("other", other, "fixed"),
    ]
    corpus = Scale(citations=articles, with_abstract=round(articles * share), sentences=sentences)
    projections = project(parts, corpus, PUBMED)
    now, later = total(projections)
    return {
        "parts": [p.to_dict() for p in projections],
        "total_bytes": now,
        "bytes_per_article": round(now / articles, 1) if articles else None,
        "with_abstract_share": round(share, 3),
        "without_abstract_size_ratio": round(ratio, 3),
        "target": {
            "citations": PUBMED.citations,
            "with_abstract": PUBMED.with_abstract,
            "sentences": PUBMED.sentences,
        },
        "projected_total_bytes": later,
        "projected_total": human(later),
        # whether the store's and lexical index's bytes per article say what PubMed's will
        "representative": articles >= REPRESENTATIVE_CITATIONS,
    }
