"""``medsearch rerank train``, ``mark`` and Delta-reranked searches, end to end.

One synthetic corpus of PubMed records (keywords and MeSH included) is ingested
lexically once for the module; each test copies it into its own data home. To keep the
suite fast the corpus is small, so the module lowers the training minimum to 200
articles and the reranked depth to 100 (the defaults are 1,000 and 500).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.synth import write_synthetic_pubmed
from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.progress import NullProgress
from medsearch.rerank import marks
from medsearch.retrieval.searcher import open_searcher
from medsearch.training.train import TrainOptions, train

ARTICLES = 400
MINIMUM = 200
QUICK = ["--queries", "120", "--epochs", "2"]
SETTINGS = "delta_depth = 100"

pytestmark = pytest.mark.thorough  # whole paths (training, kill and resume): .ci/run runs them


@pytest.fixture(scope="module", autouse=True)
def small_corpora_may_train() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("medsearch.rerank.loading.MIN_ARTICLES", MINIMUM)
        yield


def run(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--home", str(home), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def run_json(home: Path, *args: str) -> Any:
    return json.loads(run(home, *args, "--json").stdout)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("delta-corpus")
    source = root / "pubmed26n0001.xml"
    write_synthetic_pubmed(source, ARTICLES, words_per_doc=60, vocab_size=3_000, seed=3)
    home = root / "home"
    run(home, "ingest", str(source), "--no-encode")
    Paths(home).config_file.write_text(f"[search]\n{SETTINGS}\n")
    return home


@pytest.fixture
def home(built: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "corpus"
    shutil.copytree(built, copy)
    return copy


def blend(home: Path, value: float) -> None:
    """Set the trained model's blend. The mechanics these tests check do not depend on
    whether a tiny synthetic corpus taught the model to beat its first stage (blend 0
    means it did not, and searches then keep the first-stage order)."""
    meta_file = home / "rerank" / "delta" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["blend"] = value
    meta_file.write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def trained(built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = tmp_path_factory.mktemp("trained") / "home"
    shutil.copytree(built, copy)
    run(copy, "rerank", "train", *QUICK)
    blend(copy, 0.5)
    return copy


def test_training_reports_its_signals_and_installs_a_model(home: Path) -> None:
    report = run_json(home, "rerank", "train", *QUICK)
    assert set(report["queries"]) <= {"keywords", "titles"} and sum(report["queries"].values()) > 0
    assert report["pairs"] > 0 and report["epochs"] >= 1
    assert set(report["validation_ndcg@10"]) >= {"first_stage", "delta", "blend_1.0"}
    assert report["judged_on"].endswith("queries of every kind")  # 120 queries: < 50 fair
    assert (home / "rerank" / "delta" / "meta.json").exists()
    assert not (home / "rerank" / "work").exists()  # work files go once the model is in
    meta = json.loads((home / "rerank" / "delta" / "meta.json").read_text())
    assert meta["corpus"]["articles"] == ARTICLES and meta["blend"] in (0.0, 0.25, 0.5, 0.75, 1.0)
    status = run_json(home, "rerank", "status")
    # usable, unless held-out queries showed it cannot beat the first stage
    assert status["usable"] == (meta["blend"] > 0)


def test_a_search_says_how_to_train_until_a_model_exists(home: Path) -> None:
    out = run_json(home, "search", "rex cluhae", "-k", "5")
    assert out["reranker"] is None
    assert any("medsearch rerank train" in n for n in out["notes"])


def test_searches_are_ordered_by_delta_and_say_so(trained: Path) -> None:
    out = run_json(trained, "search", "rex cluhae", "-k", "5")
    assert out["reranker"] == "delta"
    assert len(out["hits"]) == 5
    assert all(h["first_stage_rank"] >= 1 for h in out["hits"])
    plain = run_json(trained, "search", "rex cluhae", "-k", "5", "--rerank", "none")
    assert plain["reranker"] is None
    assert {h["pmid"] for h in plain["hits"]} <= set(range(1, ARTICLES + 1))
    text = run(trained, "search", "rex cluhae", "-k", "3").stdout
    assert "reranked by delta" in text


def test_delta_reorders_only_the_first_stage_candidates(trained: Path) -> None:
    with open_searcher(Paths(trained)) as searcher:
        first = searcher.search("rex dopetha cluhae", k=100, rerank="none")
        reranked = searcher.search("rex dopetha cluhae", k=100, rerank="delta")
    assert reranked.rerankers == ("delta",)
    assert {h.pmid for h in reranked.hits} == {h.pmid for h in first.hits}
    assert [h.rank for h in reranked.hits] == list(range(1, len(first.hits) + 1))


def test_cite_uses_the_same_rerankers(trained: Path, tmp_path: Path) -> None:
    paragraph = tmp_path / "p.txt"
    paragraph.write_text("Ce rex dopetha cluhae ke bae [1].", encoding="utf-8")
    out = run_json(trained, "cite", "--file", str(paragraph), "--rerank", "delta")
    assert out["citances"] and out["citances"][0]["reranker"] == "delta"


def test_a_model_trained_on_another_corpus_size_is_not_silently_reused(trained: Path) -> None:
    meta_file = trained / "rerank" / "delta" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["corpus"]["articles"] = 100  # as if it had been trained before a large ingest
    meta_file.write_text(json.dumps(meta))
    try:
        out = run_json(trained, "search", "rex cluhae", "-k", "3")
        assert out["reranker"] is None
        assert any("out of date" in n for n in out["notes"])
        assert not run_json(trained, "rerank", "status")["usable"]
    finally:
        meta["corpus"]["articles"] = ARTICLES
        meta_file.write_text(json.dumps(meta))


class StopAt(NullProgress):
    """Ctrl-C after ``steps`` training steps."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps
        self.started: list[str] = []

    def start(self, key: str, description: str, total: int | None = None) -> None:
        self.started.append(key)

    def advance(self, key: str, amount: int = 1) -> None:
        if key == "train":
            self.steps -= amount
            if self.steps < 0:
                raise KeyboardInterrupt


