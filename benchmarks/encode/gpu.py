"""The vector stage at the speed of the hardware: ingest end to end vs a bare forward.

    python -m benchmarks.encode gpu                       # GPU: 60K articles, BERT-base
    python -m benchmarks.encode gpu --articles 20000 --compile
    python -m benchmarks.encode gpu --tiny --articles 300 # any machine: tiny models, CPU

Builds a MedCPT-shaped model on the machine (random BERT-base weights, 12x768, with the
bert-base-uncased vocabulary bundled with the offline minilm model; ``--tiny``: the
test suite's tiny BERTs), writes PubMed XML from real text (the SciFact corpus in
../shared/data, cycled to ``--articles`` records), runs ``medsearch ingest --no-encode``
into a temporary home, then reports, in one run:

(a) the vector stage end to end (``run_vectors_stage``: articles and abstract
    sentences, the pipeline, Faiss adds and commits), articles/s and tokens/s;
(b) a bare forward pass (bf16 on CUDA, fp32 on CPU) over the same pre-tokenised,
    length-sorted, GPU-budgeted batches: the ceiling (a) is measured against; with
    ``--compile`` also ``torch.compile(dynamic=True)``, with ``--fp16`` also fp16;
(c) sentence-transformers over the same articles (bf16, batch 64, title + abstract),
    when installed;
(d) the rerank head: N (query, article) pairs at up to 512 tokens, the old way
    (score_pairs per chunk of 8) and in one call with cancellation between batches;
(g) sentence search over the sentences (a) wrote, re-scoring 100 / 400 / 1,600 PQ
    candidates: a whole query (PQ search, reading and splitting the candidates'
    abstracts, re-encoding them) and the re-encoding alone (the re-scoring cost
    on a GPU, beside the CPU's);

plus GPU utilisation sampled with nvidia-smi during (a) and peak GPU memory. Ratios are
against (b) and (c) from the same run. Writes the numbers as JSON to $OUT/gpu_encode.json
when $OUT is set (or to --json PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
SCIFACT = next(
    (
        root / "shared/data/beir/scifact/corpus.jsonl"
        for root in (REPO.parent, REPO)  # a worktree beside shared/, or a copy holding it
        if (root / "shared/data/beir/scifact/corpus.jsonl").exists()
    ),
    REPO.parent / "shared/data/beir/scifact/corpus.jsonl",
)

from tiny_models import WORDS, build_tiny_models, tiny_profile_for  # noqa: E402

from benchmarks.synth import article_xml  # noqa: E402
from medsearch.models.profiles import ModelProfile  # noqa: E402
from medsearch.progress import NullProgress  # noqa: E402


def corpus_texts(corpus: Path = SCIFACT) -> list[tuple[str, str]]:
    """SciFact (title, abstract) pairs, or synthetic ones where the corpus is absent."""
    if corpus.exists():
        with corpus.open(encoding="utf-8") as lines:
            rows = [json.loads(line) for line in lines]
        return [(r["title"], r["text"]) for r in rows if r["text"]]
    import random

    rng = random.Random(0)
    print("note: SciFact not found; synthetic text from the test vocabulary")
    return [
        (" ".join(rng.choices(WORDS, k=12)), " ".join(rng.choices(WORDS, k=220)) + ".")
        for _ in range(2000)
    ]


FILE_ARTICLES = 50_000  # records per XML file: a large run is ingested by parallel parsers


def write_xml(folder: Path, texts: list[tuple[str, str]], n: int) -> list[Path]:
    """``n`` PubMed records cycling through ``texts``, streamed to disk in files of
    :data:`FILE_ARTICLES` (PMIDs 1..n)."""
    files: list[Path] = []
    for first in range(0, n, FILE_ARTICLES):
        path = folder / f"pubmed26n{len(files) + 1:04d}.xml"
        with path.open("w", encoding="utf-8") as out:
            out.write('<?xml version="1.0" encoding="utf-8"?>\n<PubmedArticleSet>')
            for i in range(first, min(n, first + FILE_ARTICLES)):
                title, abstract = texts[i % len(texts)]
                out.write(article_xml(1 + i, title, abstract))
            out.write("\n</PubmedArticleSet>\n")
        files.append(path)
    return files


def build_profile(root: Path, tiny: bool, tokenizer: Path | None) -> ModelProfile:
    if tiny:
        return tiny_profile_for(build_tiny_models(root / "tiny"))
    from benchmarks.encode.cpu import build_base_profile

    return build_base_profile(root, tokenizer)


def write_config(home: Path, profile: ModelProfile) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[profiles.bench]\n"
        f'query_model = "{profile.query_model}"\n'
        f'article_model = "{profile.article_model}"\n'
        f'cross_model = "{profile.cross_model}"\n'
        'pooling = "cls"\n'
        'description = "random MedCPT-shaped BERT for benchmarks"\n',
        encoding="utf-8",
    )


class GpuSampler:
    """nvidia-smi utilisation and memory every 0.2 s, in a thread (None without a GPU)."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []  # (utilisation %, memory MiB)
        self.times: list[float] = []  # perf_counter of each sample
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GpuSampler:
        if shutil.which("nvidia-smi"):
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        query = [
            "nvidia-smi",
            "--query-gpu=utilization.gpu,memory.used",
            "--format=csv,noheader,nounits",
        ]
        while not self._stop.wait(0.2):
            out = subprocess.run(query, capture_output=True, text=True, check=False).stdout
            for line in out.strip().splitlines():
                util, mem = (float(v) for v in line.split(","))
                self.samples.append((util, mem))
                self.times.append(time.perf_counter())

    def util_between(self, windows: list[tuple[float, float]]) -> float | None:
        """Mean utilisation of the samples inside any of ``windows`` (perf_counter spans)."""
        inside = [
            u
            for t, (u, _) in zip(self.times, self.samples, strict=True)
            if any(a <= t <= b for a, b in windows)
        ]
        return sum(inside) / len(inside) if inside else None

    def summary(self) -> dict[str, Any] | None:
        if not self.samples:
            return None
        utils = [u for u, _ in self.samples]
        return {
            "util_mean_pct": sum(utils) / len(utils),
            "util_busy_share": sum(u >= 50 for u in utils) / len(utils),
            "memory_max_mib": max(m for _, m in self.samples),
            "samples": len(self.samples),
        }


