"""Sentence vectors as compressed codes: no float copy, exact scores by re-encoding text."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from pubmed_builders import article_xml, pubmed_file
from tiny_models import TinyModels, build_tiny_models, ingest_and_encode, write_tiny_config

from ingest.sentences import article_sentences
from medsearch.index.sentence_index import OldLayoutError, SentenceCollection
from medsearch.index.sentence_migrate import open_sentences
from medsearch.index.vector import VectorCollection
from medsearch.paths import Paths
from medsearch.retrieval.searcher import Searcher, open_searcher
from medsearch.store import Store

DIM = 32


def vectors(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(20, DIM))
    x = centres[rng.integers(0, 20, n)] + 0.5 * rng.normal(size=(n, DIM))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Compressed from 300 sentences on, with a sample of 2,000: tests stay fast."""
    with monkeypatch.context() as m:
        m.setattr(SentenceCollection, "flat_max", 300)
        m.setattr(SentenceCollection, "sample_max", 2_000)
        yield


def sids(n: int, first_pmid: int = 500) -> np.ndarray:
    """Sentence ids of ``n`` sentences, five per article: pmid * 1000 + position."""
    return np.array([(first_pmid + i // 5) * 1000 + i % 5 for i in range(n)], dtype=np.int64)


def top_ids(col: SentenceCollection, query: np.ndarray, k: int = 30) -> list[int]:
    """The PQ candidates (top 2% here): estimates, which re-scoring then makes exact."""
    return [i for i, _ in col.search(query, k)[0]]


def test_small_collections_stay_exact(tmp_path: Path) -> None:
    x = vectors(200)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        col.add(sids(200), x)
        col.commit()
        assert col.exact and col.manifest.kind == "flat"
        got = col.search(x[7], 5)[0]
    truth = np.argsort(-(x @ x[7]), kind="stable")[:5]
    assert [i for i, _ in got] == sids(200)[truth].tolist()
    np.testing.assert_allclose([s for _, s in got], (x @ x[7])[truth], rtol=2e-3)


def test_round_trip_add_search_delete_reopen(tmp_path: Path, small_limits: None) -> None:
    x, ids = vectors(1_500), sids(1_500)
    path = tmp_path / "s"
    with SentenceCollection.open(path, dim=DIM, profile="t", create=True) as col:
        col.add(ids[:1_000], x[:1_000])
        col.commit()
        assert not col.exact and col.manifest.factory.startswith("IVF")
        col.add(ids[1_000:], x[1_000:])
        col.remove(ids[:5])  # one article deleted (DeleteCitation)
        col.add(ids[10:11], -x[10:11])  # one sentence re-encoded after an update
        assert col.search(x[2], 50)[0][0][0] != ids[2]  # uncommitted removal already hidden
        col.commit()
    names = {p.name for p in path.iterdir()}
    assert not any(n.endswith(".f16") and n != "sample.f16" for n in names)  # no vector copy
    with SentenceCollection.open(path) as col:  # a reader: lists memory-mapped
        assert len(col) == 1_495
        assert col.contains(ids[:6]).tolist() == [False] * 5 + [True]
        assert ids[1_200] in top_ids(col, x[1_200])  # among the candidates
        assert ids[10] not in [i for i, _ in col.search(x[10], 20)[0]]  # the old vector
        assert ids[10] in top_ids(col, -x[10])
        assert all(i not in ids[:5] for i, _ in col.search(x[:5], 50)[0])
        with pytest.raises(Exception, match="not stored"):
            col.get(ids[6:7])


def test_sample_stays_bounded_and_growth_retrains_without_the_vectors(
    tmp_path: Path, small_limits: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    x, ids = vectors(6_000, seed=3), sids(6_000)
    with SentenceCollection.open(tmp_path / "s", dim=DIM, profile="t", create=True) as col:
        col.add(ids[:400], x[:400])
        col.commit()
        first = col.manifest
        col.add(ids[400:], x[400:])
        col.commit()  # 15x the size it was trained on: quantizer retrained, codes moved
        grown = col.manifest
        assert (tmp_path / "s" / "sample.f16").stat().st_size == 2_000 * DIM * 2
        assert grown.sample_rows == 2_000 and grown.sample_seen == 6_000
        assert grown.trained_on == 6_000 and first.trained_on == 400
        assert grown.factory != first.factory  # more lists
        assert ids[123] in top_ids(col, x[123])  # an early code, moved intact
        assert ids[5_999] in top_ids(col, x[5_999])


def test_old_layout_is_refused_for_search_and_converted_by_ingest(tmp_path: Path) -> None:
    x, ids = vectors(400), sids(400)
    path = tmp_path / "sentences"
    with VectorCollection.open(path, dim=DIM, profile="t", create=True) as old:  # format 1
        old.add(ids, x)
        old.remove(ids[:2])
        old.commit()
    with pytest.raises(OldLayoutError, match=r"old layout .* run `medsearch ingest` once"):
        SentenceCollection.open(path)
    with open_sentences(path, dim=DIM, profile="t") as col:
        assert len(col) == 398 and col.manifest.layout == "codes"
        assert next(i for i, _ in col.search(x[50], 3)[0]) == ids[50]
    assert not (path / "vectors.f16").exists()
    assert json.loads((path / "manifest.json").read_text())["format_version"] == 2


# -- through the Searcher: real ingest, tiny real BERT, compressed sentences ----------

WORDS = [
    "cytokine",
    "tocilizumab",
    "metformin",
    "glucose",
    "insulin",
    "statin",
    "cholesterol",
    "amyloid",
    "plaque",
    "neuron",
    "sepsis",
    "antibiotic",
    "mortality",
    "tumour",
    "mutation",
    "screening",
    "receptor",
    "kinase",
    "therapy",
    "trial",
]


def corpus(root: Path, articles: int = 120) -> Path:
    rng = np.random.default_rng(0)
    out = []
    for i in range(articles):
        sentences = [
            " ".join(rng.choice(WORDS, size=6)).capitalize() + "." for _ in range(3 + i % 3)
        ]
        out.append(article_xml(2000 + i, f"Study {i}", " ".join(sentences)))
    folder = root / "xml"
    folder.mkdir()
    pubmed_file(folder / "pubmed26n0001.xml", out)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def searcher(tmp_path: Path, tiny: TinyModels, small_limits: None) -> Iterator[Searcher]:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [corpus(tmp_path)])
    s = open_searcher(paths, device="cpu", load=True)
    yield s
    s.close()


def test_sentence_search_rescores_compressed_candidates_exactly(searcher: Searcher) -> None:
    dense = searcher.dense
    assert dense is not None and dense.sentences is not None
    assert not dense.sentences.exact  # ~480 sentences: past the (test) flat limit
    dense.sentence_candidates = len(dense.sentences)  # every sentence is a candidate
    text = "tocilizumab lowers cytokine mortality"
    result = searcher.sentences(text, k=5)
    # The oracle: every stored sentence encoded afresh, exact inner product, top 5.
    records = searcher.store.get_many(range(2000, 2120))
    all_sents = [s for a in records.values() for s in article_sentences(a)]
    scores = dense.encoder.encode_sentences([s.text for s in all_sents]) @ dense.encode_query(
        text
    ).reshape(-1)
    order = np.lexsort(([s.sentence_id for s in all_sents], -scores))[:5]
    expected = [all_sents[i] for i in order]
    got = [dict(h.extra) for h in result.hits]
    assert [g["sentence_id"] for g in got] == [s.sentence_id for s in expected]
    assert [g["sentence"] for g in got] == [s.text for s in expected]
    np.testing.assert_allclose([h.score for h in result.hits], scores[order], rtol=1e-4)
    first = got[0]
    pmid, position = divmod(first["sentence_id"], 1000)
    sents = article_sentences(records[pmid])
    before = sents[position - 1].text if position else ""
    assert first["context"]["before"] == before


def test_default_candidates_miss_nothing_better_than_the_sentence_itself(
    searcher: Searcher,
) -> None:
    assert searcher.dense is not None
    records = searcher.store.get_many([2050])
    target = article_sentences(records[2050])[1]
    query = searcher.dense.encode_query(target.text).reshape(-1)
    itself = float(searcher.dense.encoder.encode_sentences([target.text])[0] @ query)
    hits = searcher.sentences(target.text, k=3).hits
    assert len(hits) == 3 and hits[0].score >= itself - 1e-4
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_data_home_with_old_sentence_vectors_says_so_then_ingest_converts_it(
    tmp_path: Path, tiny: TinyModels
) -> None:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [corpus(tmp_path, articles=12)])
    directory = paths.vector_dir("sentences")
    with SentenceCollection.open(directory) as new:
        count = len(new)
    # Rewrite it as an older medsearch left it: a float16 copy of every vector.
    records = Store(paths.store, readonly=True)
    sents = [s for a in records.get_many(range(2000, 2012)).values() for s in article_sentences(a)]
    records.close()
    shutil.rmtree(directory)
    searcher = open_searcher(paths, device="cpu", load=True)
    assert searcher.dense is not None
    vecs = searcher.dense.encoder.encode_sentences([s.text for s in sents])
    searcher.close()
    with VectorCollection.open(directory, dim=vecs.shape[1], profile="tiny", create=True) as old:
        old.add([s.sentence_id for s in sents], vecs)
        old.commit()
    assert len(sents) == count

    searcher = open_searcher(paths, device="cpu", load=True)
    with pytest.raises(OldLayoutError, match="run `medsearch ingest` once"):
        searcher.sentences(sents[0].text)
    assert searcher.search("cytokine", k=3, mode="dense").hits  # articles still work
    searcher.close()

    ingest_and_encode(paths, [])  # what `medsearch ingest` does with no new files
    searcher = open_searcher(paths, device="cpu", load=True)
    hit = searcher.sentences(sents[4].text, k=1).hits[0]
    query = searcher.dense.encode_query(sents[4].text) if searcher.dense else None
    searcher.close()
    assert query is not None
    scores = vecs @ query.reshape(-1)  # the exact oracle over the same vectors
    by_id = {s.sentence_id: float(v) for s, v in zip(sents, scores, strict=True)}
    # The tiny random BERT gives near-ties (32.0 vs 31.99995): compare scores, not ids.
    assert hit.score == pytest.approx(float(scores.max()), rel=1e-3)
    assert by_id[dict(hit.extra)["sentence_id"]] == pytest.approx(hit.score, rel=1e-3)
    assert not (directory / "vectors.f16").exists()


def test_a_cpu_rescores_fewer_candidates_unless_configured(
    searcher: Searcher, tmp_path: Path, tiny: TinyModels
) -> None:
    """Re-encoding 400 sentences is one GPU batch but seconds on a CPU: 100 there."""
    from medsearch.retrieval.dense import SENTENCE_CANDIDATES_CPU

    assert searcher.dense is not None
    assert searcher.dense.sentence_candidates == SENTENCE_CANDIDATES_CPU == 100
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny, search="sentence_candidates = 250")
    with open_searcher(paths, device="cpu", load=True) as configured:
        assert configured.dense is not None
        assert configured.dense.sentence_candidates == 250