def test_an_interrupted_training_resumes_without_redoing_finished_stages(home: Path) -> None:
    paths = Paths(home)
    options = TrainOptions(queries=120, epochs=3, batch=32)
    with open_searcher(paths) as searcher:
        with pytest.raises(KeyboardInterrupt):
            train(paths, searcher, options, StopAt(steps=40))
        work = paths.rerank_dir / "work"
        assert (work / "words.npz").exists() and (work / "examples.npz").exists()
        assert not (paths.rerank_dir / "delta").exists()
        again = StopAt(steps=10**9)
        report = train(paths, searcher, options, again)
    assert "words" not in again.started and "examples" not in again.started
    assert report.epochs >= 1 and (paths.rerank_dir / "delta" / "meta.json").exists()


def test_marks_are_logged_listed_used_for_training_and_cleared(home: Path) -> None:
    run(home, "mark", "17", "42", "--query", "kinase inhibitors", "--signal", "exported")
    listed = run_json(home, "mark", "--list")["marks"]
    assert [(m["pmid"], m["signal"], m["query"]) for m in listed] == [
        (17, "exported", "kinase inhibitors"),
        (42, "exported", "kinase inhibitors"),
    ]
    report = run_json(home, "rerank", "train", "--signals", "titles,marks", *QUICK)
    assert report["queries"]["marks"] == 1
    assert run_json(home, "mark", "--clear") == {"cleared": 2}
    assert not Paths(home).signals_file.exists()


def test_mark_refuses_what_it_cannot_record(home: Path) -> None:
    result = CliRunner().invoke(main, ["--home", str(home), "mark", "17"])
    assert result.exit_code == 2 and "--query" in result.output
    result = CliRunner().invoke(main, ["--home", str(home), "mark", "x1", "--query", "q"])
    assert result.exit_code != 0 and "PMID" in result.output