def synchronize(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def timed(device: str, fn: Callable[[], object]) -> float:
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


class Timeline(NullProgress):
    """A progress sink that keeps when each kind started, wrote each chunk, and finished.

    From it, per kind: the *fill* (start to the first chunk written: the reader's first
    chunk, and compilation), the *steady* rate (articles written after the first chunk
    over the time to the last one) and the *tail* (the last chunk to the end: the final
    commit). At PubMed scale only the steady rates matter; fill and tail are paid once.
    """

    def __init__(self) -> None:
        super().__init__()
        self.events: dict[str, list[tuple[float, int]]] = {}

    def start(self, key: str, description: str, total: int | None = None) -> None:
        self.events[key] = [(time.perf_counter(), 0)]

    def advance(self, key: str, amount: int = 1) -> None:
        self.events.setdefault(key, []).append((time.perf_counter(), amount))

    def finish(self, key: str) -> None:
        self.events.setdefault(key, []).append((time.perf_counter(), 0))

    def steady_windows(self) -> list[tuple[float, float]]:
        """Per kind, from its first chunk written to its last (perf_counter)."""
        out = []
        for events in self.events.values():
            writes = [t for t, n in events if n]
            if len(writes) >= 2:
                out.append((writes[0], writes[-1]))
        return out

    def phases(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for key, events in self.events.items():
            writes = [(t, n) for t, n in events if n]
            if len(writes) < 2:
                continue
            (t0, _), (first, _), (last, _), (end, _) = events[0], writes[0], writes[-1], events[-1]
            steady = sum(n for _, n in writes[1:]) / max(last - first, 1e-9)
            out[key] = {
                "fill_s": first - t0,
                "steady_articles_per_s": steady,
                "tail_s": end - last,
            }
        return out


def stage_end_to_end(home: Path, device: str) -> dict[str, Any]:
    """(a): ``medsearch ingest``'s vector stage over the stored articles."""
    from ingest.encode_stage import run_vectors_stage
    from ingest.pipeline import Ingestor
    from medsearch.paths import Paths

    paths = Paths(home)
    timeline = Timeline()
    with Ingestor(paths, jobs=0) as ing, GpuSampler() as gpu:
        start = time.perf_counter()
        notes, encoded = run_vectors_stage(
            paths,
            ing.store,
            profile="bench",
            device=device,
            index_factory=None,
            embeddings=None,
            encode=True,
            progress=timeline,
        )
        seconds = time.perf_counter() - start
    phases = timeline.phases()
    steady = [p["steady_articles_per_s"] for p in phases.values()]
    summary = gpu.summary()
    if summary is not None:
        summary["steady_util_pct"] = gpu.util_between(timeline.steady_windows())
    return {
        "seconds": seconds,
        "articles": encoded,
        "notes": notes,
        "gpu": summary,
        "phases": phases,
        # articles and their sentences, one after the other, at the steady rates
        "steady_articles_per_s": 1 / sum(1 / r for r in steady) if steady else None,
    }


def shared_stream_stage(home: Path, device: str) -> dict[str, Any]:
    """(a'') the stage as it ran before placement got a CUDA stream of its own: the
    writer's lists and codes queued behind the encoder's forward passes."""
    from ingest import encode_stage
    from medsearch.index.vectors.coarse import TorchCoarse

    own_stream = encode_stage.coarse_for
    encode_stage.coarse_for = partial(TorchCoarse, side_stream=False)
    try:
        return stage_end_to_end(home, device)
    finally:
        encode_stage.coarse_for = own_stream


def corpus_tokens(profile: ModelProfile, source: list[tuple[str, str]], n: int) -> int:
    """Tokens the stage encodes for ``n`` articles cycling through ``source`` (articles at
    <= 512, their sentences at <= 64): one pass of the tokenizer over ``source``."""
    from medsearch.models.backbone import load_backbone, tokenize
    from medsearch.sentences import split_sentences

    path = Path(profile.article_model)
    backbone = load_backbone(str(path), path, kind="encoder", device="cpu", dtype="float32")
    pairs = tokenize(backbone, [t for t, _ in source], [a for _, a in source], 512)["input_ids"]
    per_article = [len(ids) for ids in pairs]
    for i, (_, abstract) in enumerate(source):
        sentences = split_sentences(abstract)
        if sentences:
            ids = tokenize(backbone, sentences, None, 64)["input_ids"]
            per_article[i] += sum(len(x) for x in ids)
    cycles, rest = divmod(n, len(source))
    return cycles * sum(per_article) + sum(per_article[:rest])


def bare_forward(
    profile: ModelProfile,
    device: str,
    texts: list[tuple[str, str]],
    sentences: list[str],
    *,
    dtype: str,
    compile_model: bool,
    budget_tokens: int | None = None,
) -> dict[str, Any]:
    """(b): the encoder alone over pre-tokenised, padded, budgeted batches.

    ``budget_tokens``: a GPU token budget other than the default (rows scale with it)."""
    import torch

    from medsearch.models.backbone import load_backbone, prepare_batches, to_device, tokenize
    from medsearch.models.batching import GPU_BATCH_TOKENS, GPU_MAX_ROWS, TokenBudget, budget_for

    path = Path(profile.article_model)
    backbone = load_backbone(str(path), path, kind="encoder", device=device, dtype=dtype)
    model: Any = backbone.model
    if compile_model:
        model = torch.compile(model, dynamic=True)
    result: dict[str, Any] = {"dtype": dtype, "compiled": compile_model, "budget": budget_tokens}
    config = getattr(backbone.model, "config", None)  # the CPU's LeanBert has none
    result["attention"] = getattr(config, "_attn_implementation", type(backbone.model).__name__)
    cases = {
        "articles": ([t for t, _ in texts], [a for _, a in texts], 512),
        "sentences": (sentences, None, 64),
    }
    for kind, (first, second, max_length) in cases.items():
        features = tokenize(backbone, first, second, max_length)
        budget = budget_for(device, batch_size=64 if device != "cpu" else 16, max_length=max_length)
        if budget_tokens is not None:
            rows = max(1, GPU_MAX_ROWS * budget_tokens // GPU_BATCH_TOKENS)
            budget = TokenBudget(tokens=budget_tokens, rows=rows, multiple=budget.multiple)
        batches = prepare_batches(backbone, features, budget)
        tokens = sum(b.tokens for b in batches)
        names = ["input_ids", "token_type_ids", "attention_mask"]

        def run(batches: list[Any] = batches, names: list[str] = names) -> None:
            with torch.inference_mode():
                for batch in batches:
                    model(**to_device(batch.arrays, device, names)).last_hidden_state[:, 0].float()

        run(batches[:2])  # warm-up (and compilation, for the first shapes)
        seconds = timed(device, run)
        result[kind] = {
            "items": len(first),
            "tokens": tokens,
            "batches": len(batches),
            "seconds": seconds,
            "items_per_s": len(first) / seconds,
            "tokens_per_s": tokens / seconds,
        }
    if device.startswith("cuda"):
        result["max_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return result


def sentence_transformers_articles(
    profile: ModelProfile, device: str, texts: list[tuple[str, str]]
) -> dict[str, Any] | None:
    """(c): sentence-transformers over the same articles, as a user would run it."""
    try:
        from sentence_transformers import SentenceTransformer, models
    except ImportError:
        return None
    import torch

    kwargs = {"torch_dtype": torch.bfloat16} if device.startswith("cuda") else {}
    word = models.Transformer(profile.article_model, max_seq_length=512, model_args=kwargs)
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="cls")
    st = SentenceTransformer(modules=[word, pooling], device=device)
    joined = [f"{t} {a}" for t, a in texts]
    st.encode(joined[:64], batch_size=64)
    seconds = timed(device, lambda: st.encode(joined, batch_size=64))
    return {"seconds": seconds, "articles_per_s": len(joined) / seconds, "batch": 64}


def rerank_head(
    profile: ModelProfile, device: str, texts: list[tuple[str, str]], n: int
) -> dict[str, Any]:
    """(d): N pairs the old way (chunks of 8) and in one call with cancellation checks."""
    import numpy as np

    from medsearch.models.cross import load_cross_encoder

    cross = load_cross_encoder(profile, device=device)
    assert cross is not None
    query = "does tocilizumab reduce mortality in severe covid-19 pneumonia"
    docs = texts[:n]

    def chunks_of_8() -> np.ndarray:
        return np.concatenate([cross.score_pairs(query, docs[i : i + 8]) for i in range(0, n, 8)])

    def one_call() -> np.ndarray:
        return cross.score_pairs(query, docs, is_cancelled=lambda: False)

    one_call()
    olds, news = [], []
    for _ in range(5):  # alternated, best of 5: a shared machine's load comes and goes
        olds.append(timed(device, chunks_of_8))
        news.append(timed(device, one_call))
    old, new = min(olds), min(news)
    return {
        "pairs": n,
        "quantized": cross.quantized,
        "chunks_of_8_ms": old * 1e3,
        "one_call_ms": new * 1e3,
    }


def sentence_search(
    home: Path, device: str, texts: list[tuple[str, str]], candidates: tuple[int, ...]
) -> dict[str, Any]:
    """(g): sentence search at each candidate count, p50 of 10 queries, and the
    re-encoding of that many sentences alone (best of 5)."""
    import numpy as np

    from medsearch.paths import Paths
    from medsearch.retrieval import neighbours
    from medsearch.retrieval.searcher import open_searcher
    from medsearch.sentences import split_sentences

    pool = [s for _, abstract in texts[:400] for s in split_sentences(abstract)]
    searcher = open_searcher(Paths(home), device=device, load=True)
    try:
        dense = searcher.dense
        assert dense is not None and dense.sentences is not None
        fits = [
            q for q in pool[::37] if dense.encoder.query_tokens(q) <= dense.encoder.query_max_length
        ]
        queries = fits[:10]
        out: dict[str, Any] = {"sentences": len(dense.sentences), "exact": dense.sentences.exact}
        for c in candidates:
            dense.sentence_candidates = c
            neighbours.sentences(searcher, queries[0], k=10)  # warm: lists, records, kernels
            whole = [
                timed(device, partial(neighbours.sentences, searcher, q, k=10)) for q in queries
            ]
            batch = [pool[i % len(pool)] for i in range(c)]
            reencode = partial(dense.encoder.encode_sentences, batch)
            encode = min(timed(device, reencode) for _ in range(5))
            out[str(c)] = {
                "query_p50_ms": 1e3 * float(np.median(whole)),
                "reencode_ms": 1e3 * encode,
            }
        return out
    finally:
        searcher.close()


def host_costs(home: Path, profile: ModelProfile, device: str) -> dict[str, float]:
    """(e): the stage's host-side work, each part alone in one thread, in seconds.

    What the reader thread does per chunk (fetch, split, tokenise, pad) and what the
    writer does (Faiss adds, the commit), so a stage slower than its devices shows
    which part to move off the critical path.
    """
    import numpy as np

    from ingest.encode_chunks import SENTENCES
    from ingest.encode_readers import GPU_CHUNK
    from ingest.encode_stage import coarse_for, open_collections
    from ingest.encoded import fetch, stale_pmids
    from medsearch.models.backbone import prepare_batches, tokenize
    from medsearch.models.batching import budget_for
    from medsearch.models.encoders import load_encoder
    from medsearch.paths import Paths
    from medsearch.sentences import article_sentences
    from medsearch.store import Store

    paths = Paths(home)
    out: dict[str, float] = {}

    def clock(name: str, fn: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        value = fn()
        out[name] = time.perf_counter() - start
        return value

    store = Store(paths.store, readonly=True)
    try:
        chunks = clock(
            "fetch",
            lambda: [
                fetch(store, p) for p in stale_pmids(store, SENTENCES, "bench", batch=GPU_CHUNK)
            ],
        )
    finally:
        store.close()
    articles = [a for chunk in chunks for a in chunk]
    split = clock("split", lambda: [article_sentences(a) for a in articles])
    texts = [s.text for sents in split for s in sents]
    encoder = load_encoder(profile, device="cpu", paths=paths)
    backbone = encoder._backbone("query")
    feats = clock("tokenize_sentences", lambda: tokenize(backbone, texts, None, 64))
    budget = budget_for(device, batch_size=64, max_length=64)
    clock("pad_sentences", lambda: prepare_batches(backbone, feats, budget))
    clock(
        "tokenize_articles",
        lambda: tokenize(
            backbone, [a.title for a in articles], [a.abstract_text for a in articles], 512
        ),
    )
    ids = np.array([s.sentence_id for sents in split for s in sents], dtype=np.int64)
    vectors = np.random.default_rng(0).standard_normal((len(ids), encoder.dim), np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        _, sentences = open_collections(
            Paths(Path(tmp)), "bench", encoder.dim, coarse=coarse_for(device)
        )
        step = 70_000

        def add(offset: int) -> None:
            for i in range(0, len(ids), step):
                sentences.add(ids[i : i + step] + offset, vectors[i : i + step])

        clock("sentence_adds_exact", lambda: add(0))
        clock("sentence_commit_convert", sentences.commit)  # exact -> IVF-PQ, trained
        clock("sentence_adds_ivf", lambda: add(10**12))  # the steady state: placed in lists
        clock("sentence_commit_part", sentences.commit)
        sentences.close()
    out["sentences"] = float(len(texts))
    return out


def placement(device: str, n: int = 200_000, nlist: int = 16_384) -> dict[str, float]:
    """(f): placing vectors in PubMed's 16,384 lists (768-d IVF-PQ96), per second:
    Faiss on the CPU vs the encoding device (:mod:`medsearch.index.vectors.coarse`)."""
    import faiss
    import numpy as np

    from ingest.encode_stage import coarse_for
    from medsearch.index.vectors import coarse as cq
    from medsearch.index.vectors.ivf_parts import ivfpq_with

    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, 768), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    out: dict[str, float] = {"vectors": float(n), "lists": float(nlist)}
    device_coarse = coarse_for(device)
    start = time.perf_counter()
    centroids = device_coarse.kmeans(x, nlist, niter=10, seed=1, spherical=True)
    out[f"kmeans_{device_coarse.name}_s"] = time.perf_counter() - start
    pq = faiss.ProductQuantizer(768, 96, 8)
    start = time.perf_counter()
    pq.train(x[:65_536])
    out["pq_train_cpu_s"] = time.perf_counter() - start
    for coarse in (device_coarse, cq.CPU):
        quantizer = faiss.IndexFlatIP(768)
        quantizer.add(centroids)
        index = ivfpq_with(quantizer, pq, 64, by_residual=False)
        count = n if coarse is not cq.CPU else n // 10  # the CPU is slow: a tenth will do
        cq.add_with_ids(index, x[:1000], np.arange(1000), coarse)  # warm-up (copies)
        start = time.perf_counter()
        cq.add_with_ids(index, x[:count], np.arange(count), coarse)
        out[f"adds_per_s_{coarse.name}"] = count / (time.perf_counter() - start)
    return out


def with_rates(stage: dict[str, Any], tokens: int, articles: int) -> dict[str, Any]:
    """A stage's result with its tokens and rates, end to end and steady."""
    stage["tokens"] = tokens
    stage["articles_per_s"] = articles / stage["seconds"]
    stage["tokens_per_s"] = tokens / stage["seconds"]
    if stage["steady_articles_per_s"]:
        stage["steady_tokens_per_s"] = tokens / articles * stage["steady_articles_per_s"]
    return stage


def print_stage(label: str, stage: dict[str, Any]) -> None:
    print(
        f"{label}: {stage['seconds']:.1f} s, {stage['articles_per_s']:,.0f} articles/s"
        f" (with their sentences), {stage['tokens_per_s'] / 1e6:.3f}M tokens/s"
    )
    for note in stage["notes"]:
        print(f"      {note}")
    for kind, p in stage["phases"].items():
        print(
            f"      {kind}: fill {p['fill_s']:.1f} s, steady {p['steady_articles_per_s']:,.0f}"
            f" articles/s, tail {p['tail_s']:.1f} s"
        )
    if stage.get("steady_tokens_per_s"):
        print(
            f"      steady, both kinds: {stage['steady_articles_per_s']:,.0f} articles/s,"
            f" {stage['steady_tokens_per_s'] / 1e6:.3f}M tokens/s"
        )
    if stage["gpu"]:
        g = stage["gpu"]
        print(
            f"      GPU utilisation mean {g['util_mean_pct']:.0f}%"
            + (
                f" ({g['steady_util_pct']:.0f}% while steady)"
                if g.get("steady_util_pct") is not None
                else ""
            )
            + ","
            f" >=50% in {100 * g['util_busy_share']:.0f}% of samples,"
            f" memory max {g['memory_max_mib']:,.0f} MiB"
        )
    else:
        print("      GPU utilisation: no nvidia-smi (CPU run)")


def print_bare(b: dict[str, Any], n_articles: int) -> None:
    secs = b["articles"]["seconds"] + b["sentences"]["seconds"]
    arts, sents = b["articles"], b["sentences"]
    label = f"{b['dtype']}{', compiled' if b['compiled'] else ''}, {b['attention']}"
    both = (arts["tokens"] + sents["tokens"]) / secs
    print(
        f"(b) bare forward ({label}), {n_articles:,} articles:"
        f" articles {arts['items_per_s']:,.0f}/s"
        f" ({arts['tokens_per_s'] / 1e6:.3f}M tok/s), sentences"
        f" {sents['items_per_s']:,.0f}/s ({sents['tokens_per_s'] / 1e6:.3f}M tok/s);"
        f" both: {n_articles / secs:,.0f} articles/s, {both / 1e6:.3f}M tok/s"
    )


def machine(device: str) -> str:
    import torch

    if device.startswith("cuda") or (device == "auto" and torch.cuda.is_available()):
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        return f"{', '.join(names)}; {os.cpu_count()} CPU cores"
    return f"CPU only, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--articles", type=int, default=60_000)
    parser.add_argument("--tiny", action="store_true", help="the tests' tiny BERTs (any machine)")
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N,M")
    parser.add_argument("--compile", action="store_true", help="also torch.compile(dynamic=True)")
    parser.add_argument("--fp16", action="store_true", help="also a float16 bare forward")
    parser.add_argument(
        "--budget-sweep",
        action="store_true",
        help="also the eager bare forward at 64K-256K-token budgets (a third of the articles)",
    )
    parser.add_argument(
        "--bare-articles",
        type=int,
        default=None,
        help="run (b) and (c) on the first N articles only (the stage always does all)",
    )
    parser.add_argument(
        "--compile-stage",
        action="store_true",
        help="also (a) again with MEDSEARCH_TORCH_COMPILE=1, compilation included",
    )
    parser.add_argument(
        "--shared-stream-stage",
        action="store_true",
        help="also (a) again with list placement on the encoders' CUDA stream (the old way)",
    )
    parser.add_argument("--rerank-pairs", type=int, default=None, help="default 100 GPU, 8 CPU")
    parser.add_argument("--skip-st", action="store_true", help="skip sentence-transformers")
    parser.add_argument(
        "--memory-fraction",
        type=float,
        default=None,
        help="cap each GPU's memory (e.g. 0.03) to watch out-of-memory back-off in (a)",
    )
    parser.add_argument("--rerank-only", action="store_true", help="only (d), on --device")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--host-costs", action="store_true", help="also (e): host-side parts")
    parser.add_argument("--skip-rerank", action="store_true", help="skip (d)")
    parser.add_argument("--skip-sentence-search", action="store_true", help="skip (g)")
    parser.add_argument("--placement", action="store_true", help="also (f): IVF placement")
    parser.add_argument(
        "--tokenizer",
        type=Path,
        default=None,
        help="a saved bert-base-uncased tokenizer (default: the offline minilm package's)",
    )
    parser.add_argument(
        "--corpus", type=Path, default=SCIFACT, help="BEIR corpus.jsonl (default: SciFact)"
    )
    args = parser.parse_args()
    from medsearch.models.device import pick_device

    device = pick_device("cuda" if args.device.startswith("cuda") else args.device)
    first_device = device if not device.startswith("cuda") else "cuda:0"
    gpu = first_device.startswith("cuda")
    dtype = "bfloat16" if gpu else "float32"
    report: dict[str, Any] = {"machine": machine(device), "device": args.device, "tiny": args.tiny}
    model = "tiny" if args.tiny else "BERT-base (random)"
    print(f"machine: {report['machine']}; --device {args.device}; model: {model}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        profile = build_profile(root / "models", args.tiny, args.tokenizer)
        if args.rerank_only:
            for n in (args.rerank_pairs or (100 if gpu else 8),):
                r = rerank_head(profile, first_device, corpus_texts(args.corpus), n)
                print(json.dumps(r))
            return
        home = root / "home"
        write_config(home, profile)
        source = corpus_texts(args.corpus)
        texts = [source[i % len(source)] for i in range(args.articles)]
        (root / "xml").mkdir()
        files = write_xml(root / "xml", source, args.articles)
        from ingest.pipeline import Ingestor
        from medsearch.paths import Paths
        from medsearch.sentences import split_sentences

        cores = os.cpu_count() or 1
        jobs = min(8, cores - 2, len(files)) if cores >= 4 and len(files) > 1 else 0
        with Ingestor(Paths(home), jobs=jobs) as ing:
            assert ing.run(files).ok
        stage_tokens = corpus_tokens(profile, source, args.articles)
        print(f"corpus: {len(texts):,} articles, {stage_tokens / 1e6:.1f}M tokens to encode")
        if args.bare_articles:
            texts = texts[: args.bare_articles]  # the bare forward's share; the stage does all
        sentences = [s for _, a in texts for s in split_sentences(a)]
        bare = bare_forward(
            profile, first_device, texts, sentences, dtype=dtype, compile_model=False
        )
        report["bare"] = [bare]
        print_bare(bare, len(texts))
        if args.fp16 and gpu:
            report["bare"].append(
                bare_forward(
                    profile, first_device, texts, sentences, dtype="float16", compile_model=False
                )
            )
        if args.budget_sweep and gpu:
            # A third of the articles is plenty to compare budgets on the same batches.
            few = texts[: max(1, len(texts) // 3)]
            few_sentences = [s for _, a in few for s in split_sentences(a)]
            report["sweep"] = [
                bare_forward(
                    profile,
                    first_device,
                    few,
                    few_sentences,
                    dtype=dtype,
                    compile_model=False,
                    budget_tokens=tokens,
                )
                for tokens in (65_536, 131_072, 262_144)
            ]
        if args.memory_fraction and gpu:
            import torch

            torch.cuda.empty_cache()  # else the bare forward's cached blocks serve the stage
            for i in range(torch.cuda.device_count()):
                torch.cuda.set_per_process_memory_fraction(args.memory_fraction, i)
        if args.placement:
            report["placement"] = placement(first_device)
            print("(f) IVF placement at 16,384 lists:", json.dumps(report["placement"]))
        if args.host_costs:
            report["host"] = host_costs(home, profile, first_device)
            print("(e) host-side parts, one thread each (s):", json.dumps(report["host"]))
        if args.compile_stage:  # the same stored articles, for a second, compiled stage
            shutil.copytree(home, root / "home-compiled")
        if args.shared_stream_stage:
            shutil.copytree(home, root / "home-shared")
        stage = stage_end_to_end(home, args.device)
        report["stage"] = with_rates(stage, stage_tokens, args.articles)
        print_stage("(a) vector stage, end to end", report["stage"])
        if args.shared_stream_stage and gpu:
            shared = shared_stream_stage(root / "home-shared", args.device)
            report["stage_shared_stream"] = with_rates(shared, stage_tokens, args.articles)
            label = "(a'') the same stage, list placement on the encoders' stream (before)"
            print_stage(label, report["stage_shared_stream"])
        if not args.skip_sentence_search:
            report["sentence_search"] = sentence_search(
                home, first_device, source, (100, 400, 1600) if gpu else (100, 400)
            )
            print(
                "(g) sentence search, re-scored candidates:", json.dumps(report["sentence_search"])
            )
        if args.compile_stage:
            # Before the compiled bare forward, so this stage pays its own compilation.
            from medsearch.models.backbone import COMPILE_ENV

            os.environ[COMPILE_ENV] = "1"
            compiled = stage_end_to_end(root / "home-compiled", args.device)
            os.environ.pop(COMPILE_ENV)
            report["stage_compiled"] = with_rates(compiled, stage_tokens, args.articles)
            label = "(a') the same stage, MEDSEARCH_TORCH_COMPILE=1 (compilation included)"
            print_stage(label, report["stage_compiled"])
        if args.compile:
            report["bare"].append(
                bare_forward(
                    profile, first_device, texts, sentences, dtype=dtype, compile_model=True
                )
            )
            print_bare(report["bare"][-1], len(texts))
        report["sentence_transformers"] = (
            None if args.skip_st else sentence_transformers_articles(profile, first_device, texts)
        )
        report["rerank"] = (
            None
            if args.skip_rerank
            else rerank_head(
                profile, first_device, source, args.rerank_pairs or (100 if gpu else 8)
            )
        )

    print_report(report)
    out = args.json or (
        Path(os.environ["OUT"]) / "gpu_encode.json" if os.environ.get("OUT") else None
    )
    if out is not None:
        out.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
        print(f"wrote {out}")


def print_report(report: dict[str, Any]) -> None:
    """The ratios, last (the stage and bare lines were printed as each part finished)."""
    bare = report["bare"][0]
    bare_seconds = bare["articles"]["seconds"] + bare["sentences"]["seconds"]
    ceiling = (bare["articles"]["tokens"] + bare["sentences"]["tokens"]) / bare_seconds
    for key in ("stage", "stage_shared_stream", "stage_compiled"):
        if (s := report.get(key)) is not None:
            steady = s.get("steady_tokens_per_s")
            print(
                f"    {key} / eager bare forward: x{s['tokens_per_s'] / ceiling:.2f} end to end"
                + (f", x{steady / ceiling:.2f} steady" if steady else "")
                + f" (ceiling {ceiling / 1e6:.3f}M tokens/s)"
            )
    for b in report.get("sweep") or []:
        arts, sents = b["articles"], b["sentences"]
        print(
            f"(b') budget {b['budget']:,} tokens: articles {arts['tokens_per_s'] / 1e6:.3f}M"
            f" tok/s ({arts['batches']} batches), sentences {sents['tokens_per_s'] / 1e6:.3f}M"
            f" tok/s ({sents['batches']} batches)"
        )
    st = report["sentence_transformers"]
    if st is None:
        print("(c) sentence-transformers: skipped (not installed, or --skip-st)")
    else:
        ours = bare["articles"]["items"] / bare["articles"]["seconds"]
        print(
            f"(c) sentence-transformers, articles only, batch 64: {st['articles_per_s']:,.0f}"
            f" articles/s; bare forward's articles are x{ours / st['articles_per_s']:.2f} of it"
        )
    r = report["rerank"]
    if r is None:
        return
    kind = "int8" if r["quantized"] else "full precision"
    print(
        f"(d) rerank {r['pairs']} pairs ({kind}): chunks of 8 {r['chunks_of_8_ms']:.1f} ms,"
        f" one call {r['one_call_ms']:.1f} ms (x{r['chunks_of_8_ms'] / r['one_call_ms']:.2f})"
    )


if __name__ == "__main__":
    main()
