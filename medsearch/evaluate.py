"""``medsearch eval``: BEIR-format evaluation through the same code paths as PubMed.

A BEIR corpus becomes an ingest source: its documents are turned into Articles and
applied by the same :class:`~ingest.pipeline.Ingestor` (store + tantivy), encoded by the
same vector stage and searched by the same :class:`Searcher`. There is no eval-only
retrieval code. Each (corpus, profile) pair gets its own data home under the eval cache,
keyed by the corpus file's MD5, so a re-run reuses the store, index and vectors.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from medsearch.beir import PmidMap, beir_doc_to_article, load_corpus, load_qrels
from medsearch.beir import load_queries as load_beir_queries
from medsearch.errors import UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress, Progress

EVAL_MODES = ("lexical", "dense", "hybrid", "rerank")
BATCH = 1000


@dataclass
class EvalReport:
    corpus: str
    split: str
    mode: str
    profile: str | None
    queries: int
    metrics: dict[str, float]
    seconds: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "split": self.split,
            "mode": self.mode,
            "profile": self.profile,
            "queries": self.queries,
            "metrics": {k: round(v, 4) for k, v in self.metrics.items()},
            "seconds": round(self.seconds, 2),
            "notes": self.notes,
        }


def _messages(directory: Path, pmids: PmidMap) -> Iterator[tuple[str, Any]]:
    from ingest.writer_rows import messages

    docs = load_corpus(directory)
    yield from messages((beir_doc_to_article(d, pmids.add(d.doc_id)) for d in docs), BATCH)


def build_collection(
    directory: Path,
    paths: Paths,
    *,
    profile: str | None,
    encode: bool,
    progress: Progress,
    device: str = "auto",
) -> tuple[Paths, PmidMap, list[str]]:
    """The eval home for this corpus (and profile), ingested and encoded as needed.

    Encoding goes through ingest's CPU guard: with ``device`` "auto" on a machine without
    a GPU, the first documents time this CPU and a corpus past ``[ingest]
    cpu_encode_minutes`` stops with one line (what it would take, ``--device cpu`` to go
    on), since an evaluation cannot measure half its vectors; within the limit the
    estimate is said before the rest is encoded."""
    from ingest.download import md5_of
    from ingest.incoming import InputFile
    from ingest.run import Corpus, IngestOptions, ingest
    from medsearch.models.profiles import resolve_profile

    corpus_file = directory / "corpus.jsonl"
    if not corpus_file.exists():
        raise UsageError(f"{directory} is not a BEIR folder: corpus.jsonl is missing")
    digest = md5_of(corpus_file)
    # The user's own corpus may be encoded with another profile: that must not matter.
    profile_name = resolve_profile(profile, paths).name if encode else "lexical"
    home = paths.collection(paths.eval_cache / f"{directory.name}-{digest[:12]}-{profile_name}")
    pmids = PmidMap()
    corpus = Corpus(
        InputFile(corpus_file, corpus_file.stat().st_size, digest),
        lambda: _messages(directory, pmids),
    )
    options = IngestOptions(
        corpus=corpus,
        delete_downloads=False,  # nothing is downloaded: the config file has no say
        encode=encode,
        profile=profile_name,
        sentences=False,
        device=device,
        needed_by="eval",  # over the CPU limit, an error: eval cannot measure half the vectors
        jobs=0,
        holder="eval",
    )
    report = ingest(home, options, progress=progress)
    notes: list[str] = []
    if report.reused:
        for doc in load_corpus(directory):
            pmids.add(doc.doc_id)
        notes.append(f"reused the cached collection in {home.home}")
    return home, pmids, [*notes, *report.summary.notes]


def _ensure_delta(home: Paths, progress: Progress) -> tuple[list[str], bool]:
    """Train the collection's Delta model from its corpus when it has none that fits;
    the notes, and whether there is a model (False: the corpus cannot train one, and the
    evaluation measures the first-stage order instead of failing)."""
    from medsearch.errors import UntrainableError
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.training.train import train_corpus

    with open_searcher(home) as searcher:
        status = searcher.delta_model()
    if status.fits:  # kept even when it chose the first-stage order: retraining is the same
        return [f"reused the collection's Delta model ({home.rerank_dir / 'delta'})"], True
    try:
        report = train_corpus(home, progress=progress)
    except UntrainableError as exc:
        return [
            f"first-stage order kept: no Delta model can be trained on this corpus ({exc})"
        ], False
    trained = (
        f"trained the collection's Delta model from its corpus: {report.queries},"
        f" {report.pairs:,} pairs, {report.seconds:.0f} s"
    )
    return [trained, *report.notes], True


def evaluate(
    directory: Path,
    paths: Paths,
    *,
    mode: str = "lexical",
    split: str = "test",
    profile: str | None = None,
    k: int = 100,
    limit: int | None = None,
    rerank: str = "none",
    progress: Progress | None = None,
    device: str = "auto",
) -> EvalReport:
    """nDCG@10, Recall@100, MAP@10 and MRR@10 of ``mode`` on a BEIR corpus.

    ``rerank`` orders the first stage (``mode`` "rerank" is hybrid + the cross-encoder,
    as before). A reranker that needs the Delta model trains the collection's own from
    its corpus alone (never its queries or judgements) the first time.
    """
    from medsearch.metrics import evaluate_run
    from medsearch.rerank.plan import TRAIN_HINT
    from medsearch.retrieval.searcher import open_searcher

    if mode not in EVAL_MODES:
        raise UsageError(f"unknown mode {mode!r}; choose one of {', '.join(EVAL_MODES)}")
    progress = progress or NullProgress()
    started = time.monotonic()
    qrels = load_qrels(directory, split)
    queries = load_beir_queries(directory)
    wanted = [q for q in qrels if q in queries]
    if limit is not None:
        wanted = wanted[:limit]
        qrels = {q: qrels[q] for q in wanted}
    home, pmids, notes = build_collection(
        directory,
        paths,
        profile=profile,
        encode=mode != "lexical",
        progress=progress,
        device=device,
    )
    untrained = False
    if rerank in ("delta", "auto"):
        more, trained = _ensure_delta(home, progress)
        notes.extend(more)
        untrained = not trained
        if untrained and rerank == "delta":
            rerank = "none"  # the note above says why the first stage is measured
    run: dict[str, list[str]] = {}
    used_rerankers: set[str] = set()
    long_queries = 0
    progress.start("queries", f"Queries ({mode})", total=len(wanted))
    with open_searcher(home) as searcher:
        first = "hybrid" if mode == "rerank" else mode
        for qid in wanted:
            result = searcher.search_reranked(
                queries[qid],
                mode=first,
                k=k,
                syntax=False,
                rerank=rerank,
                cross=True if mode == "rerank" else None,
            )
            used_rerankers.update(result.rerankers)
            long_queries += result.long_query is not None
            notes.extend(
                n
                for n in result.notes
                if n not in notes
                and n != result.long_query
                and not (untrained and TRAIN_HINT in n)  # training was tried: it cannot
            )
            run[qid] = [pmids.doc_id(h.pmid) for h in result.hits]
            progress.advance("queries")
        used = searcher.profile_name
    progress.finish("queries")
    if long_queries:
        notes.append(
            f"{long_queries} of {len(wanted)} queries were long enough that their commonest"
            " words were left out of the BM25 ranking to keep it fast, as in `search`"
        )
    if used_rerankers:
        notes.append(f"reranked by {' + '.join(sorted(used_rerankers))}")
    metrics = evaluate_run(run, qrels, k_values=(10, 100))
    chosen = {m: metrics[m] for m in ("ndcg@10", "recall@100", "map@10", "mrr@10")}
    return EvalReport(
        corpus=str(directory),
        split=split,
        mode=mode,
        profile=used if mode != "lexical" else None,
        queries=len(wanted),
        metrics=chosen,
        seconds=time.monotonic() - started,
        notes=notes,
    )