def test_the_log_skips_a_torn_line(tmp_path: Path) -> None:
    log = tmp_path / "signals.jsonl"
    marks.record(log, "a query", [1, 2], "opened")
    with log.open("a") as out:
        out.write('{"query": "half a li')
    marks.record(log, "a query", [2], "cited")
    got = marks.by_query(marks.read(log))
    assert got == {"a query": {1: 30.0, 2: 100.0}}


def test_training_refuses_a_corpus_too_small_to_learn_from(tmp_path: Path) -> None:
    source = tmp_path / "small.xml"
    write_synthetic_pubmed(source, 50, words_per_doc=30)
    home = tmp_path / "small"
    run(home, "ingest", str(source), "--no-encode")
    result = CliRunner().invoke(main, ["--home", str(home), "rerank", "train"])
    assert result.exit_code == 2 and f"at least {MINIMUM}" in result.output
    # ...and its searches do not nag about a model it cannot have
    assert "rerank train" not in "".join(run_json(home, "search", "rex cluhae").get("notes", []))
    asked = run_json(home, "search", "rex cluhae", "--rerank", "delta")["notes"]
    assert any(f"at least {MINIMUM}" in n for n in asked)
    assert not any("rerank train" in n for n in asked)


def test_cross_encoder_scores_grade_the_candidates_and_refine_the_head(
    built: Path, tmp_path: Path
) -> None:
    """On a profile with a cross-encoder: distillation as a training signal, and on a CPU
    ``auto`` = Delta over the top 500, then the cross-encoder on the head."""
    from tiny_models import build_tiny_models, ingest_and_encode, write_tiny_config

    home = tmp_path / "vectors"
    shutil.copytree(built, home)
    paths = Paths(home)
    write_tiny_config(paths, build_tiny_models(tmp_path / "tiny"), search=SETTINGS)
    ingest_and_encode(paths, [])
    report = run_json(
        home, "rerank", "train", "--signals", "titles,cross", "--queries", "60", "--epochs", "1"
    )
    assert report["queries"] == {"titles": report["queries"]["titles"]}
    meta = json.loads((home / "rerank" / "delta" / "meta.json").read_text())
    assert meta["used_profile"] and meta["corpus"]["profile"] == "tiny"
    blend(home, 0.5)
    out = run_json(home, "search", "rex cluhae", "-k", "3", "--device", "cpu")
    assert out["reranker"] == "delta+cross" and out["reranked"]
    gpu_like = run_json(home, "search", "rex cluhae", "-k", "3", "--rerank", "cross")
    assert gpu_like["reranker"] == "cross"


def test_a_model_that_did_not_beat_the_first_stage_is_announced_once_then_left_alone(
    trained: Path,
) -> None:
    """Training kept the first-stage order: the next search says so with the held-out
    figures, later ones (other processes, or the same searcher) say nothing, and asking
    to train again comes back only once the corpus has changed by a quarter."""
    blend(trained, 0.0)
    meta_file = trained / "rerank" / "delta" / "meta.json"
    try:
        first = run_json(trained, "search", "rex cluhae", "-k", "3")
        assert first["reranker"] is None
        (said,) = first["notes"]
        assert said.startswith("rerank train kept the first-stage order: the Delta model did")
        assert "nDCG@10" in said and "held-out" in said and "`medsearch rerank train`" not in said
        assert not run_json(trained, "search", "rex cluhae", "-k", "3").get("notes")
        asked = run_json(trained, "search", "rex cluhae", "-k", "3", "--rerank", "delta")
        assert asked["reranker"] is None
        assert any("did not beat the first stage" in n for n in asked["notes"])
        assert not any("`medsearch rerank train`" in n for n in asked["notes"])
        assert "did not beat" in run_json(trained, "rerank", "status")["problem"]
        # a model trained on a corpus a quarter smaller than today's: worth training again
        meta = json.loads(meta_file.read_text())
        meta["corpus"]["articles"] = ARTICLES * 3 // 4
        meta_file.write_text(json.dumps(meta))
        grown = run_json(trained, "search", "rex cluhae", "-k", "3")
        assert any("out of date" in n and "rerank train" in n for n in grown["notes"])
    finally:
        meta = json.loads(meta_file.read_text())
        meta["corpus"]["articles"] = ARTICLES
        meta_file.write_text(json.dumps(meta))
        blend(trained, 0.5)
        (trained / "rerank" / "told.json").unlink(missing_ok=True)


