"""Long queries: what bounding their cost (``WordBudget``) costs in quality and saves in time.

tantivy scores every posting of every (word, field) term of a ranked query, so a query
costs about the postings of its words, and a pasted paragraph or a citation sentence
(``medsearch cite``) has many common ones. ``WordBudget`` keeps the rarest words of a run
past ``min_words`` while their postings stay within a multiple of the index's documents.

Quality, on real text, for each budget (``none`` = every word ranks):

* SciFact test claims over the 5,183 SciFact abstracts (the ``weights`` mode's harness):
  nDCG@10 and recall@100, and how many claims lost a word;
* BIOSSES partner sentences: the 200 sentences (citation sentences from biomedical
  papers, 12-60 words) are added to the SciFact abstracts as documents, and each
  sentence of a pair the annotators scored >= 3 (of 4) must find its partner: MRR@10
  and recall@10 against the partner, the closest thing to a judged citation-sentence
  query we have.

Speed, on a synthetic index (``--dir``, e.g. a 10M-document index from
``python -m benchmarks.lexical shards``; built with ``--docs`` when the folder is empty):
queries of 3 to 200 words drawn from the corpus' own Zipf law, each run with every
word and with the default budget, interleaved, top-1000: p50 / p95 ms and the words left
out. Synthetic words have no topic, so the overlap of the two rankings printed there
says how much the budget changes, not whether it harms: the real-text part says that.

    python -m benchmarks.lexical long [--data ../shared/data] [--dir DIR] [--docs N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.lexical.latency import VOCAB_SIZE
from benchmarks.lexical.weights import evaluate, load_corpus, load_queries
from benchmarks.synth import ZIPF_EXPONENT, pseudo_vocabulary
from medsearch.index.lexical.index import LexicalIndex
from medsearch.index.lexical.query import Ranking, WordBudget
from medsearch.index.lexical.shards import ShardedLexicalIndex, is_sharded
from medsearch.records import AbstractSection, Article

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
BUDGETS: dict[str, Ranking] = {
    "none": Ranking(budget=None),
    **{f"{b:g} x docs": Ranking(budget=WordBudget(postings=b)) for b in (8.0, 4.0, 2.0, 1.0, 0.5)},
}
BIOSSES_BASE = 10**9  # document ids of the BIOSSES sentences, past every SciFact id
SIMILAR = 3.0  # annotators' mean score (0-4) for a pair to count as partners
LENGTHS = (3, 5, 10, 20, 40, 80, 200)
K = 1000


def biosses_pairs(path: Path) -> list[tuple[str, str]]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [(r["sentence1"], r["sentence2"]) for r in rows if r["score"] >= SIMILAR]


def partner_scores(index: LexicalIndex, pairs: list[tuple[str, str]], ranking: Ranking) -> dict:
    """Each sentence of a pair finds the other among all documents: MRR@10, recall@10."""
    reciprocal, found, cut = [], 0, 0
    for n, (first, second) in enumerate(pairs):
        for query, partner in ((first, 2 * n + 1), (second, 2 * n)):
            result = index.search(query, k=11, syntax=False, snippets=0, ranking=ranking)
            ids = [h.pmid - BIOSSES_BASE for h in result.hits]
            ids = [i for i in ids if i != (partner ^ 1)][:10]  # not the query sentence itself
            rank = ids.index(partner) + 1 if partner in ids else 0
            reciprocal.append(1 / rank if rank else 0.0)
            found += rank > 0
            cut += bool(result.dropped)
    queries = 2 * len(pairs)
    return {"mrr@10": sum(reciprocal) / queries, "recall@10": found / queries, "cut": cut}


def claims_cut(index: LexicalIndex, queries: dict[str, str], ranking: Ranking) -> int:
    return sum(
        bool(index.search(q, k=1, syntax=False, snippets=0, ranking=ranking).dropped)
        for q in queries.values()
    )


def quality(data: Path) -> None:
    scifact = data / "beir" / "scifact"
    articles = load_corpus(scifact)
    queries, qrels = load_queries(scifact)
    pairs = biosses_pairs(data / "sts" / "biosses" / "biosses.jsonl")
    sentences = [s for pair in pairs for s in pair]
    extra = [
        Article(pmid=BIOSSES_BASE + i, abstract=(AbstractSection(s),))
        for i, s in enumerate(sentences)
    ]
    words = [len(s.split()) for s in sentences]
    print(
        f"SciFact: {len(articles):,} abstracts, {len(queries)} test claims; BIOSSES: "
        f"{len(pairs)} pairs scored >= {SIMILAR:g}, sentences of {min(words)}-{max(words)} "
        f"words (median {statistics.median(words):g})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        index = LexicalIndex.open(Path(tmp) / "lexical")
        index.upsert([*articles, *extra])
        index.commit()
        print(
            f"{'budget':>10} | {'claims nDCG@10':>14} {'R@100':>7} {'cut':>5} |"
            f" {'partners MRR@10':>15} {'R@10':>6} {'cut':>5}"
        )
        for name, ranking in BUDGETS.items():
            claims = evaluate(index, queries, qrels, ranking)
            cut = claims_cut(index, queries, ranking)
            partners = partner_scores(index, pairs, ranking)
            print(
                f"{name:>10} | {claims['ndcg@10']:14.4f} {claims['recall@100']:7.4f}"
                f" {cut:5d} | {partners['mrr@10']:15.4f} {partners['recall@10']:6.4f}"
                f" {partners['cut']:5d}"
            )
        index.close()


def speed(path: Path, docs: int, queries: int, seed: int) -> None:
    if is_sharded(path):
        index: LexicalIndex = ShardedLexicalIndex.open_shards(path)
    else:
        index = LexicalIndex.open(path)
        if index.count() == 0:
            from benchmarks.lexical.latency import build

            build(path, docs, seed, "fast")
    vocab = pseudo_vocabulary(VOCAB_SIZE, seed)
    weights = 1.0 / np.arange(1, VOCAB_SIZE + 1, dtype=np.float64) ** ZIPF_EXPONENT
    rng = random.Random(seed + 1)
    every, bounded = BUDGETS["none"], Ranking()
    print(f"{index.count():,} documents; top-{K}, p50 / p95 ms, each query both ways")
    print(
        f"{'words':>5} | {'every word':>15} | {'budget (default)':>16} | {'left out':>8}"
        f" | top-100 shared"
    )
    for length in LENGTHS:
        texts = [" ".join(rng.choices(vocab, weights=weights, k=length)) for _ in range(queries)]
        for text in texts[:2]:  # warm the page cache for both
            index.search(text, k=K, snippets=0, syntax=False, ranking=every)
        times: dict[str, list[float]] = {"every": [], "bounded": []}
        left_out, shared = [], []
        for i, text in enumerate(texts):
            order = [("every", every), ("bounded", bounded)]
            if i % 2:
                order.reverse()  # neither goes first every time
            got = {}
            for name, ranking in order:
                started = time.perf_counter()
                got[name] = index.search(text, k=K, snippets=0, syntax=False, ranking=ranking)
                times[name].append((time.perf_counter() - started) * 1000)
            left_out.append(len(got["bounded"].dropped))
            a = {h.pmid for h in got["every"].hits[:100]}
            b = {h.pmid for h in got["bounded"].hits[:100]}
            shared.append(len(a & b) / max(1, len(a)))
        print(
            f"{length:5d} | {_p(times['every']):>15} | {_p(times['bounded']):>16} |"
            f" {statistics.mean(left_out):8.1f} | {statistics.mean(shared):.2f}"
        )


def _p(ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):6.1f} / {p95:6.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--dir", type=Path, help="synthetic index for the speed part")
    parser.add_argument("--docs", type=int, default=200_000, help="to build --dir when empty")
    parser.add_argument("--queries", type=int, default=20, help="per query length")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if (args.data / "beir" / "scifact").is_dir():
        quality(args.data)
    else:
        print(f"no SciFact under {args.data}: quality part skipped")
    if args.dir is not None:
        speed(args.dir, args.docs, args.queries, args.seed)


if __name__ == "__main__":
    main()
