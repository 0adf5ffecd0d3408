"""The vector stage of ingest: encode what is new or changed, drop what was deleted.

This module is the stage's policy: which profile, which devices, whether this CPU may
take the backlog on (:mod:`ingest.cpu_guard`), NCBI's embeddings imported first, and
the summary's notes. The loop that encodes is :mod:`ingest.encode_loop`, its readers
:mod:`ingest.encode_readers`, what a chunk holds :mod:`ingest.encode_chunks`.

The ``encoded`` table in the store says, per (kind, PMID), which text (content hash) and
which profile the stored vectors came from. So the stage is re-runnable like
``llm embed-multi``: it encodes only articles whose hash or profile differs, and an
interrupted run resumes without re-encoding finished batches, because each chunk's
vectors are committed to the collection *before* its ``encoded`` rows (a crash in
between only means those rows are encoded again, which replaces them idempotently).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from ingest.cpu_guard import (
    PROBE_ARTICLES,
    CpuLimitError,
    Estimate,
    cpu_only,
    going_on,
    measured,
    refused,
    stopped,
)
from ingest.encode_chunks import ARTICLES, SENTENCES
from ingest.encode_loop import encode_articles, encode_sentences
from ingest.encode_pipeline import Rate, human_rate
from ingest.encoded import count_stale, record_hashes, remove_deleted
from medsearch.errors import DiskFullError, IndexMismatchError
from medsearch.paths import Paths
from medsearch.progress import Progress
from medsearch.store import Store
from medsearch.store.db import is_disk_full

if TYPE_CHECKING:
    from medsearch.index.vectors.coarse import Coarse
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_index import SentenceCollection
    from medsearch.models.encoders import Encoder
    from medsearch.models.profiles import ModelProfile

    Collection = VectorCollection | SentenceCollection


def recorded_profile(paths: Paths) -> str | None:
    """The profile the existing vectors were built with (None when there are none)."""
    from medsearch.index.vectors.layout import read_manifest

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


def coarse_for(device: str) -> Coarse:
    """Where the collections place vectors in IVF lists and train them: the encoding GPU
    when there is one (see :mod:`medsearch.index.vectors.coarse`), else Faiss on the CPU."""
    from medsearch.index.vectors.coarse import CPU, TorchCoarse

    return TorchCoarse(device) if device.startswith("cuda") else CPU


def open_collections(
    paths: Paths,
    profile: str,
    dim: int,
    *,
    index_factory: str | None = None,
    coarse: Coarse | None = None,
) -> tuple[VectorCollection, SentenceCollection]:
    """Article and sentence collections for writing (old sentence layouts converted)."""
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_migrate import open_sentences

    articles = VectorCollection.open(
        paths.vector_dir(ARTICLES), dim=dim, profile=profile, create=True
    )
    sentences = open_sentences(paths.vector_dir(SENTENCES), dim=dim, profile=profile, create=True)
    if coarse is not None:
        articles.coarse = sentences.coarse = coarse
    if index_factory:
        articles.rebuild(factory=index_factory)
    return articles, sentences


def existing_collections(paths: Paths) -> dict[str, Collection]:
    from medsearch.index.vectors.collection import VectorCollection
    from medsearch.index.vectors.sentence_migrate import open_sentences

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
    """A full disk while writing vectors (their files, or their ``encoded`` rows and
    queue in the store) becomes one clear :class:`DiskFullError`."""
    try:
        yield
    except (OSError, sqlite3.OperationalError) as exc:
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
    ask_before_cpu: bool = True,
    needed_by: str | None = None,
) -> tuple[list[str], int]:
    """Encode, import and prune vectors.

    ``ask_before_cpu``: with ``device="auto"`` on a machine without a GPU, a backlog
    this machine would take longer than ``[ingest] cpu_encode_minutes`` to encode (timed
    on its first articles, see :mod:`ingest.cpu_guard`) is not encoded unasked; False
    ``needed_by``: the command that needs every vector (``eval``): a backlog past the
    limit is then a :class:`CpuLimitError` naming it, after the probe's vectors are kept.

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
            notes.extend(_prune_existing(paths, store))
            return notes, encoded
        by_default = profile is None and recorded_profile(paths) is None
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
        from medsearch.models.profiles import in_use_note

        note = in_use_note(chosen, instead_of_medcpt=by_default)
        if note is not None:
            notes.append(note)
        from medsearch.index.vectors.sentence_migrate import needs_migration

        if needs_migration(paths.vector_dir(SENTENCES)):
            progress.message("converting the sentence vectors to compressed codes (once) ...")
            notes.append("converted the sentence vectors to compressed codes (no re-encoding)")
        stale = count_stale(store, ARTICLES, chosen.name)
        minutes = _cpu_minutes(paths) if ask_before_cpu and stale > PROBE_ARTICLES else None
        if minutes is not None and not cpu_only(device):
            minutes = None  # a GPU encodes whatever waits
        encoders = load_encoders(chosen, device, paths, progress, articles=stale)
        article_vectors, sentence_vectors = open_collections(
            paths,
            chosen.name,
            encoders[0].dim,
            index_factory=index_factory,
            coarse=coarse_for(encoders[0].device),
        )
        collections: dict[str, Collection] = {
            ARTICLES: article_vectors,
            SENTENCES: sentence_vectors,
        }
        rates: list[tuple[str, Rate]] = []
        over: Estimate | None = None  # the probe's estimate, when past the limit
        try:
            notes.extend(_stale_lists_note(sentence_vectors, progress))
            removed = remove_deleted(store, collections)
            if removed:
                notes.append(f"removed the vectors of {removed:,} deleted articles")
            pair = (article_vectors, sentence_vectors)
            probe: Estimate | None = None
            if minutes is not None:  # time this CPU on a few articles, which are kept
                progress.message(f"timing this CPU on the first {PROBE_ARTICLES} articles ...")
                rates = _encode(store, encoders, pair, progress, sentences, PROBE_ARTICLES)
                probe = measured([r for _, r in rates], stale)
                encoded += probe.probed
            if probe is not None and minutes is not None and probe.total_seconds > minutes * 60:
                over = probe
                notes.append(stopped(probe, minutes))
            else:
                if probe is not None:
                    progress.message(going_on(probe, sentences=sentences))
                    notes.append(going_on(probe, sentences=sentences))
                rest = stale - (probe.probed if probe is not None else 0)
                rates = _encode(store, encoders, pair, progress, sentences, None, rest)
                encoded += rates[0][1].articles
            for c in collections.values():
                c.commit()
        finally:
            for c in collections.values():
                c.close()
        if over is not None and minutes is not None and needed_by is not None:
            raise CpuLimitError(refused(over, minutes, needed_by))
        notes.extend(rate_notes(rates, time.monotonic() - t0, [e.device for e in encoders]))
        if any(e.compiled for e in encoders):
            from medsearch.models.backbone import COMPILE_ENV

            notes.append(
                f"encoders compiled with torch.compile for this run of {stale:,} articles"
                f" (set {COMPILE_ENV}=0 to skip, =1 to compile smaller runs too)"
            )
        notes.extend(
            f"out of memory on {e.device}: batches were halved down to {e.oom_limit} texts"
            " and the run carried on"
            for e in encoders
            if e.oom_limit
        )
        return notes, encoded


