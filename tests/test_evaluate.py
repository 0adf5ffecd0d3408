"""`medsearch eval`: BEIR corpora through the same ingest/index/search code as PubMed."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO, shared_data
from tiny_models import build_tiny_models, write_tiny_config

from ingest.cpu_guard import CpuLimitError
from medsearch.cli import main
from medsearch.evaluate import evaluate
from medsearch.index.lexical.index import LexicalIndex
from medsearch.paths import Paths

DOCS = {
    "d1": ("Aspirin and heart attack", "Low-dose aspirin reduces myocardial infarction."),
    "d2": ("Statins lower cholesterol", "Statin therapy lowers LDL cholesterol levels."),
    "d3": ("Vitamin D and bone density", "Vitamin D supplements increase bone mineral density."),
    "d4": ("Metformin in diabetes", "Metformin improves glycaemic control in type 2 diabetes."),
    "doc-5": ("Smoking and lung cancer", "Tobacco smoking causes most lung cancers."),
}
QUERIES = {
    "q1": "aspirin prevents myocardial infarction",
    "q2": "statins reduce LDL cholesterol",
    "q3": "smoking causes lung cancer",
}
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "doc-5", 1)]


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    root = tmp_path / "tinybeir"
    (root / "qrels").mkdir(parents=True)
    with (root / "corpus.jsonl").open("w") as fh:
        for doc_id, (title, text) in DOCS.items():
            fh.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (root / "queries.jsonl").open("w") as fh:
        for qid, text in QUERIES.items():
            fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore", *(f"{q}\t{d}\t{s}" for q, d, s in QRELS)]
    (root / "qrels" / "test.tsv").write_text("\n".join(lines) + "\n")
    return root


def test_lexical_eval_finds_every_relevant_document_first(beir: Path, tmp_path: Path) -> None:
    report = evaluate(beir, Paths(tmp_path / "home"), mode="lexical")
    assert report.queries == 3
    assert report.metrics == {"ndcg@10": 1.0, "recall@100": 1.0, "map@10": 1.0, "mrr@10": 1.0}


def test_a_new_collection_is_added_to_its_index_without_staging_deletes(
    beir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tantivy holds each staged delete (~1.3 KB) until the corpus's one commit
    def staged_deletes(*_: object) -> None:
        raise AssertionError("nothing to replace in a new collection")

    monkeypatch.setattr(LexicalIndex, "upsert_documents", staged_deletes)
    report = evaluate(beir, Paths(tmp_path / "home"), mode="lexical")
    assert report.metrics["ndcg@10"] == 1.0


def test_an_index_a_crash_left_ahead_of_the_store_is_rebuilt_without_staging_deletes(
    beir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from medsearch.index.lexical.shards import open_lexical

    paths = Paths(tmp_path / "home")
    evaluate(beir, paths, mode="lexical")
    (collection,) = paths.eval_cache.iterdir()
    for file in collection.glob("store.sqlite*"):  # the index committed, the store did not
        file.unlink()

    def staged_deletes(*_: object) -> None:
        raise AssertionError("one delete of everything, not one per document")

    monkeypatch.setattr(LexicalIndex, "upsert_documents", staged_deletes)
    report = evaluate(beir, paths, mode="lexical")
    assert report.metrics["ndcg@10"] == 1.0
    index = open_lexical(Paths(collection).lexical_index, create=False)
    assert index.count() == len(DOCS)  # emptied and filled in one commit, not doubled
    index.close()


def test_delta_on_a_corpus_too_small_to_train_on_measures_the_first_stage_and_says_so(
    beir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    args = ["--home", str(home), "eval", str(beir), "--rerank", "delta"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "ndcg@10     1.0000" in result.stdout  # the figures, of the first-stage order
    assert (
        "note: first-stage order kept: no Delta model can be trained on this corpus (the"
        f" corpus has {len(DOCS)} articles; the Delta reranker needs at least 1,000 articles"
    ) in result.stderr
    report = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)
    assert report["metrics"]["ndcg@10"] == 1.0
    assert not any("reranked by" in n or "`medsearch rerank train`" in n for n in report["notes"])


def test_a_second_run_reuses_the_cached_collection(beir: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(main, ["--home", str(home), "eval", str(beir), "--json"])
    assert result.exit_code == 0, result.stderr
    again = CliRunner().invoke(main, ["--home", str(home), "eval", str(beir), "--json"])
    report = json.loads(again.stdout)
    assert report["metrics"]["ndcg@10"] == 1.0
    assert any("reused the cached collection" in n for n in report["notes"])


def test_dense_and_rerank_modes_encode_within_the_cpu_guard(
    beir: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a CPU, eval encodes within ingest's CPU guard: past the limit (here 0) it stops
    after the timed probe with one line saying what it would take and how to go on;
    ``--device cpu`` then encodes the rest (the probe's vectors kept) and measures."""
    import torch

    monkeypatch.setattr("ingest.encode_stage.PROBE_ARTICLES", 1)
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, build_tiny_models(tmp_path_factory.mktemp("tiny")))
    with paths.config_file.open("a") as config:
        config.write("[ingest]\ncpu_encode_minutes = 0\n")
    if not torch.cuda.is_available():  # auto on a GPU encodes whatever waits
        with pytest.raises(CpuLimitError) as refused:
            evaluate(beir, paths, mode="dense", profile="tiny")
        line = str(refused.value)
        assert line.startswith("encoding all 5 documents would take ~")
        assert "(timed on the first 1, which are kept), past the 0-minute limit" in line
        assert "`medsearch eval ... --device cpu`" in line and "\n" not in line
    for mode in ("dense", "hybrid", "rerank"):
        report = evaluate(beir, paths, mode=mode, profile="tiny", device="cpu")
        assert report.profile == "tiny" and report.queries == 3
        assert 0.0 <= report.metrics["ndcg@10"] <= 1.0
        assert report.metrics["recall@100"] == 1.0  # 5 documents, all retrieved


