"""What keeping each reference's citation text costs in the store.

The real records in ../shared/data/pubmed that hold a ``ReferenceList`` are encoded as
the store keeps them (orjson, zstd level 3 with a dictionary trained on those records,
as the store trains one on its own), once as parsed and once with the citation texts
dropped; the difference, per reference, is projected to ``--references`` (PubMed's
reference count; docs/citations.md uses 1 billion edges as the scale to plan for).
The dictionary is trained on half the records and measured on the other half (held out).

    python -m benchmarks.citations texts --references 1000000000
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ingest.pubmed_xml import parse_file
from medsearch.records import Article
from medsearch.store import codec


def _records(folder: Path) -> list[Article]:
    files = sorted(p for p in folder.rglob("*") if p.name.endswith((".xml", ".xml.gz")))
    return [
        r for path in files for r in parse_file(path) if isinstance(r, Article) and r.references
    ]


def _stored_bytes(records: list[Article], dict_id: int) -> int:
    return sum(len(codec.compress(codec.encode(r.to_dict()), dict_id)) for r in records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/data/pubmed"))
    parser.add_argument("--references", type=int, default=1_000_000_000)
    args = parser.parse_args()
    records = _records(args.data)
    bare = [
        replace(r, references=tuple(replace(x, citation=None) for x in r.references))
        for r in records
    ]
    train, held = records[::2], records[1::2]
    held_bare = bare[1::2]
    trained = codec.train([codec.encode(r.to_dict()) for r in train])
    dict_id = codec.register(trained) if trained is not None else 0
    refs = sum(len(r.references) for r in held)
    texts = sum(len((x.citation or "").encode()) for r in held for x in r.references)
    with_text, without = _stored_bytes(held, dict_id), _stored_bytes(held_bare, dict_id)
    per_ref = (with_text - without) / refs
    print(
        f"{len(records)} records with a ReferenceList; held out {len(held)}, {refs:,}"
        f" references, citation text {texts / refs:.1f} bytes/reference raw"
    )
    print(
        f"stored (zstd, dictionary {'trained' if dict_id else 'none'}): without texts"
        f" {without:,} B, with {with_text:,} B: +{per_ref:.1f} B/reference"
        f" (x{with_text / without:.3f} on these records)"
    )
    print(f"projected to {args.references:,} references: +{per_ref * args.references / 1e9:.1f} GB")


if __name__ == "__main__":
    main()
