"""The ``medsearch search`` command's wall time, as a user runs it, against the lexical
command measured in the same run.

    python -m benchmarks.search command                  # BERT-base-shaped random profile
    python -m benchmarks.search command --minilm         # also the bundled minilm profile
    python -m benchmarks.search command --layers 2       # a quick trial

Why a process per search: the benchmarks of the parts (``benchmarks.search latency``,
``benchmarks.encode``) run in a warm interpreter; a user's command pays the imports,
the model loads and the reranker's foreground work, which issue 42 found to be 16-40 s
of a search whose parts take milliseconds.

On a shared machine the wall time says more about the neighbours than the command; the
CPU seconds (user + sys of the command's process) are reported beside it, and
``--before DIR`` times another checkout's code (main, say) on the same home in the same
run.

Setup (offline): a MedCPT-shaped profile, ``[profiles.rand]``, with random weights (BERT
base: 12 layers, 768 hidden; query, article and cross-encoder models, each saved with
a fast tokenizer over a vocabulary of the corpus's own words padded to bert-base's
30,522), then ``medsearch ingest CORPUS --models rand --device cpu`` over the demo corpus
(or ``--corpus DIR``). Every command runs once untimed (bytecode compiled, disk cache
warm), then ``--repeat`` times; the median wall is reported, with the ratio to lexical.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import gzip
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VOCAB_SIZE = 30_522  # bert-base-uncased, MedCPT's vocabulary size
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
QUERY = "statin myopathy risk"
TEXT_CHARS = 4_000_000


def corpus_vocabulary(corpus: Path, size: int = VOCAB_SIZE) -> list[str]:
    """Specials, the corpus's words (most frequent first), letters and ``##`` pieces,
    padded with filler tokens to ``size``: real text tokenises into real-length pieces,
    and the embedding table has bert-base's size."""

    def read(path: Path) -> str:
        raw = path.read_bytes()
        return (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode(
            "utf-8", errors="replace"
        )

    parts, read_chars = [], 0
    for path in sorted(corpus.rglob("*.xml*")):
        parts.append(read(path)[: TEXT_CHARS - read_chars])  # enough for the common words
        read_chars += len(parts[-1])
        if read_chars >= TEXT_CHARS:
            break
    text = " ".join(parts)
    counts = collections.Counter(re.findall(r"[a-z0-9]+", re.sub(r"<[^>]+>", " ", text).lower()))
    chars = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    punctuation = list(".,;:()[]-/%+=<>'\"?!*&^$#@~`|{}_\\")
    pieces = [f"##{c}" for c in chars]
    vocab = list(dict.fromkeys([*SPECIALS, *chars, *punctuation, *pieces, *counts]))[:size]
    vocab += [f"[unused{i}]" for i in range(size - len(vocab))]
    return vocab


def build_models(
    root: Path, corpus: Path, *, layers: int, hidden: int, vocab: Path | None = None
) -> dict[str, Path]:
    """Query, article and cross-encoder folders of a random BERT of the given shape;
    ``vocab``: a saved tokenizer folder (bert-base's) instead of the corpus's words."""
    import torch
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizer

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    root.mkdir(parents=True, exist_ok=True)
    if vocab is not None:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(vocab)
    else:
        words = corpus_vocabulary(corpus)
        tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(words)})
    dirs = {name: root / name for name in ("query", "article", "cross")}
    for seed, (name, folder) in enumerate(dirs.items()):
        torch.manual_seed(seed)
        config = BertConfig(
            vocab_size=max(VOCAB_SIZE, len(tokenizer)),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=max(1, hidden // 64),
            intermediate_size=4 * hidden,
        )
        if name == "cross":
            config.num_labels = 1
            BertForSequenceClassification(config).save_pretrained(folder)
        else:
            BertModel(config).save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return dirs


def profile_table(name: str, dirs: dict[str, Path]) -> str:
    """The ``[profiles.NAME]`` table of a MedCPT-shaped profile over ``dirs``."""
    return (
        f"[profiles.{name}]\n"
        f'query_model = "{dirs["query"]}"\n'
        f'article_model = "{dirs["article"]}"\n'
        f'cross_model = "{dirs["cross"]}"\n'
        'pooling = "cls"\n'
        "normalize = false\n"
        'description = "random weights, MedCPT-shaped"\n'
    )


# What the ``medsearch`` console script runs (it may not be on PATH here).
ENTRY = "import sys; from medsearch.cli import main; sys.exit(main())"


def medsearch(
    home: Path, args: Sequence[str], repo: Path = REPO, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``medsearch ARGS`` in a fresh process on ``home``, as a user's shell runs it
    (``repo``: whose code; another checkout measures the code before a change)."""
    extra = env or {}
    environ = {**os.environ, "MEDSEARCH_HOME": str(home), "PYTHONPATH": str(repo), **extra}
    return subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        env=environ,
        capture_output=True,
        text=True,
        check=False,
        cwd=repo,  # `python -c` puts the working directory first on sys.path
    )


def build_home(home: Path, corpus: Path, table: str, profile: str) -> float:
    """Ingest ``corpus`` and encode it with ``profile``; returns seconds."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(table, encoding="utf-8")
    start = time.perf_counter()
    done = medsearch(
        home, ["ingest", str(corpus), "--models", profile, "--device", "cpu", "--json"]
    )
    if done.returncode != 0:
        raise SystemExit(f"ingest failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wall(
    home: Path, args: Sequence[str], repeat: int, repo: Path = REPO
) -> tuple[float, float, str]:
    """Median wall and CPU seconds of ``medsearch search ...`` (after one untimed run:
    bytecode compiled, disk cache warm) and the last run's standard output."""
    medsearch(home, args, repo)
    walls, cpus, err = [], [], ""
    for _ in range(repeat):
        cpu0, start = children_cpu(), time.perf_counter()
        done = medsearch(home, args, repo)
        walls.append(time.perf_counter() - start)
        cpus.append(children_cpu() - cpu0)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr}")
        err = done.stdout
    return statistics.median(walls), statistics.median(cpus), err


COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("lexical", ("--mode", "lexical")),
    ("hybrid (default rerank)", ()),
    ("hybrid --no-rerank", ("--no-rerank",)),
    ("dense --no-rerank", ("--mode", "dense", "--no-rerank")),
    ("hybrid --count", ("--count",)),
    ("hybrid --rerank cross", ("--rerank", "cross")),
)


