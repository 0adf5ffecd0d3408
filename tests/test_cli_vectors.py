"""The vector side of `medsearch ingest` as a user drives it from the command line."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from httpserver import serve
from tiny_models import TinyModels, build_tiny_models, write_tiny_config

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.layout import read_manifest
from medsearch.paths import Paths

PMIDS = list(range(500, 512))


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def xml_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "xml"
    folder.mkdir()
    pubmed_file(
        folder / "pubmed26n0001.xml",
        [article_xml(p, f"Article {p} on sepsis", f"Abstract {p}. Lactate rose.") for p in PMIDS],
    )
    return folder


def ncbi_chunks(folder: Path, rng: np.random.Generator) -> dict[int, np.ndarray]:
    """Two chunks in NCBI's format: float32 (n, 768) + a JSON list of PMIDs (as strings)."""
    folder.mkdir(parents=True)
    expected: dict[int, np.ndarray] = {}
    for n, pmids in enumerate([[*PMIDS[:6], 999_001], [*PMIDS[6:10], 999_002]]):
        vectors = rng.standard_normal((len(pmids), 768)).astype(np.float32)
        np.save(folder / f"embeds_chunk_{n}.npy", vectors)
        (folder / f"pmids_chunk_{n}.json").write_text(json.dumps([str(p) for p in pmids]))
        expected.update(zip(pmids, vectors, strict=True))
    return expected


