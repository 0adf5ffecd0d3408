"""Did you mean, on real words: how often it fires on correct queries, how often it
restores a typo, and what it costs per query.

The 5,183 SciFact abstracts are indexed (lexical only); the 300 SciFact test claims are
the queries, cut to their first eight words (the suggestion is for short queries).
Correct claims measure false suggestions. Each claim then gets one typo (a random
deletion, transposition, substitution or insertion) in one of its words of six letters
or more; a suggestion "restores" it when it brings back the original word and changes
nothing else. Timings are ``did_you_mean`` per query, p50 / p95 / max in ms.

    python -m benchmarks.did_you_mean [--data ../shared/data/beir/scifact]

Measured (2 cores shared with other work, load ~5, seed 0): correct claims 5 of 300
with a suggestion (three of them real typos in the claims: florescent, lamelliopodia,
tanslocates), CPU p95 7.1 ms; claims with a typo: 260 of 298 restored, 21 another
suggestion, 17 none; CPU p50 3.1 / p95 7.6 / max 20 ms (wall p50 7.9 / p95 21 ms: the
wall time includes waiting for a core). Without the articles' text to choose among a
stem's forms (``diseases``, not ``diseaseds``), 241 were restored.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from benchmarks.lexical_weights import load_corpus, load_queries
from medsearch.index.lexical import LexicalIndex
from medsearch.index.spelling import Suggestion, did_you_mean

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
WORDS = 8


def typo(word: str, rng: random.Random) -> str:
    """``word`` with one random edit (never the word itself)."""
    while True:
        i = rng.randrange(1, len(word) - 1)  # first letters are rarely mistyped
        kind = rng.choice("dtsi")
        if kind == "d":
            out = word[:i] + word[i + 1 :]
        elif kind == "t":
            out = word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        elif kind == "s":
            out = word[:i] + rng.choice(string.ascii_lowercase) + word[i + 1 :]
        else:
            out = word[:i] + rng.choice(string.ascii_lowercase) + word[i:]
        if out != word:
            return out


def timed(index: LexicalIndex, query: str) -> tuple[Suggestion | None, float, float]:
    """The suggestion, the wall time and this thread's CPU time in ms (on shared cores
    the wall time includes waiting for a core)."""
    started, cpu = time.perf_counter(), time.thread_time()
    found = did_you_mean(index, query)
    return found, (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000


def summary(ms: list[float], cpu: list[float]) -> str:
    out = []
    for name, values in (("wall", ms), ("cpu", cpu)):
        ordered = sorted(values)
        p95 = ordered[int(0.95 * (len(ordered) - 1))]
        p50 = statistics.median(ordered)
        out.append(f"{name} p50 {p50:.1f} / p95 {p95:.1f} / max {ordered[-1]:.1f} ms")
    return "; ".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    queries, _ = load_queries(args.data)
    claims = [" ".join(text.split()[:WORDS]) for text in queries.values()]
    with tempfile.TemporaryDirectory() as tmp:
        articles = {a.pmid: (a.title, a.abstract_text) for a in load_corpus(args.data)}
        index = LexicalIndex.open(Path(tmp) / "lexical")
        index.upsert(load_corpus(args.data))
        index.commit()
        index.texts = lambda pmids: {p: articles[p] for p in pmids if p in articles}
        print(f"indexed {index.count()} SciFact abstracts; {len(claims)} claims")
        false, ms, cpu = 0, [], []
        for claim in claims:
            found, took, used = timed(index, claim)
            false += found is not None
            ms.append(took)
            cpu.append(used)
        print(f"correct claims: {false} with a suggestion; {summary(ms, cpu)}")
        restored = wrong = none = 0
        ms, cpu = [], []
        for claim in claims:
            words = claim.split()
            long = [i for i, w in enumerate(words) if len(w) >= 6 and w.isalpha()]
            if not long:
                continue
            i = rng.choice(long)
            broken = [*words[:i], typo(words[i], rng), *words[i + 1 :]]
            found, took, used = timed(index, " ".join(broken))
            ms.append(took)
            cpu.append(used)
            if found is None:
                none += 1
            elif found.query == " ".join(words):
                restored += 1
            else:
                wrong += 1
        print(
            f"claims with a typo: {len(ms)}; restored {restored}, other suggestion {wrong},"
            f" none {none}; {summary(ms, cpu)}"
        )
        index.close()


if __name__ == "__main__":
    main()