def bench_home(
    label: str, home: Path, repeat: int, extra: Sequence[str], repo: Path = REPO
) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    lexical = None
    print(f"\n{label} ({repo}): median of {repeat}, wall s / CPU s (user + sys)")
    for name, flags in COMMANDS:
        args = ["search", QUERY, *flags, *extra]
        seconds, cpu, out = wall(home, args, repeat, repo)
        lexical = lexical or cpu
        print(f"  {name:<26} {seconds:6.2f} / {cpu:5.2f}   CPU x{cpu / lexical:4.1f} lexical")
        with contextlib.suppress(ValueError, AttributeError):
            for note in json.loads(out).get("notes", []):
                if "cross-encoder" in note:
                    print(f"      note: {note}")
        rows.append(
            {
                "profile": label,
                "code": str(repo),
                "command": name,
                "seconds": round(seconds, 3),
                "cpu_seconds": round(cpu, 3),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, default=REPO / "assets" / "demo")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=768)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--minilm", action="store_true", help="also the bundled minilm")
    parser.add_argument("--work", type=Path, default=None, help="keep models and homes here")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows here")
    parser.add_argument("--no-cross", action="store_true", help="skip --rerank cross (slow)")
    parser.add_argument("--before-only", action="store_true", help="time --before's code alone")
    parser.add_argument(
        "--before", type=Path, default=None, help="also time this checkout's code (e.g. main)"
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} cores, load average {load:.1f}, corpus {args.corpus}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or Path(tmp)
        models = work / f"models-{args.layers}x{args.hidden}"
        if not (models / "cross" / "config.json").exists():
            build_models(models, args.corpus, layers=args.layers, hidden=args.hidden)
        dirs = {name: models / name for name in ("query", "article", "cross")}
        home = work / f"home-{args.layers}x{args.hidden}"
        if not (home / "store.sqlite").exists():
            took = build_home(home, args.corpus, profile_table("rand", dirs), "rand")
            print(f"ingest + encode ({args.layers}x{args.hidden}): {took:.1f} s")
        label = f"rand {args.layers}x{args.hidden}"
        if args.no_cross:
            global COMMANDS
            COMMANDS = tuple(c for c in COMMANDS if "cross" not in c[0])
        rows = [] if args.before_only else bench_home(label, home, args.repeat, ["--json"])
        if args.before is not None:
            rows += bench_home(label, home, args.repeat, ["--json"], args.before.resolve())
        if args.minilm:
            mini = work / "home-minilm"
            if not (mini / "store.sqlite").exists():
                build_home(mini, args.corpus, "", "minilm")
            rows += bench_home("minilm", mini, args.repeat, ["--json"])
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
