"""Bytes per article of each part of a data home, and what all of PubMed would need.

    python -m benchmarks.footprint [--scifact N] [--no-pubmed] [--keep DIR]

Real text: the BEIR SciFact corpus (5,183 abstracts) and the real PubMed/MEDLINE files
in ``../shared/data/pubmed`` (936 citations), ingested by the real pipeline (store +
tantivy) and encoded by the real vector stage, articles and abstract sentences, at 768
dimensions: MedCPT's vector size, which is what decides the bytes. The encoder is a
BERT with MedCPT's width and no transformer layers (mean of the token embeddings,
random weights): the vectors mean little, but their number and size are exactly what
a MedCPT encoding of the same text would store, and the whole run takes minutes on
a CPU instead of hours.

Printed: each part's bytes, per article and per sentence, and the projection to 40.9M
citations (29.3M with an abstract) and ~350M sentences, from the same function as
``medsearch stats``. The reference measured in the same run is the store's own
records: raw JSON, per-record zstd without a dictionary (what the store did before),
and what the store holds now.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared" / "data"
DIM = 768


def build_encoder(root: Path, texts: list[str]) -> Path:
    """A 768-wide, zero-layer BERT with a word-level vocabulary from ``texts``."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    counts = collections.Counter(w for t in texts for w in re.findall(r"[a-z0-9]+", t.lower()))
    words = [w for w, _ in counts.most_common(8000)]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [str(d) for d in range(10)]
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    punctuation = list(".,;:()[]-/%+=<>'\"?!")
    pieces = [f"##{c}" for c in letters]
    vocab = list(dict.fromkeys([*specials, *words, *letters, *punctuation, *pieces]))
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=DIM,
        num_hidden_layers=0,
        num_attention_heads=12,
        intermediate_size=DIM,
        max_position_embeddings=512,
    )
    root.mkdir(parents=True, exist_ok=True)
    BertModel(config).save_pretrained(root)
    BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}).save_pretrained(root)
    return root


def scifact_texts(limit: int | None) -> list[str]:
    from medsearch.beir import load_corpus

    docs = list(load_corpus(SHARED / "beir" / "scifact"))[:limit]
    return [f"{d.title} {d.text}" for d in docs]


def ingest(home: Path, scifact: int | None, pubmed: bool) -> float:
    """Store + lexical index for the real text; returns seconds."""
    from ingest.download import md5_of
    from ingest.incoming import InputFile
    from ingest.pipeline import Ingestor
    from ingest.summary import IngestSummary
    from ingest.writer_rows import messages
    from medsearch.beir import PmidMap, beir_doc_to_article, load_corpus
    from medsearch.paths import Paths

    start = time.perf_counter()
    with Ingestor(Paths(home), jobs=0) as ing:
        if pubmed:
            assert ing.run([SHARED / "pubmed"]).ok
        corpus = SHARED / "beir" / "scifact" / "corpus.jsonl"
        pmids = PmidMap()
        docs = list(load_corpus(corpus.parent))[:scifact]
        items = (beir_doc_to_article(d, pmids.add(d.doc_id)) for d in docs)
        summary = IngestSummary()
        item = InputFile(corpus, corpus.stat().st_size, md5_of(corpus))
        ing.apply(item, messages(items, 1000), summary)
        assert not summary.failures, summary.failures
    return time.perf_counter() - start


def encode(home: Path, model: Path) -> float:
    """Articles and abstract sentences through the real vector stage; returns seconds."""
    from ingest.encode_stage import run_vectors_stage
    from medsearch.paths import Paths
    from medsearch.progress import NullProgress
    from medsearch.store import Store

    paths = Paths(home)
    paths.config_file.write_text(
        "[profiles.bench768]\n"
        f'query_model = "{model}"\n'
        f'article_model = "{model}"\n'
        'pooling = "mean"\n'
        "article_max_length = 512\n"
        'description = "768-d, zero-layer BERT: bytes as MedCPT, not its meaning"\n'
    )
    start = time.perf_counter()
    with Store(paths.store) as store:
        run_vectors_stage(
            paths,
            store,
            profile="bench768",
            device="cpu",
            index_factory=None,
            embeddings=None,
            encode=True,
            progress=NullProgress(),
        )
    return time.perf_counter() - start


