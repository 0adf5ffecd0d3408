"""``medsearch rerank train``: word vectors, examples, the pairwise training loop.

Resumable by stages under ``rerank/work/`` (sentences file, word vectors, examples,
one checkpoint per epoch): an interrupted run (Ctrl-C, kill) starts again where it
stopped, and the finished model replaces the old one atomically. The model records the
corpus, profile and signals it was trained on, so a search can tell when it no longer
fits (see :func:`medsearch.rerank.loading.staleness`).

Longer than the package's other modules (~530 lines) on purpose: the stages share the
options, the work directory and its checkpoints, and read best as one pipeline from top
to bottom; what stands alone (examples, word vectors, the network) has its own module.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from medsearch.errors import UntrainableError, UsageError
from medsearch.paths import Paths
from medsearch.progress import NullProgress, Progress
from medsearch.rerank import loading
from medsearch.rerank import marks as marklog
from medsearch.rerank.scorer import (
    PAD,
    DeltaConfig,
    DeltaScorer,
    Featurised,
    Vocabulary,
    blend_order,
    featurise,
)
from medsearch.store.sampling import iter_sample
from medsearch.training.examples import (
    CROSS,
    KEYWORDS,
    MARKS,
    SENTENCES,
    SIGNALS,
    PseudoQuery,
    cross_gains,
    held_out,
    hidden,
    ndcg_at,
    pairs_for,
    pseudo_queries,
)
from medsearch.training.words import SAMPLE_ARTICLES, sample_stride, train_vectors, write_sentences

if TYPE_CHECKING:
    from medsearch.retrieval.searcher import Searcher

BLENDS = (0.0, 0.25, 0.5, 0.75, 1.0)
DISTIL_DEPTH = 30  # candidates the cross-encoder grades per query (its head is what matters)
VALIDATION_MAX = 300  # held-out queries, each scored over the full reranked depth
DEFAULT_SIGNALS = ("keywords", "titles", "marks")
FAIR_KINDS = (KEYWORDS, MARKS)
"""Held-out queries the first stage cannot answer by finding their own text: a title or
sentence query is hidden from the model but not from the index, so on those the first
stage looks near-perfect (0.96 nDCG@10 on SciFact) and no reranker could ever win."""
FAIR_MIN = 50  # fewer fair held-out queries than this: judge the blend on all of them
FELL_BACK = (
    "the corpus has no titles or keywords to make queries of: its abstract sentences were"
    " the training queries"
)


@dataclass(frozen=True)
class TrainOptions:
    queries: int = 20_000
    """Pseudo-queries (the paper trained on ~20K click-log queries)."""
    epochs: int = 8
    signals: tuple[str, ...] = DEFAULT_SIGNALS
    depth: int = 100
    """First-stage candidates per query: negatives are sampled from them."""
    negatives: int = 8
    sample: int = SAMPLE_ARTICLES
    batch: int = 256
    lr: float = 1e-3
    seed: int = 13
    config: DeltaConfig = field(default_factory=DeltaConfig)
    fallback: tuple[str, ...] = ()
    """Query kinds used when ``signals`` give no query at all: a corpus without titles or
    keywords (a BEIR collection of bare passages) still has its abstracts' sentences."""


@dataclass(frozen=True)
class TrainReport:
    directory: Path
    queries: dict[str, int]
    pairs: int
    epochs: int
    validation: dict[str, float]
    blend: float
    seconds: float
    judged_on: str = ""
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": str(self.directory),
            "queries": self.queries,
            "pairs": self.pairs,
            "epochs": self.epochs,
            "validation_ndcg@10": {k: round(v, 4) for k, v in self.validation.items()},
            "blend": self.blend,
            "judged_on": self.judged_on,
            "seconds": round(self.seconds, 1),
            "notes": list(self.notes),
        }


def corpus_stamp(searcher: Searcher) -> dict[str, Any]:
    return {"articles": searcher.store.count(), "profile": searcher.profile_name}