def test_not_a_beir_folder_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "h"), "eval", str(tmp_path)])
    assert result.exit_code != 0
    assert "corpus.jsonl" in result.stderr or "qrels" in result.stderr
    assert "Traceback" not in result.stderr


def test_eval_json_prints_its_failure_as_ingest_and_update_do(tmp_path: Path) -> None:
    """A script reading ``--json`` gets one object whatever happened: the error's one
    line and the exit status, no figures."""
    args = ["--home", str(tmp_path / "h"), "eval", str(tmp_path), "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    report = json.loads(result.stdout)
    assert report["exit_status"] == result.exit_code and "is missing" in report["error"]
    assert report["metrics"] == {} and report["mode"] == "lexical"


def test_lexical_eval_names_no_model_profile(beir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["--home", str(tmp_path / "h"), "eval", str(beir)])
    assert result.exit_code == 0, result.output
    assert "mode=lexical queries=3" in result.stdout and "profile" not in result.stdout
    ok = CliRunner().invoke(main, ["--home", str(tmp_path / "h"), "eval", str(beir), "--json"])
    assert json.loads(ok.stdout)["exit_status"] == 0


@pytest.mark.thorough
def test_scifact_lexical_beats_published_bm25_on_a_query_sample(tmp_path: Path) -> None:
    scifact = shared_data("beir", "scifact")
    report = evaluate(scifact, Paths(tmp_path / "home"), mode="lexical", limit=100)
    assert report.queries == 100
    assert report.metrics["ndcg@10"] >= 0.62  # full test split: 0.7043 (BENCHMARKS.md)


def test_the_readmes_eval_example_runs_on_a_fresh_clone(tmp_path: Path) -> None:
    """The README's `medsearch eval` names a folder the repository ships (a clone has no
    ../shared/data), and that folder is a BEIR set eval reads through."""
    examples = re.findall(r"^medsearch eval (\S+)", (REPO / "README.md").read_text(), re.M)
    assert examples == ["assets/beir/tiny"]
    folder = REPO / examples[0]
    result = CliRunner().invoke(
        main, ["--home", str(tmp_path / "home"), "eval", str(folder), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["queries"] == 5 and report["metrics"]["ndcg@10"] > 0.5


def test_the_long_query_note_speaks_of_the_queries_not_of_the_source(tmp_path: Path) -> None:
    """A long query's commonest words leave BM25 as in `search`; eval's note says so in
    the user's words and points into no source file."""
    root = tmp_path / "long"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_bytes((REPO / "assets/beir/tiny/corpus.jsonl").read_bytes())
    words = "aspirin statins vitamin metformin smoking lung cancer cholesterol heart bleeding"
    (root / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": words}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tt01\t1\n")
    report = evaluate(root, Paths(tmp_path / "home"), mode="lexical")
    (note,) = [n for n in report.notes if n.startswith("1 of 1 queries")]
    assert "commonest words were left out of the BM25 ranking" in note
    assert ".py" not in note and "WordBudget" not in note