def vacuum(home: Path) -> None:
    """Pack the store as a large ingest would leave it.

    A small corpus has its first records rewritten with the dictionary once it is
    trained, which leaves half-empty pages that a 40M-article ingest would refill;
    VACUUM shows the steady state the projection is about.
    """
    conn = sqlite3.connect(home / "store.sqlite", isolation_level=None)
    conn.execute("VACUUM")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def store_reference(home: Path) -> dict[str, float]:
    """Bytes per record: raw JSON, zstd per record without a dictionary, as stored."""
    import zstandard

    from medsearch.store import Store, codec

    plain = zstandard.ZstdCompressor(level=codec.LEVEL)
    raw = alone = stored = n = 0
    with Store(home / "store.sqlite", readonly=True):  # registers the store's dictionary
        conn = sqlite3.connect(home / "store.sqlite")
        for (blob,) in conn.execute("SELECT data FROM records"):
            data = codec.encode(codec.decode(blob))
            raw += len(data)
            alone += len(plain.compress(data))
            stored += len(blob)
            n += 1
        conn.close()
    return {"records": n, "raw": raw / n, "zstd": alone / n, "stored": stored / n}


def table_sizes(home: Path) -> dict[str, int]:
    """Bytes per table (SQLite's dbstat), to see what besides the records the store holds."""
    conn = sqlite3.connect(home / "store.sqlite")
    try:
        rows = conn.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC")
        return {name: int(size) for name, size in rows if size > 4096}
    except sqlite3.OperationalError:  # SQLite built without dbstat
        return {}
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scifact", type=int, default=None, help="First N SciFact docs (all).")
    ap.add_argument("--no-pubmed", action="store_true", help="Leave out the real PubMed files.")
    ap.add_argument("--keep", type=Path, default=None, help="Build the home here and keep it.")
    args = ap.parse_args()
    if not (SHARED / "beir" / "scifact").exists():
        raise SystemExit(f"needs the shared data at {SHARED}")

    from medsearch.footprint import human
    from medsearch.paths import Paths
    from medsearch.status import corpus_status

    work = args.keep or Path(tempfile.mkdtemp(prefix="footprint-"))
    home = work / "home"
    if home.exists():
        shutil.rmtree(home)
    model = build_encoder(work / "model768", scifact_texts(args.scifact))
    t_ingest = ingest(home, args.scifact, not args.no_pubmed)
    t_encode = encode(home, model)
    before = corpus_status(Paths(home))["store_bytes"]
    vacuum(home)
    info = corpus_status(Paths(home))
    ref = store_reference(home)
    fp = info["footprint"]
    sentences = (info.get("sentences_vectors") or {}).get("count") or 0
    print(
        f"corpus: {info['articles']:,} articles, {sentences:,} sentences"
        f" ({sentences / max(1, info['articles']):.1f} per article);"
        f" {fp['with_abstract_share']:.0%} with an abstract, one without is"
        f" {fp['without_abstract_size_ratio']:.0%} the size; ingest {t_ingest:.1f} s,"
        f" encode {t_encode:.1f} s"
    )
    for kind in ("articles", "sentences"):
        v = info.get(f"{kind}_vectors") or {}
        print(f"{kind} vectors: kind={v.get('kind')} count={v.get('count')}")
    print(f"\n{'part':<18}{'bytes':>14}{'per article':>13}{'per sentence':>14}{'all PubMed':>13}")
    for part in fp["parts"]:
        print(
            f"{part['part']:<18}{part['bytes']:>14,}{human(part['bytes_per_article']):>13}"
            f"{human(part['bytes_per_sentence']):>14}{human(part['projected_bytes']):>13}"
        )
    print(
        f"{'total':<18}{fp['total_bytes']:>14,}{human(fp['bytes_per_article']):>13}"
        f"{'':>14}{fp['projected_total']:>13}"
    )
    print(
        f"\nstore records ({ref['records']:,.0f}): raw JSON {ref['raw']:.0f} B, zstd per record"
        f" {ref['zstd']:.0f} B, as stored {ref['stored']:.0f} B"
        f" (x{ref['stored'] / ref['zstd']:.2f} of per-record zstd); store file"
        f" {before:,} bytes as ingested, {info['store_bytes']:,} after VACUUM"
    )
    print(f"store tables after VACUUM: {table_sizes(home)}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
