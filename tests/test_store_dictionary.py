"""Records compressed with a zstd dictionary trained on the corpus's own first records."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from medsearch.errors import StoreError
from medsearch.records import AbstractSection, Article, Author, MeshHeading, PubDate
from medsearch.store import Store, codec
from medsearch.store.dictionary import TRAIN_RECORDS
from medsearch.store.rows import row_of
from medsearch.store.schema import MIGRATIONS

WORDS = [
    "patients",
    "cohort",
    "randomized",
    "trial",
    "outcome",
    "mortality",
    "risk",
    "ratio",
    "confidence",
    "interval",
    "protein",
    "expression",
    "cells",
    "mice",
    "tumor",
    "inflammation",
    "cytokine",
    "receptor",
    "signalling",
    "treatment",
    "dose",
    "placebo",
    "significant",
    "analysis",
    "association",
    "genome",
    "variant",
    "clinical",
]
BATCH = 1000


def article(pmid: int, rng: random.Random) -> Article:
    sentence = lambda n: " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."  # noqa: E731
    return Article(
        pmid=pmid,
        title=sentence(12),
        abstract=tuple(
            AbstractSection(" ".join(sentence(18) for _ in range(3)), label=label)
            for label in ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS")
        ),
        authors=tuple(Author(last_name=rng.choice(WORDS).title(), initials="AB") for _ in range(5)),
        mesh=(MeshHeading(descriptor=rng.choice(WORDS).title(), major=True),),
        journal="Journal of " + rng.choice(WORDS).title(),
        pub_date=PubDate(year=rng.randint(1990, 2025)),
    )


def fill(store: Store, count: int, start: int = 1) -> list[Article]:
    rng = random.Random(start)
    articles = [article(start + i, rng) for i in range(count)]
    for i in range(0, count, BATCH):
        with store.transaction():
            store.upsert_rows([row_of(a) for a in articles[i : i + BATCH]])
    return articles


def blobs(path: Path) -> dict[int, bytes]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT pmid, data FROM records"))
    finally:
        conn.close()


def test_a_small_corpus_keeps_plain_zstd(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        fill(store, 50)
        assert store.dictionary_id == 0
    assert {codec.dictionary_of(b) for b in blobs(tmp_path / "s.sqlite").values()} == {0}


@pytest.mark.thorough
def test_the_first_records_train_a_dictionary_that_every_later_record_uses(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    total = TRAIN_RECORDS + 2 * BATCH
    with Store(path) as store:
        articles = fill(store, total)
        dict_id = store.dictionary_id
        assert dict_id != 0
        assert store.get_many([a.pmid for a in articles]) == {a.pmid: a for a in articles}
    stored = blobs(path)
    # The records stored before training were few enough to be rewritten with it.
    assert {codec.dictionary_of(blob) for blob in stored.values()} == {dict_id}
    plain = [len(codec.compress(codec.encode(a.to_dict()))) for a in articles]
    assert sum(map(len, stored.values())) < 0.85 * sum(plain)

    # Fixed once trained: more records (a later run) keep the same dictionary.
    with Store(path) as store:
        fill(store, BATCH, start=total + 1)
        assert store.dictionary_id == dict_id
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM dictionaries").fetchone()[0] == 1
    conn.close()


@pytest.mark.thorough
def test_a_large_store_keeps_its_older_records_and_decodes_both_kinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite"
    with monkeypatch.context() as m:  # as if a big store from before dictionaries
        m.setattr("medsearch.store.dictionary.RECOMPRESS_MAX", 0)
        with Store(path) as store:
            articles = fill(store, TRAIN_RECORDS + BATCH)
    kinds = {codec.dictionary_of(blob) for blob in blobs(path).values()}
    assert 0 in kinds and len(kinds) == 2
    script = (
        "import sys\n"
        "from medsearch.store import Store\n"
        "with Store(__import__('pathlib').Path(sys.argv[1]), readonly=True) as s:\n"
        "    print(s.get(1).title); print(s.get(int(sys.argv[2])).title)\n"
    )
    last = articles[-1].pmid
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), str(last)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert out == [articles[0].title, articles[-1].title]


@pytest.mark.thorough
def test_a_dictionary_trained_in_a_failed_transaction_is_forgotten_with_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    rng = random.Random(7)
    with Store(path) as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert_rows([row_of(article(p, rng)) for p in range(1, TRAIN_RECORDS + 1)])
            assert store.dictionary_id != 0
            raise RuntimeError("interrupted")
        assert store.dictionary_id == 0
        with store.transaction():
            store.upsert_rows([row_of(article(1, rng))])
        assert store.get(1).pmid == 1
    assert codec.dictionary_of(blobs(path)[1]) == 0


def test_a_store_from_before_dictionaries_migrates_and_reads_its_records(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    conn = sqlite3.connect(path, isolation_level=None)
    for number, script in enumerate(MIGRATIONS[:2], start=1):
        for statement in script.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.execute(
            "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)", (str(number),)
        )
    old = Article(pmid=5, title="Old record", pub_date=PubDate(year=2001))
    pmid, version, year, digest, data, _ = row_of(old)
    conn.execute(
        "INSERT INTO articles(pmid, version, year, content_hash, data) VALUES (?,?,?,?,?)",
        (pmid, version, year, digest, codec.compress(data)),
    )
    conn.close()
    with Store(path, readonly=True) as store:  # read-only: no migration, no dictionaries
        assert store.get(5) == old
    with Store(path) as store:
        assert store.get(5) == old
        assert store.dictionary_id == 0


def test_a_record_whose_dictionary_is_missing_is_a_store_error() -> None:
    import zstandard

    rng = random.Random(3)
    samples = [codec.encode(article(p, rng).to_dict()) for p in range(1, 400)]
    foreign = zstandard.ZstdCompressionDict(codec.train(samples) or b"")
    blob = zstandard.ZstdCompressor(dict_data=foreign).compress(samples[0])
    if foreign.dict_id() in codec._dictionaries:  # pragma: no cover - 1 in 4 billion
        pytest.skip("dictionary id collided with one registered by another test")
    with pytest.raises(StoreError, match="dictionary"):
        codec.decode(blob)


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_rows_a_parser_compressed_with_the_stores_dictionary_are_stored_as_they_are(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        fill(store, TRAIN_RECORDS)
        dictionary = store.dictionary()
        assert dictionary is not None
        dict_id = codec.register(dictionary)  # as a parser process does with it
        assert dict_id == store.dictionary_id
        rng = random.Random(7)
        later = [article(TRAIN_RECORDS + 1 + i, rng) for i in range(20)]
        sent = [(*row[:4], codec.compress(row[4], dict_id), row[5]) for row in map(row_of, later)]
        with store.transaction():
            store.upsert_rows(sent)
        assert store.get_many([a.pmid for a in later]) == {a.pmid: a for a in later}
    stored = blobs(path)
    assert all(stored[row[0]] == row[4] for row in sent)  # byte for byte: no second pass


@pytest.mark.thorough
def test_rows_compressed_with_another_dictionary_are_recompressed_with_the_stores(
    tmp_path: Path,
) -> None:
    """A parser that started with a dictionary whose transaction was then rolled back
    must not leave records only that lost dictionary could decode."""
    rng = random.Random(11)
    other = codec.train(
        [codec.encode(article(10**6 + i, rng).to_dict()) for i in range(TRAIN_RECORDS)]
    )
    assert other is not None
    other_id = codec.register(other)
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        fill(store, TRAIN_RECORDS)
        assert store.dictionary_id not in (0, other_id)
        later = [article(TRAIN_RECORDS + 1 + i, rng) for i in range(20)]
        foreign = [
            (*row[:4], codec.compress(row[4], other_id), row[5]) for row in map(row_of, later)
        ]
        plain_zstd = [(*row[:4], codec.compress(row[4]), row[5]) for row in map(row_of, later[:5])]
        with store.transaction():
            store.upsert_rows(foreign)
            store.upsert_rows(plain_zstd)
        assert store.get_many([a.pmid for a in later]) == {a.pmid: a for a in later}
        dict_id = store.dictionary_id
    stored = blobs(path)
    assert {codec.dictionary_of(stored[a.pmid]) for a in later} == {dict_id}


@pytest.mark.thorough
def test_abstracts_are_read_without_the_rest_of_each_record_and_split_the_same(
    tmp_path: Path,
) -> None:
    """Sentence search splits hundreds of candidates' abstracts a query: it reads only
    the abstracts, and their sentences (and so their ids) are those of the whole record."""
    from medsearch.sentences import article_sentences

    with Store(tmp_path / "s.sqlite") as store:
        articles = fill(store, TRAIN_RECORDS + BATCH)  # compressed with the dictionary too
        wanted = [a.pmid for a in articles[::97]] + [10**8]  # and a PMID never stored
        lean = store.abstracts_many(wanted)
        whole = store.get_many(wanted)
    assert lean.keys() == whole.keys() and 10**8 not in lean
    for pmid, record in whole.items():
        assert lean[pmid].abstract == record.abstract and not lean[pmid].authors
        assert article_sentences(lean[pmid]) == article_sentences(record)