def _cpu_minutes(paths: Paths) -> float:
    from medsearch.config import load_ingest_settings

    return load_ingest_settings(paths).cpu_encode_minutes


def _encode(
    store: Store,
    encoders: Sequence[Encoder],
    collections: tuple[VectorCollection, SentenceCollection],
    progress: Progress,
    sentences: bool,
    limit: int | None,
    total: int | None = None,
) -> list[tuple[str, Rate]]:
    """Articles, then (``sentences``) abstract sentences: the stale ones, or the first
    ``limit`` of each; each kind's rate."""
    articles, sentence_vectors = collections
    rates = [
        (
            ARTICLES,
            encode_articles(store, encoders, articles, progress=progress, total=total, limit=limit),
        )
    ]
    if sentences:
        rate = encode_sentences(store, encoders, sentence_vectors, progress=progress, limit=limit)
        rates.append((SENTENCES, rate))
    return rates


def _stale_lists_note(sentences: SentenceCollection, progress: Progress) -> list[str]:
    """What the summary says of sentence lists an earlier version trained for the wrong
    similarity: retrained at the next commit, or (too many codes for this CPU) how to."""
    if not sentences.lists_stale():
        return []
    if sentences.retrains_stale_lists():
        progress.message("retraining the sentence index's lists (no re-encoding) ...")
        return [
            "retrained the sentence index's lists, which an earlier medsearch trained for"
            " the wrong similarity (no re-encoding; sentence search finds more)"
        ]
    return [
        "the sentence index's lists were trained for the wrong similarity by an earlier"
        f" medsearch; its {len(sentences):,} sentences are too many to place again on this"
        " CPU in one ingest: run `medsearch ingest --device cuda` on a machine with a GPU"
        " to retrain them (no re-encoding). Sentence search works meanwhile, missing some"
        " neighbours"
    ]


