"""Once a pass of a kind of vectors has finished, the next one reads only what changed.

At 40.9M articles, finding the stale articles by joining every record with ``encoded``
reads the whole store (13 s per kind at 10M warm, minutes cold), for every daily update
file. The store queues the PMIDs it writes or deletes instead, per kind, from the end of
the first finished pass on.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny_models import TinyModels, build_tiny_models, ingest_and_encode, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from ingest.encoded import count_stale, finish_pass, queued, record_hashes, stale_pmids
from ingest.pipeline import Ingestor
from medsearch.index.vectors.collection import VectorCollection
from medsearch.paths import Paths
from medsearch.records import Article
from medsearch.store import Store

KINDS = ("articles", "sentences")


def queue(store: Store, kind: str) -> list[int]:
    rows = store.conn.execute("SELECT pmid FROM stale_queue WHERE kind = ? ORDER BY pmid", (kind,))
    return [r[0] for r in rows]


def stale(store: Store, kind: str, profile: str) -> list[int]:
    return [p for chunk in stale_pmids(store, kind, profile, batch=2) for p in chunk]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("models"))


def test_after_a_finished_pass_an_update_is_queued_and_only_it_is_encoded(
    tmp_path: Path, tiny: TinyModels
) -> None:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    first = tmp_path / "base"
    first.mkdir()
    pubmed_file(
        first / "pubmed26n0001.xml",
        [article_xml(p, f"Title {p}", f"Abstract of {p}. Second sentence.") for p in range(1, 9)],
    )
    assert ingest_and_encode(paths, [first]) == 8
    with Store(paths.store) as store:
        assert {kind: queued(store, kind) for kind in KINDS} == dict.fromkeys(KINDS, "tiny")
        assert queue(store, "articles") == queue(store, "sentences") == []

    update = tmp_path / "update"
    update.mkdir()
    pubmed_file(
        update / "pubmed26n0002.xml",
        [
            article_xml(3, "Title 3", "A revised abstract. With news.", version=2),
            article_xml(4, "Title 4", "Abstract of 4. Second sentence."),  # unchanged text
            article_xml(9001, "A new article", "Its abstract."),
        ],
        deletions=[5],
    )
    with Ingestor(paths, jobs=0) as ing:  # --no-encode: the queue waits for the next pass
        assert ing.run([update]).ok
    with Store(paths.store) as store:
        for kind in KINDS:
            assert queue(store, kind) == [3, 4, 5, 9001]
            assert stale(store, kind, "tiny") == [3, 9001]
            assert count_stale(store, kind, "tiny") == 2

    assert ingest_and_encode(paths, []) == 2
    with Store(paths.store) as store:
        assert queue(store, "articles") == queue(store, "sentences") == []
        behind = store.conn.execute(
            "SELECT COUNT(*) FROM records a JOIN encoded e ON e.pmid = a.pmid"
            " WHERE e.content_hash != a.content_hash"
        ).fetchone()[0]
        assert behind == 0
        assert store.conn.execute("SELECT COUNT(*) FROM encoded WHERE pmid = 5").fetchone() == (0,)
    with VectorCollection.open(paths.vector_dir("articles"), readonly=True) as vectors:
        assert vectors.contains(np.array([3, 9001, 5])).tolist() == [True, True, False]
        assert len(vectors) == 8


def _store_with_a_finished_pass(path: Path, n: int) -> Store:
    store = Store(path)
    articles = [Article(pmid=p, title=f"title {p}") for p in range(1, n + 1)]
    with store.transaction():
        store.upsert(articles)
    record_hashes(store, "articles", "tiny", [(a.pmid, a.content_hash, 1) for a in articles])
    finish_pass(store, "articles", "tiny")
    return store


def test_the_queued_pass_reads_the_changes_not_the_store(tmp_path: Path) -> None:
    with _store_with_a_finished_pass(tmp_path / "s.sqlite", 3000) as store:
        with store.transaction():
            store.upsert([Article(pmid=10, title="changed"), Article(pmid=5000, title="new")])

        def steps(profile: str) -> tuple[list[int], int]:
            count = 0

            def tick() -> int:
                nonlocal count
                count += 1
                return 0

            store.conn.set_progress_handler(tick, 100)
            found = stale(store, "articles", profile)
            store.conn.set_progress_handler(None, 0)
            return found, count

        found, queued_steps = steps("tiny")
        assert found == [10, 5000]
        # Another profile: every record is checked, as before any pass had finished.
        everything, full_steps = steps("other")
        assert len(everything) == 3001
        assert queued_steps * 50 < full_steps, (queued_steps, full_steps)


def test_an_interrupted_pass_leaves_the_rest_of_the_queue_for_the_next(tmp_path: Path) -> None:
    with _store_with_a_finished_pass(tmp_path / "s.sqlite", 20) as store:
        changed = [Article(pmid=p, title=f"v2 {p}") for p in (2, 7, 30)]
        with store.transaction():
            store.upsert(changed)
        # The first of two commits landed (its ``encoded`` rows), then the process died.
        record_hashes(store, "articles", "tiny", [(changed[0].pmid, changed[0].content_hash, 1)])
        assert stale(store, "articles", "tiny") == [7, 30]
        finish_pass(store, "articles", "tiny")
        assert queue(store, "articles") == []


def test_nothing_is_queued_before_a_pass_has_finished(tmp_path: Path) -> None:
    """The first pass reads every record anyway; queueing the baseline would only cost."""
    with Store(tmp_path / "s.sqlite") as store:
        with store.transaction():
            store.upsert([Article(pmid=p) for p in range(1, 50)])
            store.delete([3])
        assert queue(store, "articles") == []
        assert queued(store, "articles") is None
        assert len(stale(store, "articles", "tiny")) == 48
