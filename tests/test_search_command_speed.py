"""A search command answers in about a second (issue 42): what it loads, and when.

A hybrid search on a CPU encodes its query in NumPy (no torch, no transformers, no
scikit-learn, no sympy: those imports were most of a 16-40 s command); a count loads no
model and no vector; the cross-encoder runs in the foreground of a CPU command only
within its time budget, and says what it left; a plain-words count of 0 over ranked
hits says what the 0 counts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import TinyModels, build_tiny_models, ingest_and_encode, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.models.cross import load_cross_encoder
from medsearch.paths import Paths
from medsearch.retrieval.cross_stage import budgeted_rerank, head_docs, scores_within
from medsearch.retrieval.searcher import Searcher, open_searcher

TITLES = ["cataract surgery outcomes", "cataract in children", "retina surgery risk"]


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Paths:
    root = tmp_path_factory.mktemp("speed")
    tiny: TinyModels = build_tiny_models(root / "tiny")
    folder = root / "xml"
    folder.mkdir()
    articles = [
        article_xml(5000 + i, TITLES[i % 3], f"patients in cohort {i} were treated")
        for i in range(12)
    ]
    pubmed_file(folder / "pubmed26n0001.xml", articles)
    paths = Paths(root / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [folder])
    return paths


@pytest.fixture()
def searcher(home: Paths) -> Iterator[Searcher]:
    s = open_searcher(home, device="cpu")
    yield s
    s.close()


SEARCH = ("search", "cataract surgery", "--device", "cpu", "--json")
HEAVY = ("transformers", "sklearn", "sympy", "torch")
RUN_AND_REPORT = (
    "import json, sys\n"
    "from medsearch.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit as done:\n"
    "    assert not done.code, done.code\n"
    f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)), file=sys.stderr)\n"
)


def test_a_cpu_search_command_imports_no_transformers_sklearn_sympy_or_torch(
    home: Paths,
) -> None:
    """The command as a user runs it (default mode and reranker): its modules at exit."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, "--home", str(home.home), *SEARCH],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert result["mode"] == "hybrid" and result["hits"]
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    # The cross-encoder would need torch: past the 1 s budget, so it is left, and said.
    assert any("cross-encoder not run on the CPU" in n for n in result["notes"])


def test_a_count_loads_no_model_and_no_vector_in_any_mode(searcher: Searcher) -> None:
    for mode in (None, "hybrid", "dense"):
        counted = searcher.search("cataract surgery", mode=mode, k=1, count_only=True)
        assert counted.total == 4, mode  # the articles holding both words
    history = {1: "cataract", 2: "surgery"}
    combined = searcher.search("#1 AND #2", k=1, count_only=True, history=history.__getitem__)
    assert combined.total == 4
    assert searcher.dense is None and searcher.device is None  # nothing was loaded
    ranked = searcher.search("cataract surgery", k=5, rerank="none")
    assert ranked.total == 4 and searcher.device == "cpu"  # a ranked search does load


