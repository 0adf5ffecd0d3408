"""``Smith J[au]``: one author-key term, against a regex phrase and tantivy's phrase prefix.

PubMed's ``Smith J[au]`` finds every Smith whose initials start with J. tantivy's
phrase prefix expands its last word to the first 50 dictionary words in alphabetical
order, so once more than 50 indexed words start with ``j`` and sort before ``jz`` it
misses authors (at PubMed's scale it misses most). A regex phrase over short words
finds them all but walks the postings of every short word starting with ``j``: linear
in the corpus. The index's ``author_key`` field (``lexical_schema.author_keys``) holds
one term per (last name, prefix of the initials), so the query is one term's postings.
This script builds an authors field of synthetic names (Zipf-distributed last names,
one or two initials) with their keys, asks all three queries for real (name, first
initial) pairs, and prints each one's recall against the truth computed from the
generated names and their latencies, with ratios against the regex phrase (the
reference, measured in the same run).

    python -m benchmarks.lexical authors --n 50000,200000
"""

from __future__ import annotations

import argparse
import random
import re
import string
import tempfile
import time
from pathlib import Path

import numpy as np
import tantivy

from medsearch.index.lexical import schema as ls

AUTHORS_PER_DOC = 6


def regex_initials(schema: object, name: str, tokens: list[tuple[int, str]]) -> object:
    """The name, then any short word starting with the initials typed (the reference)."""
    *head, (at, last) = tokens
    more = max(0, ls.INITIALS_LONGEST - len(last))
    words: list[object] = [(pos, re.escape(tok)) for pos, tok in head]
    return tantivy.Query.regex_phrase_query(
        schema, name, [*words, (at, f"{re.escape(last)}[a-z]{{0,{more}}}")]
    )


def names(rng: random.Random, pool: int) -> list[str]:
    return [
        "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
        for _ in range(pool)
    ]


def build(path: Path, n: int, rng: random.Random) -> tuple[object, list[list[tuple[str, str]]]]:
    surnames = names(rng, 30_000)
    weights = np.array([1.0 / (i + 1) for i in range(len(surnames))])
    weights /= weights.sum()
    np_rng = np.random.default_rng(rng.randint(0, 2**31))
    picks = np_rng.choice(len(surnames), size=(n, AUTHORS_PER_DOC), p=weights)
    docs: list[list[tuple[str, str]]] = []
    index = tantivy.Index(ls.build_schema(), path=str(path))
    ls.register(index)
    writer = index.writer(heap_size=200_000_000, num_threads=1)
    for i in range(n):
        authors = [
            (
                surnames[j],
                "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.choice((1, 2)))),
            )
            for j in picks[i]
        ]
        docs.append(authors)
        keys = sorted({f"{last} {ini[:n]}" for last, ini in authors for n in (1, 2) if ini[:n]})
        fields = {
            ls.PMID: [i + 1],
            ls.AUTHORS: [f"{last} {ini}" for last, ini in authors],
            ls.AUTHOR_KEY: keys,
        }
        writer.add_json(ls.document(fields)[1])
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    return index, docs


def timed(searcher: object, query: object, n: int) -> tuple[float, set[int]]:
    """Seconds for a top-10 with its count (what a search pays), then the whole set."""
    t0 = time.perf_counter()
    searcher.search(query, 10, count=True)  # type: ignore[attr-defined]
    elapsed = time.perf_counter() - t0
    found = searcher.search(query, n).hits  # type: ignore[attr-defined]
    return elapsed, {searcher.doc(a)[ls.PMID][0] for _, a in found}  # type: ignore[attr-defined]


def run(n: int, queries: int, seed: int) -> None:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        index, docs = build(Path(tmp), n, rng)
        schema = ls.build_schema()
        searcher = index.searcher()  # type: ignore[attr-defined]
        pairs = [rng.choice(rng.choice(docs)) for _ in range(queries)]
        kinds = ("key", "regex", "phrase_prefix")
        times: dict[str, list[float]] = {k: [] for k in kinds}
        recall: dict[str, list[float]] = {k: [] for k in kinds}
        for last, initials in pairs:
            first = initials[0]
            truth = {
                i + 1
                for i, authors in enumerate(docs)
                if any(a == last and b.startswith(first) for a, b in authors)
            }
            tokens = [(0, last), (1, first)]
            built = {
                "key": tantivy.Query.term_query(schema, ls.AUTHOR_KEY, f"{last} {first}"),
                "regex": regex_initials(schema, ls.AUTHORS, tokens),
                "phrase_prefix": tantivy.Query.phrase_prefix_query(
                    schema, ls.AUTHORS, [last, first]
                ),
            }
            for name, query in built.items():
                elapsed, got = timed(searcher, query, n)
                times[name].append(elapsed)
                recall[name].append(len(got & truth) / len(truth))
        ms = {
            k: (np.percentile(v, 50) * 1000, np.percentile(v, 95) * 1000) for k, v in times.items()
        }
        print(f"n={n:,} docs ({AUTHORS_PER_DOC} authors each), {queries} 'Last I[au]' queries:")
        for name in kinds:
            print(
                f"  {name:14s} recall {np.mean(recall[name]):.3f}, p50 {ms[name][0]:.2f} ms,"
                f" p95 {ms[name][1]:.2f} ms (x{ms[name][0] / ms['regex'][0]:.2f} /"
                f" x{ms[name][1] / ms['regex'][1]:.2f} the regex phrase)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", default="50000,200000", help="document counts, comma-separated")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for n in (int(x) for x in args.n.split(",")):
        run(n, args.queries, args.seed)


if __name__ == "__main__":
    main()
