"""What the vector stage's reader thread costs per article, part by part.

    nice -n 5 python -m benchmarks.reader BEIR_DIR [--home H] [--chunk 512]

The reader feeds every GPU: it fetches and decodes records, splits abstract sentences
(Python, under the GIL) and tokenises and pads them (the ``tokenizers`` batch API: Rust,
parallel over the cores, outside the GIL). If it is slower than the GPUs, they wait.
This ingests a BEIR corpus (SciFact: 5,183 abstracts) into the eval cache and times each
part over every article with the minilm tokenizer, against the whole chunk as the
reader does it (the reference, same run).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ingest.encoded import fetch, stale_pmids
from medsearch.evaluate import build_collection
from medsearch.models.encoders import load_encoder
from medsearch.models.profiles import get_profile
from medsearch.paths import Paths
from medsearch.progress import NullProgress
from medsearch.sentences import article_sentences
from medsearch.store import Store


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("beir_dir", type=Path)
    parser.add_argument("--home", type=Path, default=None)
    parser.add_argument("--chunk", type=int, default=512)
    args = parser.parse_args(argv)
    paths = Paths.resolve(args.home).ensure()
    home, _, _ = build_collection(
        args.beir_dir, paths, profile=None, encode=False, progress=NullProgress()
    )
    encoder = load_encoder(get_profile("minilm", paths), device="cpu", paths=paths)
    store = Store(home.store, readonly=True)
    batches = list(stale_pmids(store, "sentences", "bench-reader", batch=args.chunk))
    parts = dict.fromkeys(("fetch + decode", "split sentences", "tokenise + pad"), 0.0)
    article_parts = dict.fromkeys(("fetch + decode", "tokenise + pad"), 0.0)
    sentences = 0
    for pmids in batches:
        t0 = time.perf_counter()
        articles = fetch(store, pmids)
        t1 = time.perf_counter()
        texts = [s.text for a in articles for s in article_sentences(a)]
        t2 = time.perf_counter()
        encoder.prepare_sentences(texts)
        t3 = time.perf_counter()
        encoder.prepare_articles([(a.title, a.abstract_text) for a in articles])
        t4 = time.perf_counter()
        sentences += len(texts)
        for name, seconds in zip(parts, (t1 - t0, t2 - t1, t3 - t2), strict=True):
            parts[name] += seconds
        article_parts["fetch + decode"] += t1 - t0
        article_parts["tokenise + pad"] += t4 - t3
    store.close()
    n = sum(len(b) for b in batches)
    for kind, timed in (("sentences", parts), ("articles", article_parts)):
        total = sum(timed.values())
        print(f"{kind}: {n:,} articles, {1e6 * total / n:.0f} us/article = {n / total:,.0f}/s")
        for name, seconds in timed.items():
            print(f"  {name:<16} {1e6 * seconds / n:6.0f} us/article ({seconds / total:.0%})")
    print(f"{sentences:,} sentences ({sentences / n:.1f} per article)")


if __name__ == "__main__":
    main()