@pytest.mark.thorough  # two commands in subprocesses; the searcher test above is the fast one
def test_the_cli_count_loads_no_encoder(home: Paths) -> None:
    code = (
        "import sys\n"
        "from medsearch.cli import main\n"
        "from medsearch.retrieval import sources\n"
        "def refuse(self, *a, **k): raise AssertionError('an encoder was loaded')\n"
        "sources.HomeSources.encoder = refuse\n"
        "sources.HomeSources.open_dense = refuse\n"
        "main(sys.argv[1:])\n"
    )
    for query in ("cataract surgery", "cataract[ti] AND children[ti]"):
        done = subprocess.run(
            [sys.executable, "-c", code, "--home", str(home.home), "search", query, "--count"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "4", query


def test_a_budget_of_zero_leaves_the_head_in_first_stage_order_and_says_so(
    searcher: Searcher,
) -> None:
    first = searcher.search("cataract surgery", k=6, rerank="none")
    kept = searcher.rerank(first, budget=0.0)
    assert [h.pmid for h in kept.hits] == [h.pmid for h in first.hits]
    assert "cross" not in kept.rerankers and searcher.cross is None  # not even loaded
    assert any("rerank_budget_cpu is 0" in n for n in kept.notes), kept.notes
    assert searcher.rerank_budget() == 1.0  # the default, on this CPU
    assert searcher.rerank_budget("cross") is None  # asked for by name: never limited


def test_a_long_budget_reranks_the_whole_head_as_an_unlimited_rerank_does(
    home: Paths, searcher: Searcher
) -> None:
    """Full precision, so batch sizes cannot move scores (int8 scales per batch)."""
    profile = searcher.sources.model_profile() if searcher.sources else None
    assert profile is not None
    searcher.cross = load_cross_encoder(profile, device="cpu", quantize=False, paths=home)
    first = searcher.search("cataract surgery", k=10, rerank="none")
    whole = searcher.rerank(first, head=10)
    budgeted = searcher.rerank(first, head=10, budget=300.0)
    assert [h.pmid for h in budgeted.hits] == [h.pmid for h in whole.hits]
    np.testing.assert_allclose(
        [h.score for h in budgeted.hits], [h.score for h in whole.hits], rtol=1e-4, atol=1e-5
    )
    assert "cross" in budgeted.rerankers and not any("budget" in n for n in budgeted.notes)
    # A deadline already past scores nothing; the head keeps its order, and the note says.
    assert searcher.cross is not None
    docs = head_docs(searcher.store, first, 10)
    assert scores_within(searcher.cross, "cataract", docs, time.perf_counter() - 1) == []
    late = budgeted_rerank(searcher, first, 10, budget=-1e-9)
    assert [h.pmid for h in late.hits] == [h.pmid for h in first.hits]
    assert any("reranked the top 0 of 10" in n for n in late.notes)


def test_plain_words_none_of_which_appear_together_say_so_over_their_hits(home: Paths) -> None:
    got = CliRunner().invoke(
        main,
        ["--home", str(home.home), "search", "cataract retina children", "--mode", "lexical"],
    )
    assert got.exit_code == 0, got.output
    assert "no article has all three words; 10 closest shown" in got.stdout
    assert "0 matching" not in got.stdout


def test_the_numpy_query_encoder_gives_the_torch_vectors(home: Paths) -> None:
    from medsearch.models.encoders import load_encoder
    from medsearch.models.numpy_bert import NumpyQueryEncoder

    s = open_searcher(home, device="cpu")
    try:
        light = s.encoder("test")
        assert isinstance(light, NumpyQueryEncoder)
        full = load_encoder(light.profile, device="cpu", paths=home)
        texts = ["cataract surgery", "risk of retina surgery in children", "x", "word " * 80]
        np.testing.assert_allclose(
            light.encode_queries(texts), full.encode_queries(texts), rtol=1e-4, atol=1e-5
        )
        assert light.query_tokens(texts[1]) == full.query_tokens(texts[1])
        assert light.query_max_length == full.query_max_length
        # What it does not do itself (articles) the torch encoder does.
        np.testing.assert_allclose(
            light.encode_articles([("t", "a")]), full.encode_articles([("t", "a")]), atol=1e-6
        )
    finally:
        s.close()


def test_weights_this_reader_cannot_map_go_through_torch(
    searcher: Searcher, tmp_path: Path
) -> None:
    from medsearch.models.numpy_bert import cpu_only, load_numpy_query_encoder, read_safetensors

    bad = tmp_path / "model.safetensors"
    header = json.dumps({"w": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    bad.write_bytes(len(header).to_bytes(8, "little") + header + b"\0\0")
    assert read_safetensors(bad) is None
    assert cpu_only("cpu") and not cpu_only("cuda")
    assert searcher.sources is not None
    profile = searcher.sources.model_profile()
    refuse = searcher.sources.encoder  # never called: there is nothing to stand in for
    assert load_numpy_query_encoder(profile, tmp_path, refuse) is None  # no BERT folder
