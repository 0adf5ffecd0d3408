"""The vector stage of ingest: encode what is new or changed, drop what was deleted.

The ``encoded`` table in the store says, per (kind, PMID), which text (content hash) and
which profile the stored vectors came from. So the stage is re-runnable like
``llm embed-multi``: it encodes only articles whose hash or profile differs, and an
interrupted run resumes without re-encoding finished batches, because each chunk's
vectors are committed to the collection *before* its ``encoded`` rows (a crash in
between only means those rows are encoded again, which replaces them idempotently).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from medsearch.errors import DiskFullError, IndexMismatchError
from medsearch.paths import Paths
from medsearch.progress import Progress
from medsearch.records import SENTENCES_PER_ARTICLE, Article
from medsearch.store import Store
from medsearch.store.db import SQL_CHUNK, is_disk_full, unpack

if TYPE_CHECKING:
    from medsearch.index.sentence_index import SentenceCollection
    from medsearch.index.vector import VectorCollection

    Collection = VectorCollection | SentenceCollection
    from medsearch.models.encoders import Encoder
    from medsearch.models.profiles import ModelProfile

ARTICLES, SENTENCES = "articles", "sentences"
CHUNK = 256  # articles read and encoded together
COMMIT_ARTICLES = 20_000  # ... and committed together (see _encode_stale)
COMMIT_SECONDS = 120.0


def recorded_profile(paths: Paths) -> str | None:
    """The profile the existing vectors were built with (None when there are none)."""
    from medsearch.index.vector_layout import read_manifest

    manifest = read_manifest(paths.vector_dir(ARTICLES))
    return manifest.profile if manifest is not None else None


def choose_profile(paths: Paths, requested: str | None) -> ModelProfile:
    """The requested profile, else the one the vectors were built with, else the default."""
    from medsearch.models.profiles import get_profile, resolve_profile

    existing = recorded_profile(paths)
    if requested is None and existing is not None:
        return get_profile(existing, paths)
    profile = resolve_profile(requested, paths)
    if existing is not None and existing != profile.name:
        raise IndexMismatchError(
            f"the vectors in {paths.vectors} were built with model profile {existing!r},"
            f" not {profile.name!r}; use --models {existing}, or delete {paths.vectors}"
            " to rebuild them"
        )
    return profile


def stale_pmids(
    store: Store, kind: str, profile: str, *, batch: int | None = None
) -> Iterator[list[int]]:
    """PMIDs whose vectors are missing, from another profile, or of an older text."""
    last = 0
    while True:
        rows = store.conn.execute(
            "SELECT a.pmid FROM articles a LEFT JOIN encoded e"
            " ON e.kind = ? AND e.pmid = a.pmid"
            " WHERE a.pmid > ? AND (e.pmid IS NULL OR e.content_hash != a.content_hash"
            " OR e.profile != ?) ORDER BY a.pmid LIMIT ?",
            (kind, last, profile, batch or CHUNK),
        ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        yield [r[0] for r in rows]


def count_stale(store: Store, kind: str, profile: str) -> int:
    row = store.conn.execute(
        "SELECT COUNT(*) FROM articles a LEFT JOIN encoded e ON e.kind = ? AND e.pmid = a.pmid"
        " WHERE e.pmid IS NULL OR e.content_hash != a.content_hash OR e.profile != ?",
        (kind, profile),
    ).fetchone()
    return int(row[0])


def sentence_ids(pmid: int, count: int) -> np.ndarray:
    return np.arange(count, dtype=np.int64) + pmid * SENTENCES_PER_ARTICLE


def remove_deleted(store: Store, collections: dict[str, Collection]) -> int:
    """Vectors of PMIDs no longer in the store (DeleteCitation) leave every collection."""
    rows = store.conn.execute(
        "SELECT e.kind, e.pmid, e.items FROM encoded e"
        " LEFT JOIN articles a ON a.pmid = e.pmid WHERE a.pmid IS NULL"
    ).fetchall()
    if not rows:
        return 0
    for kind, collection in collections.items():
        ids = [
            sentence_ids(pmid, items) if kind == SENTENCES else np.array([pmid], dtype=np.int64)
            for k, pmid, items in rows
            if k == kind
        ]
        if ids:
            collection.remove(np.concatenate(ids))
            collection.commit()
    with store.transaction():
        store.conn.executemany(
            "DELETE FROM encoded WHERE kind = ? AND pmid = ?", [(k, p) for k, p, _ in rows]
        )
    return len({p for _, p, _ in rows})


def _fetch(store: Store, pmids: Sequence[int]) -> list[Article]:
    out: list[Article] = []
    for i in range(0, len(pmids), SQL_CHUNK):
        chunk = tuple(pmids[i : i + SQL_CHUNK])
        marks = ",".join("?" * len(chunk))
        out.extend(
            unpack(blob)
            for (blob,) in store.conn.execute(
                f"SELECT data FROM articles WHERE pmid IN ({marks}) ORDER BY pmid", chunk
            )
        )
    return out


def _previous_items(store: Store, kind: str, pmids: Sequence[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for i in range(0, len(pmids), SQL_CHUNK):
        chunk = tuple(pmids[i : i + SQL_CHUNK])
        marks = ",".join("?" * len(chunk))
        found.update(
            store.conn.execute(
                f"SELECT pmid, items FROM encoded WHERE kind = ? AND pmid IN ({marks})",
                (kind, *chunk),
            ).fetchall()
        )
    return found


def _encode_stale(
    store: Store,
    collection: Collection,
    kind: str,
    profile: str,
    description: str,
    progress: Progress,
    step: Callable[[list[Article]], list[tuple[Article, int]]],
) -> int:
    """Run ``step`` over every stale article of ``kind`` and commit as it goes.

    ``step`` adds a chunk's vectors and returns, per article, how many vectors it now
    has. Every :data:`COMMIT_ARTICLES` articles or :data:`COMMIT_SECONDS` seconds the
    collection is committed and only then are those articles recorded in ``encoded``:
    an interruption loses at most that much work, and a commit (which rewrites the id
    lookup: ~640 MB at 40M vectors) stays rare at PubMed scale.
    """
    task = f"encode-{kind}"
    progress.start(task, description, total=count_stale(store, kind, profile))
    done = 0
    pending: list[tuple[Article, int]] = []
    last_commit = time.monotonic()

    def commit() -> None:
        nonlocal last_commit
        collection.commit()
        _record(store, kind, profile, pending)
        pending.clear()
        last_commit = time.monotonic()

    for pmids in stale_pmids(store, kind, profile):
        articles = _fetch(store, pmids)
        pending.extend(step(articles))
        done += len(articles)
        progress.advance(task, len(articles))
        if len(pending) >= COMMIT_ARTICLES or time.monotonic() - last_commit > COMMIT_SECONDS:
            commit()
    commit()
    progress.finish(task)
    return done


def encode_articles(
    store: Store,
    encoder: Encoder,
    collection: VectorCollection,
    *,
    progress: Progress,
) -> int:
    def step(articles: list[Article]) -> list[tuple[Article, int]]:
        vectors = encoder.encode_articles([(a.title, a.abstract_text) for a in articles])
        collection.add(np.array([a.pmid for a in articles], dtype=np.int64), vectors)
        return [(a, 1) for a in articles]

    name = encoder.profile.name
    return _encode_stale(store, collection, ARTICLES, name, "Encoding articles", progress, step)


def encode_sentences(
    store: Store,
    encoder: Encoder,
    collection: SentenceCollection,
    *,
    progress: Progress,
) -> int:
    from ingest.sentences import article_sentences

    def step(articles: list[Article]) -> list[tuple[Article, int]]:
        before = _previous_items(store, SENTENCES, [a.pmid for a in articles])
        stale = [sentence_ids(p, n) for p, n in before.items() if n]
        if stale:
            collection.remove(np.concatenate(stale))
        per_article = [(a, article_sentences(a)) for a in articles]
        texts = [s.text for _, sents in per_article for s in sents]
        ids = np.array([s.sentence_id for _, sents in per_article for s in sents], dtype=np.int64)
        if texts:
            collection.add(ids, encoder.encode_sentences(texts))
        return [(a, len(sents)) for a, sents in per_article]

    name = encoder.profile.name
    description = "Encoding abstract sentences (articles)"
    return _encode_stale(store, collection, SENTENCES, name, description, progress, step)


def _record(store: Store, kind: str, profile: str, rows: Sequence[tuple[Article, int]]) -> None:
    _record_hashes(store, kind, profile, [(a.pmid, a.content_hash, n) for a, n in rows])


def _record_hashes(
    store: Store, kind: str, profile: str, rows: Sequence[tuple[int, str, int]]
) -> None:
    with store.transaction():
        store.conn.executemany(
            "INSERT INTO encoded(pmid, kind, profile, content_hash, items) VALUES (?,?,?,?,?)"
            " ON CONFLICT(kind, pmid) DO UPDATE SET profile=excluded.profile,"
            " content_hash=excluded.content_hash, items=excluded.items",
            [(pmid, kind, profile, digest, n) for pmid, digest, n in rows],
        )


def open_collections(
    paths: Paths, profile: str, dim: int, *, index_factory: str | None = None
) -> tuple[VectorCollection, SentenceCollection]:
    """Article and sentence collections for writing (old sentence layouts converted)."""
    from medsearch.index.sentence_migrate import open_sentences
    from medsearch.index.vector import VectorCollection

    articles = VectorCollection.open(
        paths.vector_dir(ARTICLES), dim=dim, profile=profile, create=True
    )
    sentences = open_sentences(paths.vector_dir(SENTENCES), dim=dim, profile=profile, create=True)
    if index_factory:
        articles.rebuild(factory=index_factory)
    return articles, sentences


def existing_collections(paths: Paths) -> dict[str, Collection]:
    from medsearch.index.sentence_migrate import open_sentences
    from medsearch.index.vector import VectorCollection

    out: dict[str, Collection] = {}
    if (paths.vector_dir(ARTICLES) / "manifest.json").exists():
        out[ARTICLES] = VectorCollection.open(paths.vector_dir(ARTICLES))
    if (paths.vector_dir(SENTENCES) / "manifest.json").exists() or (
        paths.vector_dir(SENTENCES).with_name(SENTENCES + ".old").exists()
    ):
        out[SENTENCES] = open_sentences(paths.vector_dir(SENTENCES))
    return out


@contextmanager
def _disk_full_is_clear(paths: Paths) -> Iterator[None]:
    """A full disk while writing vectors becomes one clear :class:`DiskFullError`."""
    try:
        yield
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(
                f"disk full while writing vectors under {paths.vectors}; the vectors"
                " committed so far are kept: free some space and run `medsearch ingest` again"
            ) from exc
        raise


def run_vectors_stage(
    paths: Paths,
    store: Store,
    *,
    profile: str | None,
    device: str,
    index_factory: str | None,
    embeddings: str | None,
    encode: bool,
    progress: Progress,
    sentences: bool = True,
) -> tuple[list[str], int]:
    """Encode, import and prune vectors.

    Returns notes for the summary and how many articles got new vectors. A full disk is
    a clear :class:`DiskFullError`: what was committed before it is kept, and the next
    run carries on from there.
    """
    with _disk_full_is_clear(paths):
        notes: list[str] = []
        encoded = 0
        t0 = time.monotonic()
        if embeddings:
            encoded += _import_embeddings(paths, store, embeddings, progress, notes)
        if not encode:
            existing = existing_collections(paths)
            if existing:
                removed = remove_deleted(store, existing)
                if removed:
                    notes.append(f"removed the vectors of {removed:,} deleted articles")
                for c in existing.values():
                    c.close()
            return notes, encoded
        chosen = choose_profile(paths, profile)
        if embeddings:
            from medsearch.models.profiles import profile_availability

            if not profile_availability(chosen, paths).available:
                notes.append(
                    "articles not covered by the imported embeddings and all abstract sentences"
                    f" still need the {chosen.name} models: run `medsearch models download"
                    f" {chosen.name}` and ingest again"
                )
                return notes, encoded
        if chosen.name != "medcpt":
            notes.append(
                f"model profile {chosen.name!r} in use ({chosen.description}); MedCPT is not"
                " available offline here (`medsearch models download medcpt` on a connected"
                " machine)"
            )
        from medsearch.index.sentence_migrate import needs_migration
        from medsearch.models.encoders import load_encoder

        if needs_migration(paths.vector_dir(SENTENCES)):
            progress.message("converting the sentence vectors to compressed codes (once) ...")
            notes.append("converted the sentence vectors to compressed codes (no re-encoding)")
        progress.message(f"loading the {chosen.name} encoders on device {device} ...")
        encoder = load_encoder(chosen, device=device, paths=paths)
        article_vectors, sentence_vectors = open_collections(
            paths, chosen.name, encoder.dim, index_factory=index_factory
        )
        collections: dict[str, Collection] = {
            ARTICLES: article_vectors,
            SENTENCES: sentence_vectors,
        }
        try:
            removed = remove_deleted(store, collections)
            if removed:
                notes.append(f"removed the vectors of {removed:,} deleted articles")
            encoded += encode_articles(store, encoder, article_vectors, progress=progress)
            if sentences:
                encode_sentences(store, encoder, sentence_vectors, progress=progress)
            for c in collections.values():
                c.commit()
        finally:
            for c in collections.values():
                c.close()
        notes.append(f"vector stage took {time.monotonic() - t0:,.1f} s on {encoder.device}")
        return notes, encoded


def _import_embeddings(
    paths: Paths, store: Store, source: str, progress: Progress, notes: list[str]
) -> int:
    from ingest.embeddings import import_embeddings
    from medsearch.index.vector import VectorCollection

    collection = VectorCollection.open(
        paths.vector_dir(ARTICLES), dim=768, profile="medcpt", create=True
    )

    def known(pmids: np.ndarray) -> np.ndarray:
        present = store.existing([int(p) for p in pmids])
        return np.fromiter((int(p) in present for p in pmids), dtype=bool, count=len(pmids))

    def report(name: str, done: int, total: int) -> None:
        progress.start("embeddings", f"Importing {name}", total=total)
        progress.update("embeddings", completed=done)

    try:
        stats = import_embeddings(
            source,
            collection,
            known_pmids=known,
            download_dir=paths.downloads / "embeddings",
            progress=report,
        )
        collection.commit()
    finally:
        collection.close()
    notes.append(f"imported NCBI MedCPT embeddings: {stats}")
    _mark_imported(store, paths)
    return int(getattr(stats, "imported", 0))


def _mark_imported(store: Store, paths: Paths) -> None:
    """Record imported article vectors in ``encoded`` so encoding does not redo them."""
    from medsearch.index.vector import VectorCollection

    collection = VectorCollection.open(paths.vector_dir(ARTICLES))
    try:
        last = 0
        while rows := store.conn.execute(
            "SELECT pmid, content_hash FROM articles WHERE pmid > ? ORDER BY pmid LIMIT 10000",
            (last,),
        ).fetchall():
            last = rows[-1][0]
            mask = collection.contains(np.array([r[0] for r in rows], dtype=np.int64))
            _record_hashes(
                store,
                ARTICLES,
                "medcpt",
                [(p, h, 1) for (p, h), has in zip(rows, mask, strict=True) if has],
            )
    finally:
        collection.close()
