"""IR metrics match pytrec_eval (what BEIR reports) to 1e-9; BEIR directories load exactly."""

from __future__ import annotations

import hashlib
import json
import math
import random
from pathlib import Path

import pytest
import pytrec_eval
from conftest import shared_data

from medsearch.beir import (
    HASH_BASE,
    BeirDoc,
    BeirFormatError,
    PmidMap,
    beir_doc_to_article,
    doc_pmid,
    load_corpus,
    load_qrels,
    load_queries,
)
from medsearch.errors import MedsearchError
from medsearch.metrics import (
    evaluate_run,
    map_at_k,
    mrr_at_k,
    ndcg_at_k,
    ranked,
    recall_at_k,
)

TREC_MEASURES = {"ndcg_cut_10", "ndcg_cut_3", "recall_100", "recall_5", "map_cut_10", "map_cut_3"}

# ---------------------------------------------------------------- worked example


def test_metrics_worked_example() -> None:
    # judgements: a=2, b=1, c=0, e=1   (relevant: a, b, e -> 3)
    # ranking:    c, b, x, a, e        (x unjudged)
    qrels = {"a": 2, "b": 1, "c": 0, "e": 1}
    ranking = ["c", "b", "x", "a", "e"]
    # DCG@5  = 0/log2(2) + 1/log2(3) + 0/log2(4) + 2/log2(5) + 1/log2(6)
    #        = 0 + 0.63093 + 0 + 0.86135 + 0.38685 = 1.87913
    # IDCG@5 = 2/log2(2) + 1/log2(3) + 1/log2(4) = 2 + 0.63093 + 0.5 = 3.13093
    dcg = 1 / math.log2(3) + 2 / math.log2(5) + 1 / math.log2(6)
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert ndcg_at_k(ranking, qrels, k=5) == pytest.approx(dcg / idcg)
    # nDCG@2: DCG = 1/log2(3); IDCG@2 = 2 + 1/log2(3)
    assert ndcg_at_k(ranking, qrels, k=2) == pytest.approx(
        (1 / math.log2(3)) / (2 + 1 / math.log2(3))
    )
    # recall@2 = 1 of 3; recall@5 = 3 of 3
    assert recall_at_k(ranking, qrels, k=2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, qrels, k=5) == 1.0
    # AP@5 = (P@2 + P@4 + P@5) / 3 = (1/2 + 2/4 + 3/5) / 3 = 1.6 / 3
    assert map_at_k(ranking, qrels, k=5) == pytest.approx(1.6 / 3)
    # AP@3 = (1/2) / 3: the denominator is all 3 relevant, not min(k, 3)
    assert map_at_k(ranking, qrels, k=3) == pytest.approx(0.5 / 3)
    # first relevant at rank 2 -> 1/2; cut at 1 -> 0
    assert mrr_at_k(ranking, qrels, k=10) == 0.5
    assert mrr_at_k(ranking, qrels, k=1) == 0.0


def test_metrics_edge_cases() -> None:
    # No relevant judgement at all: every measure is 0, not a division by zero.
    assert ndcg_at_k(["a"], {"a": 0}) == 0.0
    assert recall_at_k(["a"], {"a": 0}) == 0.0
    assert map_at_k(["a"], {"a": 0}) == 0.0
    # Negative judgements gain nothing (trec_eval) and do not count as relevant.
    assert ndcg_at_k(["n", "a"], {"n": -1, "a": 1}, k=2) == pytest.approx(1 / math.log2(3))
    # A document repeated in a ranked list counts once, at its first position, and the
    # repeat takes no rank: ["a", "a", "b"] is ["a", "b"].
    assert recall_at_k(["a", "a", "b"], {"a": 1, "b": 1}, k=2) == 1.0
    assert map_at_k(["a", "a", "b"], {"b": 1}) == map_at_k(["a", "b"], {"b": 1}) == 0.5
    assert ndcg_at_k([], {"a": 1}) == 0.0


def test_ranked_orders_ties_like_trec_eval() -> None:
    # score descending; equal scores by docid descending (trec_eval's strcmp order)
    assert ranked({"a": 1.0, "c": 2.0, "b": 1.0, "d": 0.5}) == ["c", "b", "a", "d"]


# ---------------------------------------------------------------- pytrec_eval parity


def random_case(
    rng: random.Random,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """Graded qrels (0-3, some -1) and a scored run with many score ties."""
    docs = [f"d{i}" for i in range(40)]
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(12):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 15))
        qrels[qid] = {doc: rng.choice([-1, 0, 0, 1, 1, 2, 3]) for doc in judged}
        retrieved = rng.sample(docs, rng.randint(0, 30))
        # scores drawn from a handful of values, so ties are common
        run[qid] = {doc: float(rng.randint(0, 5)) for doc in retrieved}
    return qrels, run


def trec(
    qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]]
) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES | {"recip_rank"})
    result: dict[str, dict[str, float]] = evaluator.evaluate(run)
    return result