def train(
    paths: Paths, searcher: Searcher, options: TrainOptions, progress: Progress | None = None
) -> TrainReport:
    """Train (or resume training) the corpus's Delta model and install it."""
    progress = progress or NullProgress()
    unknown = set(options.signals) - set(SIGNALS)
    if unknown:
        raise UsageError(
            f"unknown signal(s) {', '.join(sorted(unknown))}; choose from {', '.join(SIGNALS)}"
        )
    articles = searcher.store.count()
    if articles < loading.MIN_ARTICLES:
        raise UntrainableError(
            f"the corpus has {articles:,} articles; the Delta reranker needs at least"
            f" {loading.MIN_ARTICLES:,} articles to learn from"
        )
    started = time.monotonic()
    stamp = corpus_stamp(searcher)
    work = _work_dir(paths, {"options": _jsonable(options), "corpus": stamp})
    words = _word_model(searcher, work, options, progress)
    vocab, vectors, idf = words
    examples = _examples(searcher, paths, work, options, vocab, idf, progress)
    weights, epochs, validation = _fit(examples, vectors, idf, options, work, progress)
    scorer = DeltaScorer(options.config, vocab, vectors, weights, idf)
    blend, scores = _choose_blend(scorer, examples)
    validation.update(scores)
    judged_on = judged_queries(examples)[1]
    counts = {k: int(v) for k, v in examples["kinds"].item().items()}
    scorer.meta.update(
        {
            "corpus": stamp,
            "used_profile": CROSS in options.signals and searcher.cross is not None,
            "signals": counts,
            "pairs": len(examples["pairs"]),
            "epochs": epochs,
            "blend": blend,
            "validation": validation,
            "judged_on": judged_on,
            "trained_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    )
    target = paths.rerank_dir / "delta"
    scorer.save(target)
    shutil.rmtree(work, ignore_errors=True)
    fell_back = set(options.fallback) & (set(counts) - set(options.signals))
    return TrainReport(
        directory=target,
        queries=counts,
        pairs=len(examples["pairs"]),
        epochs=epochs,
        validation=validation,
        blend=blend,
        seconds=time.monotonic() - started,
        judged_on=judged_on,
        notes=(FELL_BACK,) if fell_back else (),
    )


def train_corpus(
    paths: Paths,
    *,
    queries: int = 20_000,
    epochs: int = 8,
    signals: Sequence[str] | None = None,
    device: str = "auto",
    progress: Progress | None = None,
) -> TrainReport:
    """``medsearch rerank train`` for a data home: open it, pick the signals, train.

    Candidates come from the corpus's default first stage (hybrid when it has vectors),
    so the negatives look like what the reranker will see. Cross-encoder distillation is
    on by default only on a GPU: on a CPU it would cost a quarter second per candidate.
    """
    from medsearch.errors import ModelError
    from medsearch.lock import write_lock
    from medsearch.retrieval.searcher import open_searcher

    progress = progress or NullProgress()
    with write_lock(paths, "rerank train"), open_searcher(paths, device=device) as searcher:
        if searcher.has_vectors:
            try:
                searcher.load_models()
            except ModelError as exc:
                progress.message(f"lexical candidates only: {exc}")
        chosen = tuple(signals) if signals else DEFAULT_SIGNALS
        if signals is None and searcher.cross is not None and (searcher.device or "cpu") != "cpu":
            chosen = (*chosen, CROSS)
        # the default signals fall back to abstract sentences where a corpus has no
        # titles or keywords; signals the user chose are taken as chosen
        fallback = (SENTENCES,) if signals is None else ()
        options = TrainOptions(queries=queries, epochs=epochs, signals=chosen, fallback=fallback)
        return train(paths, searcher, options, progress)


# -- stages --------------------------------------------------------------------------


def _jsonable(options: TrainOptions) -> dict[str, Any]:
    raw = asdict(options)
    raw["signals"] = list(options.signals)
    return raw


def _work_dir(paths: Paths, stamp: dict[str, Any]) -> Path:
    """The work directory, emptied when it belongs to another corpus or other options."""
    work = paths.rerank_dir / "work"
    stamp_file = work / "stamp.json"
    text = json.dumps(stamp, sort_keys=True, default=str)
    if work.exists() and (not stamp_file.exists() or stamp_file.read_text() != text):
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    stamp_file.write_text(text)
    return work


def _word_model(
    searcher: Searcher, work: Path, options: TrainOptions, progress: Progress
) -> tuple[Vocabulary, np.ndarray, Any]:
    from medsearch.rerank.lexmatch import IdfTable

    done = work / "words.npz"
    if done.exists():
        with np.load(done, allow_pickle=False) as npz:
            words = [str(w) for w in npz["words"]]
            df_words = [str(w) for w in npz["df_words"]]
            idf = IdfTable(
                docs=int(npz["docs"]),
                df=dict(zip(df_words, npz["df"].tolist(), strict=True)),
                mean_abstract_words=float(npz["mean_words"]),
            )
            return Vocabulary({w: i for i, w in enumerate(words)}), npz["vectors"], idf
    corpus = work / "sentences.txt"
    idf, docs = write_sentences(searcher.store, corpus, sample=options.sample, progress=progress)
    progress.message(f"training word vectors on {docs:,} articles (word2vec skip-gram)")
    vocab, vectors = train_vectors(corpus, dim=options.config.dim, docs=docs, seed=options.seed)
    words = sorted(vocab.words, key=vocab.words.__getitem__)
    tmp = work / "words.partial.npz"
    np.savez(
        tmp,
        words=np.array(words),
        vectors=vectors,
        df_words=np.array(list(idf.df) or [""])[: len(idf.df)],
        df=np.array(list(idf.df.values()), dtype=np.int64),
        docs=idf.docs,
        mean_words=idf.mean_abstract_words,
    )
    tmp.replace(done)
    corpus.unlink(missing_ok=True)
    return vocab, vectors, idf


def _queries(searcher: Searcher, paths: Paths, options: TrainOptions) -> list[PseudoQuery]:
    kinds = [k for k in options.signals if k not in (CROSS, MARKS)]
    queries = _pseudo_queries(searcher, kinds, options)
    if not queries and options.fallback:
        queries = _pseudo_queries(searcher, list(options.fallback), options)
    if MARKS in options.signals:
        for text, gains in marklog.by_query(marklog.read(paths.signals_file)).items():
            queries.append(PseudoQuery(text, MARKS, tuple(gains.items())))
    return queries


def _pseudo_queries(
    searcher: Searcher, kinds: list[str], options: TrainOptions
) -> list[PseudoQuery]:
    if not kinds:
        return []
    every = sample_stride(searcher.store.count(), options.queries // len(kinds) + 1)
    sample = iter_sample(searcher.store, every)
    return list(pseudo_queries(sample, kinds, options.queries, options.seed))


def _examples(
    searcher: Searcher,
    paths: Paths,
    work: Path,
    options: TrainOptions,
    vocab: Vocabulary,
    idf: Any,
    progress: Progress,
) -> Any:
    """Every query's candidates featurised once, and the training pairs between them."""
    done = work / "examples.npz"
    if done.exists():
        return _read_examples(done)
    queries = _queries(searcher, paths, options)
    if not queries:
        raise UntrainableError(
            "no training queries: the corpus has no titles, keywords or abstract sentences"
            " to learn from and no marks were recorded"
        )
    rng = random.Random(options.seed)
    distil = CROSS in options.signals and searcher.cross is not None
    cfg = options.config
    doc_rows: list[np.ndarray] = []
    lex_rows: list[np.ndarray] = []
    query_ids = np.zeros((len(queries), cfg.query_words), dtype=np.int64)
    row_query: list[int] = []
    row_gain: list[float] = []
    pairs: list[tuple[int, int, float]] = []
    validation: list[int] = []
    validation_kind: list[str] = []
    kinds: dict[str, int] = {}
    progress.start("examples", "First-stage candidates for pseudo-queries", total=len(queries))
    for qi, query in enumerate(queries):
        progress.advance("examples")
        validating = held_out(query.text) and len(validation) < VALIDATION_MAX
        # held-out queries see what a search sees (the whole reranked depth); training
        # queries keep their graded documents and a sample of the rest as negatives
        depth = searcher.settings.delta_depth if validating else options.depth
        result = searcher.search(query.text, k=depth, syntax=False, rerank="none", snippets=False)
        known = dict(query.gains)
        pmids = [h.pmid for h in result.hits]
        if not validating:
            pmids += [p for p in known if p not in pmids]
            if distil and query.kind != MARKS:
                pmids = pmids[:DISTIL_DEPTH] + [p for p in known if p not in pmids[:DISTIL_DEPTH]]
            else:
                others = [p for p in pmids if p not in known]
                keep = set(rng.sample(others, k=min(len(others), options.negatives)))
                pmids = [p for p in pmids if p in known or p in keep]
        records = searcher.articles(pmids)
        pmids = [p for p in pmids if p in records]
        if len(pmids) < 2 or not any(p in known for p in pmids):
            continue
        docs = [
            hidden(records[p].title, records[p].abstract_text, query, source=p in known)
            for p in pmids
        ]
        gains = [known.get(p, 0.0) for p in pmids]
        if distil and query.kind != MARKS and not validating:
            assert searcher.cross is not None
            graded = cross_gains(np.asarray(searcher.cross.score_pairs(query.text, docs)))
            gains = [g if g > 0 else float(c) for g, c in zip(gains, graded, strict=True)]
        feats = featurise(query.text, docs, vocab, idf, cfg)
        base = len(row_gain)
        query_ids[qi, : len(feats.query_ids)] = feats.query_ids
        doc_rows.append(feats.doc_ids.astype(np.int32))
        lex_rows.append(feats.lex)
        row_query.extend([qi] * len(pmids))
        row_gain.extend(gains)
        kinds[query.kind] = kinds.get(query.kind, 0) + 1
        if validating:
            validation.append(qi)
            validation_kind.append(query.kind)
        else:
            pairs.extend(
                (base + a, base + b, w) for a, b, w in pairs_for(gains, options.negatives, rng)
            )
    progress.finish("examples")
    if not pairs:
        raise UntrainableError(
            "the pseudo-queries gave no training pairs (every candidate list was trivial)"
        )
    arrays = {
        "doc_ids": np.concatenate(doc_rows),
        "lex": np.concatenate(lex_rows),
        "query_ids": query_ids,
        "row_query": np.array(row_query, dtype=np.int64),
        "row_gain": np.array(row_gain, dtype=np.float32),
        "pairs": np.array(pairs, dtype=np.float64),
        "validation": np.array(validation, dtype=np.int64),
        "validation_kind": np.array(validation_kind, dtype=str),
        "kinds": np.array(kinds, dtype=object),
    }
    tmp = work / "examples.partial.npz"
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    tmp.replace(done)
    return _read_examples(done)


def _read_examples(path: Path) -> dict[str, Any]:
    """Every array in memory at once: an ``NpzFile`` re-reads an array on each access."""
    with np.load(path, allow_pickle=True) as npz:
        return {name: npz[name] for name in npz.files}


def _fit(
    ex: Any,
    vectors: np.ndarray,
    idf: Any,
    options: TrainOptions,
    work: Path,
    progress: Progress,
) -> tuple[dict[str, np.ndarray], int, dict[str, float]]:
    """Pairwise max-margin training with early stopping on held-out nDCG@10."""
    import torch

    from medsearch.training.net import DeltaNet, pairwise_loss

    torch.manual_seed(options.seed)
    net = DeltaNet(vectors, options.config)
    optimiser = torch.optim.Adam(net.parameters(), lr=options.lr, weight_decay=1e-5)
    doc_ids = torch.from_numpy(ex["doc_ids"].astype(np.int64))
    lex = torch.from_numpy(ex["lex"])
    qids = torch.from_numpy(ex["query_ids"])[torch.from_numpy(ex["row_query"])]
    pairs = ex["pairs"]
    first_epoch, best, best_state, stale = 0, -1.0, None, 0
    checkpoint = work / "checkpoint.pt"
    if checkpoint.exists():
        saved = torch.load(checkpoint, weights_only=False)
        net.load_state_dict(saved["net"])
        optimiser.load_state_dict(saved["optimiser"])
        first_epoch, best, best_state, stale = (
            saved["epoch"],
            saved["best"],
            saved["best_state"],
            saved["stale"],
        )
    steps = max(1, -(-len(pairs) // options.batch))
    progress.start("train", "Training the Delta reranker", total=options.epochs * steps)
    progress.update("train", completed=first_epoch * steps)
    rng = np.random.default_rng(options.seed)
    epoch = first_epoch
    for epoch in range(first_epoch, options.epochs):
        if stale >= 2:
            break
        net.train()
        order = rng.permutation(len(pairs))
        for s in range(steps):
            chunk = pairs[order[s * options.batch : (s + 1) * options.batch]]
            pos = torch.from_numpy(chunk[:, 0].astype(np.int64))
            neg = torch.from_numpy(chunk[:, 1].astype(np.int64))
            rows = torch.cat([pos, neg])
            out = net(doc_ids[rows], qids[rows], lex[rows])
            loss = pairwise_loss(
                out[: len(pos)], out[len(pos) :], torch.from_numpy(chunk[:, 2]).float()
            )
            optimiser.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            optimiser.step()
            progress.advance("train")
        scorer = DeltaScorer(options.config, Vocabulary({}), vectors, net.numpy_weights(), idf)
        score = _validate(_row_scorer(scorer, ex), ex, 1.0, judged_queries(ex)[0])
        if score > best:
            best, best_state, stale = score, net.numpy_weights(), 0
        else:
            stale += 1
        tmp = work / "checkpoint.partial.pt"
        torch.save(
            {
                "net": net.state_dict(),
                "optimiser": optimiser.state_dict(),
                "epoch": epoch + 1,
                "best": best,
                "best_state": best_state,
                "stale": stale,
            },
            tmp,
        )
        tmp.replace(checkpoint)
    progress.finish("train")
    assert best_state is not None
    return best_state, epoch + 1, {"delta": best}


def _row_scorer(scorer: DeltaScorer, ex: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Scores for one held-out query's rows, by the fast path a search uses."""

    def scores(rows: np.ndarray) -> np.ndarray:
        q = ex["query_ids"][int(ex["row_query"][rows[0]])]
        batch = Featurised(q[q != PAD], ex["doc_ids"][rows].astype(np.int64), ex["lex"][rows])
        return scorer.forward(batch)

    return scores


def judged_queries(ex: Any) -> tuple[np.ndarray, str]:
    """The held-out queries that judge the model, and which they are.

    Keyword and mark queries when there are :data:`FAIR_MIN` of them (see
    :data:`FAIR_KINDS`), else every held-out query: then the first stage is favoured and
    the model is kept only if it wins even so.
    """
    chosen = ex["validation"]
    kinds = ex.get("validation_kind")
    if kinds is not None and len(kinds) == len(chosen):
        fair = chosen[np.isin(kinds, FAIR_KINDS)]
        if len(fair) >= FAIR_MIN:
            found = sorted(set(kinds[np.isin(kinds, FAIR_KINDS)].tolist()))
            return fair, f"{len(fair)} held-out {' and '.join(found)} queries"
    return chosen, f"{len(chosen)} held-out queries of every kind"


def _validate(score_rows: Any, ex: Any, blend: float, queries: np.ndarray) -> float:
    """Mean nDCG@10 over held-out ``queries`` of the blended order (rows are first-stage
    order)."""
    row_query = ex["row_query"]
    gains = ex["row_gain"]
    results: list[float] = []
    for qi in queries:
        rows = np.flatnonzero(row_query == qi)
        if len(rows) < 2:
            continue
        order = blend_order(score_rows(rows), blend) if blend > 0 else list(range(len(rows)))
        results.append(ndcg_at(order, gains[rows].tolist()))
    return float(np.mean(results)) if results else 0.0


def _choose_blend(scorer: DeltaScorer, ex: Any) -> tuple[float, dict[str, float]]:
    """The blend of Delta and first-stage order that does best on held-out queries."""

    score = _row_scorer(scorer, ex)
    queries = judged_queries(ex)[0]
    found = {f"blend_{b}": _validate(score, ex, b, queries) for b in BLENDS}
    found["first_stage"] = found.pop("blend_0.0")
    best = max(BLENDS[1:], key=lambda b: found[f"blend_{b}"])
    if found[f"blend_{best}"] <= found["first_stage"]:
        best = 0.0
    return best, found