def test_one_searcher_announces_the_kept_first_stage_order_once(trained: Path) -> None:
    """The app keeps one searcher for a session: it too says it once."""
    blend(trained, 0.0)
    try:
        with open_searcher(Paths(trained)) as searcher:
            notes = [searcher.search("rex cluhae", k=3).notes for _ in range(2)]
        assert [len(n) for n in notes] == [1, 0] and "kept the first-stage order" in notes[0][0]
    finally:
        blend(trained, 0.5)
        (trained / "rerank" / "told.json").unlink(missing_ok=True)


def test_the_blend_is_judged_on_queries_the_first_stage_cannot_answer_by_copying() -> None:
    import numpy as np

    from medsearch.training.train import FAIR_MIN, judged_queries

    def held_out(kinds: list[str]) -> dict[str, Any]:
        return {"validation": np.arange(len(kinds)), "validation_kind": np.array(kinds)}

    # a title query's answer is in the index verbatim; keywords and marks are not
    mixed = held_out(["titles"] * 100 + ["keywords"] * FAIR_MIN + ["marks"] * 5)
    queries, said = judged_queries(mixed)
    assert queries.tolist() == list(range(100, 100 + FAIR_MIN + 5))
    assert said == f"{FAIR_MIN + 5} held-out keywords and marks queries"
    # too few fair queries to judge by: all of them, and the first stage is favoured
    few = held_out(["titles"] * 100 + ["keywords"] * (FAIR_MIN - 1))
    assert len(judged_queries(few)[0]) == 100 + FAIR_MIN - 1
    assert judged_queries(few)[1] == f"{100 + FAIR_MIN - 1} held-out queries of every kind"


def test_eval_trains_the_collections_model_once_and_reuses_it_whatever_it_chose(
    tmp_path: Path,
) -> None:
    """The collection's passages have no titles (and BEIR has no keywords): the model
    learns from its abstract sentences instead, and eval says so."""
    import random

    rng = random.Random(5)
    vocab = [f"w{i}x" for i in range(400)]
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    with (beir / "corpus.jsonl").open("w") as out:
        for i in range(MINIMUM + 20):
            sentences = [" ".join(rng.choices(vocab, k=rng.randint(8, 14))) for _ in range(5)]
            doc = {"_id": f"d{i}", "title": "", "text": ". ".join(sentences) + "."}
            out.write(json.dumps(doc) + "\n")
    (beir / "queries.jsonl").write_text(
        "".join(
            json.dumps({"_id": f"q{i}", "text": " ".join(rng.sample(vocab, 3))}) + "\n"
            for i in range(4)
        )
    )
    (beir / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\td{i}\t1\n" for i in range(4))
    )
    home = tmp_path / "home"
    first = run_json(home, "eval", str(beir), "--rerank", "delta")
    trained = [n for n in first["notes"] if "trained the collection's Delta model" in n]
    assert trained and "'sentences'" in trained[0]
    assert any("abstract sentences were the training queries" in n for n in first["notes"])
    again = run_json(home, "eval", str(beir), "--rerank", "delta")
    assert any("reused the collection's Delta model" in n for n in again["notes"])
    assert not any("trained the collection's" in n for n in again["notes"])
    assert again["metrics"] == first["metrics"]