def test_lexical_first_then_import_ncbi_embeddings_from_a_url(
    xml_dir: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    assert cli(home, "ingest", str(xml_dir), "--no-encode")[0] == 0
    expected = ncbi_chunks(tmp_path / "site" / "pubmed_embeddings", np.random.default_rng(3))
    with serve(tmp_path / "site") as server:
        code, out, err = cli(
            home, "ingest", "--embeddings", server.url + "pubmed_embeddings/", "--json"
        )
    assert code == 0, err
    notes = " ".join(json.loads(out)["notes"])
    assert "10 vectors imported" in notes and "2 PMIDs not in the store" in notes
    assert "medsearch models download medcpt" in notes  # sentences still need the models
    with VectorCollection.open(Paths(home).vector_dir("articles")) as coll:
        assert coll.manifest.profile == "medcpt" and len(coll) == 10
        got = coll.get(np.array(PMIDS[:10]))
        want = np.stack([expected[p] for p in PMIDS[:10]])
        assert np.allclose(got, want, atol=1e-2 * np.abs(want).max())  # stored as float16
    # Searching without the MedCPT query encoder falls back to lexical and says why.
    code, out, err = cli(home, "search", "sepsis lactate", "--json")
    assert code == 0
    result = json.loads(out)
    assert result["mode"] == "lexical" and result["hits"]
    assert "dense side unavailable" in " ".join(result["notes"])
    # Asking for dense explicitly is a clear error instead.
    code, _, err = cli(home, "search", "sepsis", "--mode", "dense")
    assert code == 1 and "MedCPT-Query-Encoder" in err and "Traceback" not in err


def test_encode_later_with_a_bare_ingest_and_a_factory_override(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels
) -> None:
    home = tmp_path / "home"
    write_tiny_config(Paths(home), tiny)
    assert cli(home, "ingest", str(xml_dir), "--no-encode")[0] == 0
    assert read_manifest(Paths(home).vector_dir("articles")) is None
    code, out, err = cli(
        home,
        "ingest",
        "--models",
        "tiny",
        "--device",
        "cpu",
        "--index-factory",
        "IVF2,Flat",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["encoded"] == len(PMIDS)
    manifest = read_manifest(Paths(home).vector_dir("articles"))
    assert manifest is not None and manifest.profile == "tiny"
    assert manifest.factory_override == "IVF2,Flat"
    # A second bare run has nothing left to encode.
    code, out, _ = cli(home, "ingest", "--json")
    assert code == 0 and json.loads(out)["encoded"] == 0


PROBE = 4  # articles the CPU guard times (32 by default; the fixture has 12)


def ingest_with_the_cpu_guard(
    xml_dir: Path, home: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch, minutes: float
) -> dict[str, Any]:
    """`ingest` with `--device auto`, its CPU encoding limit set to ``minutes``; the summary."""
    monkeypatch.setattr("ingest.encode_stage.PROBE_ARTICLES", PROBE)
    write_tiny_config(Paths(home), tiny)
    with Paths(home).config_file.open("a") as config:
        config.write(f"[ingest]\ncpu_encode_minutes = {minutes}\n")
    code, out, err = cli(home, "ingest", str(xml_dir), "--models", "tiny", "--json")
    assert code == 0, err
    summary: dict[str, Any] = json.loads(out)
    return summary


def no_gpu() -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: auto would use it")


def test_a_backlog_this_cpu_would_take_too_long_on_waits_after_a_timed_probe(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """All of PubMed on a CPU would be weeks of encoding. Without a GPU, `ingest` times
    this machine on a few articles (kept), and past the limit (here 0: nothing beyond the
    probe, however fast this machine is) leaves lexical search ready, says what the full
    encode would take and what
    else there is; an explicit `--device cpu` encodes the rest, redoing nothing."""
    no_gpu()
    home = tmp_path / "home"
    summary = ingest_with_the_cpu_guard(xml_dir, home, tiny, monkeypatch, minutes=0)
    assert (summary["added"], summary["encoded"]) == (len(PMIDS), PROBE)
    (note,) = [n for n in summary["notes"] if "wait to be encoded" in n]
    assert note.startswith(
        f"{len(PMIDS) - PROBE} articles (and their abstract sentences) wait to be encoded and"
        f" this machine has no GPU: at the rate measured on the first {PROBE} ("
    )
    assert f"encoding all {len(PMIDS)} would take ~" in note
    assert "past the 0-minute limit (cpu_encode_minutes under [ingest]" in note
    assert "`medsearch ingest --embeddings DIR_OR_URL`" in note and "--device cpu" in note
    with VectorCollection.open(Paths(home).vector_dir("articles")) as coll:
        assert len(coll) == PROBE  # the probe's vectors are kept, committed
    code, out, err = cli(home, "search", "sepsis lactate", "--mode", "lexical", "--json")
    assert code == 0 and json.loads(out)["hits"], err
    code, out, err = cli(home, "ingest", "--models", "tiny", "--device", "cpu", "--json")
    assert code == 0, err
    assert json.loads(out)["encoded"] == len(PMIDS) - PROBE
    with VectorCollection.open(Paths(home).vector_dir("articles")) as coll:
        assert len(coll) == len(PMIDS)
    code, out, _ = cli(home, "ingest", "--json")
    assert code == 0 and json.loads(out)["encoded"] == 0


def test_a_backlog_within_the_cpu_limit_is_encoded_and_its_estimate_said(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_gpu()
    home = tmp_path / "home"
    summary = ingest_with_the_cpu_guard(xml_dir, home, tiny, monkeypatch, minutes=60)
    assert (summary["added"], summary["encoded"]) == (len(PMIDS), len(PMIDS))
    assert not [n for n in summary["notes"] if "wait to be encoded" in n]
    (said,) = [n for n in summary["notes"] if n.startswith("encoding the other")]
    assert said.startswith(
        f"encoding the other {len(PMIDS) - PROBE} articles and their abstract sentences on"
        " this CPU: ~"
    )
    assert said.endswith(f" more, at the rate of the first {PROBE}")
    # one figure, the time still to come: not the probe's seconds beside it
    assert len(re.findall(r"\d s\b|\d min\b|\d h\b", said)) == 1
    with VectorCollection.open(Paths(home).vector_dir("articles")) as coll:
        assert len(coll) == len(PMIDS)


def test_a_cpu_limit_that_is_not_a_number_is_refused(tmp_path: Path) -> None:
    from medsearch.config import load_ingest_settings
    from medsearch.errors import ConfigError

    paths = Paths(tmp_path / "home").ensure()
    paths.config_file.write_text('[ingest]\ncpu_encode_minutes = "a while"\n')
    with pytest.raises(ConfigError, match=r"cpu_encode_minutes must be a number from 0 to"):
        load_ingest_settings(paths)
    paths.config_file.write_text("[ingest]\ncpu_encode_minutes = 30\n")
    assert load_ingest_settings(paths).cpu_encode_minutes == 30.0


@pytest.mark.gpu
def test_on_a_machine_with_a_gpu_a_large_backlog_is_encoded_at_once(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the CPU guard: with a GPU, `auto` encodes whatever waits."""
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    home = tmp_path / "home"
    summary = ingest_with_the_cpu_guard(xml_dir, home, tiny, monkeypatch, minutes=0)
    assert (summary["added"], summary["encoded"]) == (len(PMIDS), len(PMIDS))
    assert not [n for n in summary["notes"] if "wait to be encoded" in n]
    assert not [n for n in summary["notes"] if n.startswith("encoding the other")]


def test_a_different_profile_on_an_encoded_corpus_is_refused(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels
) -> None:
    home = tmp_path / "home"
    write_tiny_config(Paths(home), tiny)
    assert cli(home, "ingest", str(xml_dir), "--models", "tiny", "--device", "cpu")[0] == 0
    code, _, err = cli(home, "ingest", str(xml_dir), "--models", "minilm")
    assert code == 1 and "'tiny'" in err and "'minilm'" in err


def test_similar_articles_need_only_the_imported_vectors_not_a_model(
    xml_dir: Path, tmp_path: Path
) -> None:
    """The CPU user's path: NCBI's MedCPT vectors imported, no MedCPT model on the machine
    (HF_HOME is an empty folder here). Neighbours of a stored vector need no encoder;
    anything that encodes text does, and says how to get it."""
    home = tmp_path / "home"
    assert cli(home, "ingest", str(xml_dir), "--no-encode")[0] == 0
    ncbi_chunks(tmp_path / "ncbi", np.random.default_rng(5))
    code, _, err = cli(home, "ingest", "--embeddings", str(tmp_path / "ncbi"))
    assert code == 0, err
    with VectorCollection.open(Paths(home).vector_dir("articles")) as coll:
        stored = coll.get(np.array(PMIDS[:10]))  # float16 on disk, as the search sees them
    scores = stored[1:] @ stored[0]  # the brute-force oracle: inner product, itself out
    expected = [PMIDS[1 + i] for i in np.argsort(-scores)]

    code, out, err = cli(home, "similar", str(PMIDS[0]), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [h["pmid"] for h in result["hits"]] == expected
    assert result["hits"][0]["score"] == pytest.approx(float(scores.max()), rel=1e-3)
    assert result["mode"] == "dense" and result["pmid"] == PMIDS[0]
    code, out, _ = cli(home, "history", "--json")  # the list is in the search history
    (line,) = json.loads(out)["lines"]
    assert (line["command"], line["query_typed"], line["count"]) == (
        "similar",
        f"similar {PMIDS[0]}",
        len(expected),
    )
    assert line["query_as_run"] == f"similar articles to PMID {PMIDS[0]}, top {len(expected)}"
    code, _, err = cli(home, "search", "#1")  # a list, not a set: #1 cannot combine it
    assert code == 2 and "#1 is a list of similar articles" in err

    for args in (("similar", "--text", "Sepsis\nLactate rose."), ("sentences", "Lactate rose.")):
        code, _, err = cli(home, *args)
        assert code == 1 and "Traceback" not in err
        assert "ncbi/MedCPT-Query-Encoder is not available offline" in err
        assert "`medsearch models download medcpt`" in err

    # cite still suggests references: its searches fall back to lexical and say why.
    paragraph = tmp_path / "paragraph.txt"
    paragraph.write_text("Lactate rose in sepsis [1].", encoding="utf-8")
    code, out, err = cli(home, "cite", "--file", str(paragraph), "--json")
    assert code == 0, err
    (citance,) = json.loads(out)["citances"]
    assert citance["mode"] == "lexical" and citance["hits"]
    assert "dense side unavailable" in " ".join(citance["notes"])


def test_the_summary_names_a_custom_profiles_models_and_medcpt_only_when_missing(
    xml_dir: Path, tmp_path: Path, tiny: TinyModels
) -> None:
    """A profile of the user's own is named by its models; "MedCPT is not available" is
    said only when the offline default was picked because MedCPT is missing."""
    custom = tmp_path / "custom"
    write_tiny_config(Paths(custom), tiny)
    code, out, err = cli(custom, "ingest", str(xml_dir), "--models", "tiny", "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert (
        f"model profile 'tiny' in use (tiny test BERT: queries {tiny.query_dir},"
        f" articles {tiny.article_dir}, reranker {tiny.cross_dir})"
    ) in notes
    assert not any("MedCPT" in n for n in notes), notes
    # The next run takes the profile the vectors were built with: still no MedCPT line.
    code, out, err = cli(custom, "ingest", "--json")
    assert code == 0 and not any("MedCPT" in n for n in json.loads(out)["notes"]), err

    fallback = tmp_path / "fallback"  # no --models, and no MedCPT in any cache here
    code, out, err = cli(fallback, "ingest", str(xml_dir), "--device", "cpu", "--json")
    assert code == 0, err
    (note,) = [n for n in json.loads(out)["notes"] if "in use" in n]
    assert note.startswith("model profile 'minilm' in use (all-MiniLM-L6-v2, bundled offline")
    assert note.endswith(
        "; MedCPT is not available offline here"
        " (`medsearch models download medcpt` on a connected machine)"
    )
