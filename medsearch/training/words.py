"""Word vectors and document frequencies from the user's own corpus.

word2vec skip-gram (gensim, the field's standard) over a sample of titles and abstracts
streamed from the store into a plain-text file that gensim reads with all cores
(``corpus_file`` mode, no Python in its inner loop and no corpus held in memory). The
same pass counts document frequencies for the Lex3 features. A sample is enough: the
paper's vectors came from 27M abstracts, but a few hundred thousand give every word a
biomedical researcher types a vector, and the pass stays minutes on a laptop.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from pathlib import Path

import numpy as np

from medsearch.progress import Progress
from medsearch.rerank.lexmatch import IdfTable
from medsearch.rerank.scorer import PAD, UNK, Vocabulary
from medsearch.rerank.text import lexical_body, lexical_words, sentences_of
from medsearch.store import Store
from medsearch.store.sampling import iter_sample

SAMPLE_ARTICLES = 300_000
"""Articles read for word2vec and IDF (all of them in a smaller corpus)."""
DF_MIN = 2  # words seen in one sampled document only get the unseen-word IDF
UNK_RANGE = 0.25  # the UNK vector is drawn from U[-0.25, 0.25], as in the paper


def sample_stride(total: int, wanted: int) -> int:
    """Read every n-th article so that about ``wanted`` of ``total`` are read."""
    return max(1, math.ceil(total / max(wanted, 1)))


def epochs_for(docs: int) -> int:
    """word2vec passes: 5 (gensim's default) for a large sample, more for a small corpus
    whose few occurrences per word need them (cheap: the passes are short)."""
    return max(5, min(20, 2_000_000 // max(docs, 1)))


def min_count_for(docs: int) -> int:
    """word2vec's rare-word cut-off, scaled from the paper's 101 at 27M abstracts."""
    return min(100, max(2, docs // 20_000))


def write_sentences(
    store: Store, path: Path, *, sample: int, progress: Progress
) -> tuple[IdfTable, int]:
    """Stream the sampled articles into ``path`` (one sentence per line); count DFs."""
    total = store.count()
    every = sample_stride(total, sample)
    df: Counter[str] = Counter()
    docs = 0
    abstract_words = 0
    progress.start("words", "Reading titles and abstracts", total=min(total, sample))
    tmp = path.with_suffix(".partial")
    with tmp.open("w", encoding="utf-8") as out:
        for batch in iter_sample(store, every):
            for article in batch:
                abstract = article.abstract_text
                if not article.title and not abstract:
                    continue
                for words in sentences_of(article.title, abstract):
                    out.write(" ".join(words))
                    out.write("\n")
                words = lexical_words(abstract)
                abstract_words += lexical_body(abstract).count(b" ")
                df.update(set(lexical_words(article.title)).union(words))
                docs += 1
            progress.advance("words", len(batch))
    tmp.replace(path)
    progress.finish("words")
    kept = {w: c for w, c in df.items() if c >= DF_MIN} if docs > 1000 else dict(df)
    idf = IdfTable(docs=docs, df=kept, mean_abstract_words=abstract_words / max(docs, 1))
    return idf, docs


def train_vectors(
    corpus_file: Path, *, dim: int, docs: int, epochs: int | None = None, seed: int = 13
) -> tuple[Vocabulary, np.ndarray]:
    """Skip-gram word2vec on the sentence file; rows 0 and 1 are padding and UNK."""
    from gensim.models import Word2Vec

    model = Word2Vec(
        corpus_file=str(corpus_file),
        vector_size=dim,
        window=5,
        min_count=min_count_for(docs),
        sg=1,
        workers=max(1, (os.cpu_count() or 1)),
        epochs=epochs or epochs_for(docs),
        seed=seed,
    )
    words = list(model.wv.index_to_key)
    rng = np.random.default_rng(seed)
    vectors = np.zeros((len(words) + 2, dim), dtype=np.float32)
    vectors[UNK] = rng.uniform(-UNK_RANGE, UNK_RANGE, dim)
    vectors[2:] = model.wv.vectors
    ids = {"<pad>": PAD, "<unk>": UNK}
    ids.update({w: i + 2 for i, w in enumerate(words)})
    return Vocabulary(ids), vectors