def _prune_existing(paths: Paths, store: Store) -> list[str]:
    """Deleted articles' vectors out of the collections there are, with nothing encoded."""
    existing = existing_collections(paths)
    removed = remove_deleted(store, existing) if existing else 0
    for c in existing.values():
        c.close()
    return [f"removed the vectors of {removed:,} deleted articles"] if removed else []


def load_encoders(
    profile: ModelProfile,
    device: str,
    paths: Paths,
    progress: Progress,
    *,
    articles: int | None = None,
) -> list[Encoder]:
    """One encoder per device ``device`` names (``cuda``: every visible GPU), compiled
    when ``articles`` to encode make it pay (:func:`compile_wanted`)."""
    from medsearch.models.backbone import COMPILE_ENV, compile_wanted
    from medsearch.models.device import detect, resolve_devices
    from medsearch.models.encoders import load_encoder

    devices = resolve_devices(device, detect())
    progress.message(f"loading the {profile.name} encoders on {', '.join(devices)} ...")
    wanted = compile_wanted(devices[0], articles)
    if wanted:
        progress.message(
            "compiling the encoders for this large run: the first batches wait about a minute"
            f" ({COMPILE_ENV}=0 skips it)"
        )
    return [load_encoder(profile, device=d, paths=paths, compile_model=wanted) for d in devices]


def rate_notes(rates: Sequence[tuple[str, Rate]], seconds: float, devices: list[str]) -> list[str]:
    """The summary's lines: the stage's time and devices, then each kind's rates."""
    notes = [f"vector stage took {seconds:,.1f} s on {', '.join(devices)}"]
    # On a GPU the devices wait for the first chunk while the rate builds up; on a CPU
    # reading and encoding take turns, so there is nothing to wait for.
    gpu = any(d != "cpu" for d in devices)
    for what, rate in rates:
        if rate.articles:
            startup = rate.startup() if gpu else ""
            articles = f"{rate.articles:,} article{'s' * (rate.articles != 1)}"
            done = articles
            if what == SENTENCES:
                sentences = f"{rate.vectors:,} abstract sentence{'s' * (rate.vectors != 1)}"
                done = f"{sentences} of {articles}"
            notes.append(
                f"encoded {done} in {rate.seconds:,.1f} s:"
                f" {rate.describe()} ({human_rate(rate.tokens)} tokens);"
                f" busy: {rate.bottleneck()}" + (f"; {startup}" if startup else "")
            )
    return notes


def _import_embeddings(
    paths: Paths, store: Store, source: str, progress: Progress, notes: list[str]
) -> int:
    from ingest.embeddings import import_embeddings
    from medsearch.index.vectors.collection import VectorCollection

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
    from medsearch.index.vectors.collection import VectorCollection

    collection = VectorCollection.open(paths.vector_dir(ARTICLES))
    try:
        last = 0
        while rows := store.conn.execute(
            "SELECT pmid, content_hash FROM records WHERE pmid > ? ORDER BY pmid LIMIT 10000",
            (last,),
        ).fetchall():
            last = rows[-1][0]
            mask = collection.contains(np.array([r[0] for r in rows], dtype=np.int64))
            record_hashes(
                store,
                ARTICLES,
                "medcpt",
                [(p, h, 1) for (p, h), has in zip(rows, mask, strict=True) if has],
            )
    finally:
        collection.close()
