"""The synthetic corpus generator writes PubMed XML our parser reads back faithfully."""

from __future__ import annotations

import gzip
from pathlib import Path

from conftest import REPO

from benchmarks.synth import (
    pseudo_vocabulary,
    synthetic_documents,
    write_synthetic_pubmed,
)
from ingest.pubmed_xml import parse_file
from medsearch.records import Article


def test_200_synthetic_articles_parse_with_the_expected_fields(tmp_path: Path) -> None:
    path = tmp_path / "synth.xml.gz"
    write_synthetic_pubmed(path, 200, start_pmid=5_000, seed=3, words_per_doc=120, gzip=True)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    parsed = [a for a in parse_file(path) if isinstance(a, Article)]
    assert [a.pmid for a in parsed] == list(range(5_000, 5_200))
    for article in parsed:
        assert 8 <= len(article.title.split()) <= 16
        assert 1 <= len(article.authors) <= 8
        assert article.journal.startswith("Journal of ")
        assert article.year is not None and 1950 <= article.year <= 2025
        assert 2 <= len(article.mesh) <= 6
        assert article.doi == f"10.5555/synth.{article.pmid}"
        assert article.publication_types
    structured = [a for a in parsed if a.abstract and a.abstract[0].label]
    assert 20 <= len(structured) <= 100  # about 30% carry BACKGROUND/METHODS/... labels
    assert all(s.label == "BACKGROUND" for s in (a.abstract[0] for a in structured))
    assert sum(1 for a in parsed if not a.abstract) < 30


def test_synthetic_documents_match_the_xml(tmp_path: Path) -> None:
    path = tmp_path / "synth.xml"
    write_synthetic_pubmed(path, 50, start_pmid=10, seed=7, words_per_doc=80)
    parsed = [
        (a.pmid, a.title, a.abstract_text) for a in parse_file(path) if isinstance(a, Article)
    ]
    assert parsed == list(synthetic_documents(50, 7, start_pmid=10, words_per_doc=80))


def test_generation_is_deterministic_by_seed(tmp_path: Path) -> None:
    one, two, other = tmp_path / "1.xml.gz", tmp_path / "2.xml.gz", tmp_path / "3.xml.gz"
    for path, seed in ((one, 1), (two, 1), (other, 2)):
        write_synthetic_pubmed(path, 20, seed=seed, vocab_size=2_000, gzip=True)
    assert gzip.decompress(one.read_bytes()) == gzip.decompress(two.read_bytes())
    assert gzip.decompress(one.read_bytes()) != gzip.decompress(other.read_bytes())


def test_word_frequencies_follow_a_zipf_law() -> None:
    vocabulary = pseudo_vocabulary(5_000, seed=0)
    assert len(set(vocabulary)) == 5_000
    counts: dict[str, int] = {}
    for _pmid, title, abstract in synthetic_documents(300, 0, vocab_size=5_000):
        for word in f"{title} {abstract}".lower().replace(".", " ").split():
            counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.values(), reverse=True)
    # rank 1 is about ten times as frequent as rank 10 (exponent ~1.07), and the
    # long tail means most of the vocabulary is rare
    assert 6 <= ranked[0] / ranked[9] <= 20
    assert sum(1 for c in ranked if c <= 2) > len(ranked) / 3


def test_real_records_cycle_into_a_file_of_any_size_each_under_a_new_pmid(
    tmp_path: Path,
) -> None:
    from benchmarks.real_records import load_records, write_cycled_pubmed

    source = tmp_path / "real"
    source.mkdir()
    (source / "a.xml").write_bytes((REPO / "tests/fixtures/tricky_articles.xml").read_bytes())
    originals = [a for a in parse_file(source / "a.xml") if isinstance(a, Article)]
    records = load_records(source)
    assert len(records) == len(originals)
    out = tmp_path / "cycled.xml.gz"
    n = 2 * len(records) + 1
    write_cycled_pubmed(out, n, records, start_pmid=900_000, offset=1)
    cycled = [a for a in parse_file(out) if isinstance(a, Article)]
    assert [a.pmid for a in cycled] == list(range(900_000, 900_000 + n))
    for i, article in enumerate(cycled):
        original = originals[(1 + i) % len(originals)]
        assert (article.title, article.abstract, article.authors) == (
            original.title,
            original.abstract,
            original.authors,
        )