@pytest.mark.parametrize("seed", range(20))
def test_per_query_measures_match_pytrec_eval_with_score_ties(seed: int) -> None:
    qrels, run = random_case(random.Random(seed))
    expected = trec(qrels, run)
    for qid, measures in expected.items():
        ranking = ranked(run[qid])
        judged = qrels[qid]
        assert ndcg_at_k(ranking, judged, 10) == pytest.approx(measures["ndcg_cut_10"], abs=1e-9)
        assert ndcg_at_k(ranking, judged, 3) == pytest.approx(measures["ndcg_cut_3"], abs=1e-9)
        assert recall_at_k(ranking, judged, 100) == pytest.approx(measures["recall_100"], abs=1e-9)
        assert recall_at_k(ranking, judged, 5) == pytest.approx(measures["recall_5"], abs=1e-9)
        assert map_at_k(ranking, judged, 10) == pytest.approx(measures["map_cut_10"], abs=1e-9)
        assert map_at_k(ranking, judged, 3) == pytest.approx(measures["map_cut_3"], abs=1e-9)
        # recip_rank is uncut in trec_eval; cut at a k beyond the run it is the same
        assert mrr_at_k(ranking, judged, 1000) == pytest.approx(measures["recip_rank"], abs=1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_evaluate_run_ranked_lists_and_scores_agree_with_pytrec_eval(seed: int) -> None:
    rng = random.Random(1000 + seed)
    qrels, scored = random_case(rng)
    # Our runs are ranked lists. pytrec_eval needs scores: give rank i the score
    # len - i, strictly decreasing, so no tie can reorder the list.
    lists = {qid: rng.sample(list(docs), len(docs)) for qid, docs in scored.items()}
    as_scores = {
        qid: {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
        for qid, ranking in lists.items()
    }
    expected = trec(qrels, as_scores)
    assert set(expected) == set(qrels)  # random_case answers every judged query

    def mean(measure: str) -> float:
        return sum(m[measure] for m in expected.values()) / len(expected)

    ours = evaluate_run(lists, qrels)
    assert ours["ndcg@10"] == pytest.approx(mean("ndcg_cut_10"), abs=1e-9)
    assert ours["recall@100"] == pytest.approx(mean("recall_100"), abs=1e-9)
    assert ours["map@10"] == pytest.approx(mean("map_cut_10"), abs=1e-9)
    # The scored run with ties goes through trec_eval's tie order.
    ours_scored = evaluate_run(scored, qrels)
    expected_scored = trec(qrels, scored)
    assert ours_scored["ndcg@10"] == pytest.approx(
        sum(m["ndcg_cut_10"] for m in expected_scored.values()) / len(qrels), abs=1e-9
    )
    assert ours_scored["map@10"] == pytest.approx(
        sum(m["map_cut_10"] for m in expected_scored.values()) / len(qrels), abs=1e-9
    )


def test_evaluate_run_keys_and_unanswered_queries_count_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a"], "unjudged": ["z"]}  # q2 unanswered, "unjudged" ignored
    result = evaluate_run(run, qrels)
    assert {"ndcg@10", "recall@100", "map@10", "mrr@10"} <= set(result)
    # q1 is perfect (1.0), q2 counts 0: mean 0.5 on every measure
    assert result["ndcg@10"] == 0.5
    assert result["recall@100"] == 0.5
    assert result["map@10"] == 0.5
    assert result["mrr@10"] == 0.5
    assert evaluate_run({}, {}) == dict.fromkeys(result, 0.0)
    assert set(evaluate_run(run, qrels, k_values=(1,))) == {"ndcg@1", "recall@1", "map@1", "mrr@1"}


# ---------------------------------------------------------------- BEIR loading


def write_beir(root: Path, *, qrels_text: str | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    corpus = [
        {"_id": "101", "title": "Aspirin and stroke", "text": "Aspirin lowers stroke risk."},
        {"_id": "ug7v899j", "title": "Coronavirus spike", "text": ""},
        {"_id": "007", "title": "", "text": "Leading zeros are not numbers."},
    ]
    (root / "corpus.jsonl").write_text(
        "\n".join(json.dumps(doc) for doc in corpus) + "\n\n", encoding="utf-8"
    )
    queries = [{"_id": "1", "text": "does aspirin prevent stroke", "metadata": {}}]
    (root / "queries.jsonl").write_text(
        "\n".join(json.dumps(q) for q in queries) + "\n", encoding="utf-8"
    )
    (root / "qrels").mkdir(exist_ok=True)
    (root / "qrels" / "test.tsv").write_text(
        qrels_text or "query-id\tcorpus-id\tscore\n1\t101\t2\n1\tug7v899j\t0\n", encoding="utf-8"
    )
    return root


def test_load_tiny_beir_dir(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "tiny")
    docs = list(load_corpus(root))
    assert docs == [
        BeirDoc("101", "Aspirin and stroke", "Aspirin lowers stroke risk."),
        BeirDoc("ug7v899j", "Coronavirus spike", ""),
        BeirDoc("007", "", "Leading zeros are not numbers."),
    ]
    assert load_queries(root) == {"1": "does aspirin prevent stroke"}
    assert load_qrels(root) == {"1": {"101": 2, "ug7v899j": 0}}


def test_not_beir_dirs_name_the_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BeirFormatError, match="not a directory"):
        list(load_corpus(tmp_path / "nowhere"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(MedsearchError, match=r"corpus\.jsonl is missing"):
        next(load_corpus(empty))
    with pytest.raises(MedsearchError, match=r"queries\.jsonl is missing"):
        load_queries(empty)
    root = write_beir(tmp_path / "tiny")
    with pytest.raises(MedsearchError, match=r"qrels/dev\.tsv is missing"):
        load_qrels(root, split="dev")


def test_malformed_files_say_where(tmp_path: Path) -> None:
    root = write_beir(tmp_path / "bad")
    (root / "corpus.jsonl").write_text('{"_id": "1", "text": "ok"}\n{not json\n', encoding="utf-8")
    with pytest.raises(BeirFormatError, match="line 2 is not valid JSON"):
        list(load_corpus(root))
    (root / "qrels" / "test.tsv").write_text("1\t101\t1\n", encoding="utf-8")
    with pytest.raises(BeirFormatError, match="header"):
        load_qrels(root)
    (root / "qrels" / "test.tsv").write_text("q\tc\ts\n1\t101\n", encoding="utf-8")
    with pytest.raises(BeirFormatError, match="line 2"):
        load_qrels(root)


def test_doc_pmid_is_stable_and_reversible() -> None:
    assert doc_pmid("31715818") == 31715818
    assert doc_pmid("0") == 0
    # Non-canonical or non-numeric ids are hashed above every kept numeric id, and the
    # hash is BLAKE2b, so it is the same on every machine and in every process.
    for doc_id in ("007", "ug7v899j", "-5", "١٢", str(2**60), "PMC123"):
        key = doc_pmid(doc_id)
        assert HASH_BASE <= key < 2 * HASH_BASE, doc_id
        assert key == doc_pmid(doc_id)
    digest = hashlib.blake2b(b"ug7v899j", digest_size=8).digest()
    assert doc_pmid("ug7v899j") == 2**52 + int.from_bytes(digest, "big") % 2**52
    # Every key leaves room for sentence ids (pmid * 1000 + position) in a signed int64.
    assert (2 * HASH_BASE) * 1000 + 999 < 2**63
    mapping = PmidMap()
    keys = [mapping.add(d) for d in ("101", "ug7v899j", "007")]
    assert [mapping.doc_id(k) for k in keys] == ["101", "ug7v899j", "007"]
    assert mapping.add("101") == 101  # adding again is fine
    assert len(mapping) == 3 and 101 in mapping
    with pytest.raises(KeyError):
        mapping.doc_id(5)


def test_pmid_map_refuses_a_collision() -> None:
    mapping = PmidMap()
    mapping._doc_ids[doc_pmid("abc")] = "someone-else"  # simulate a hash collision
    with pytest.raises(BeirFormatError, match="same key"):
        mapping.add("abc")


def test_beir_doc_to_article() -> None:
    article = beir_doc_to_article(BeirDoc("ug7v899j", "Spike", "The spike binds ACE2."), 42)
    assert article.pmid == 42
    assert article.title == "Spike"
    assert [(s.text, s.label) for s in article.abstract] == [("The spike binds ACE2.", None)]
    assert article.abstract_text == "The spike binds ACE2."
    assert article.article_id("beir") == "ug7v899j"
    assert beir_doc_to_article(BeirDoc("1", "Title only", ""), 1).abstract == ()


def test_scifact_counts() -> None:
    root = shared_data("beir", "scifact")
    docs = list(load_corpus(root))
    assert len(docs) == 5183
    assert len({d.doc_id for d in docs}) == 5183
    # SciFact ids are PubMed-style integers: each is its own key, no hashing.
    assert all(doc_pmid(d.doc_id) == int(d.doc_id) for d in docs)
    assert len(load_queries(root)) == 1109
    test = load_qrels(root)
    assert len(test) == 300
    assert sum(len(judged) for judged in test.values()) == 339
    train = load_qrels(root, "train")
    assert (len(train), sum(len(j) for j in train.values())) == (809, 919)
    ids = {d.doc_id for d in docs}
    assert all(doc in ids for judged in test.values() for doc in judged)
    # An oracle run that ranks the judged documents first scores 1.0 everywhere.
    oracle = {qid: sorted(judged, key=lambda d: -judged[d]) for qid, judged in test.items()}
    assert evaluate_run(oracle, test)["ndcg@10"] == pytest.approx(1.0)
