"""``medsearch serve``'s JSON API, in process (Starlette's TestClient over the real app,
a real home): the token, each endpoint against the command's ``--json``, the OpenAPI file
the answers are validated against, and what the service refuses to do."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from starlette.testclient import TestClient

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.serve.access import ensure_token, read_token
from medsearch.serve.app import build_app
from medsearch.serve.state import Warm
from tests.serve_home import GRAPH, build_home

OPENAPI = Path(__file__).resolve().parent.parent / "docs" / "openapi.yaml"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("serve"))


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[tuple[TestClient, str, Warm]]:
    paths = Paths(home)
    warm = Warm(paths)
    token = ensure_token(paths)
    with TestClient(build_app(warm, token)) as client:
        yield client, token, warm
    warm.close()


def load_spec() -> dict[str, Any]:
    """docs/openapi.yaml, parsed."""
    loaded: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    return loaded


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return load_spec()


def conforms(spec: dict[str, Any], path: str, method: str, status: int, body: Any) -> None:
    """Validate ``body`` against the OpenAPI file's schema for that answer."""
    answer = spec["paths"][path][method]["responses"][str(status)]
    if "$ref" in answer:
        answer = spec["components"]["responses"][answer["$ref"].rsplit("/", 1)[1]]
    schema = answer["content"]["application/json"]["schema"]
    registry = Registry().with_resource(
        "urn:openapi", Resource.from_contents(spec, default_specification=DRAFT202012)
    )
    rooted = json.loads(json.dumps(schema).replace('"#/components', '"urn:openapi#/components'))
    Draft202012Validator(rooted, registry=registry).validate(body)


def cli_json(home: Path, *args: str) -> Any:
    result = CliRunner().invoke(main, ["--home", str(home), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def get(served: tuple[TestClient, str, Warm], url: str, **params: Any) -> Any:
    client, token, _ = served
    return client.get(url, params=params, headers={"Authorization": f"Bearer {token}"})


def test_every_route_refuses_a_request_without_the_right_token(
    served: tuple[TestClient, str, Warm], spec: dict[str, Any]
) -> None:
    client, token, _ = served
    for url in ("/health", "/search?q=heart", "/articles/90000001", "/entrez/eutils/einfo.fcgi"):
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}):
            answer = client.get(url, headers=headers)
            assert answer.status_code == 401, (url, headers)
        assert client.get(url, params={"api_key": "wrong"}).status_code == 401
    refused = client.get("/health")
    conforms(spec, "/health", "get", 401, refused.json())
    assert refused.headers["www-authenticate"] == "Bearer"
    assert client.get("/health", params={"api_key": token}).status_code == 200


def test_the_token_file_is_private_and_kept_across_starts(home: Path) -> None:
    paths = Paths(home)
    token = ensure_token(paths)
    assert stat.S_IMODE(paths.serve_token.stat().st_mode) == 0o600
    paths.serve_token.chmod(0o644)
    assert ensure_token(paths) == token == read_token(paths)
    assert stat.S_IMODE(paths.serve_token.stat().st_mode) == 0o600


def test_health_names_the_home_count_and_snapshot(
    served: tuple[TestClient, str, Warm], home: Path, spec: dict[str, Any]
) -> None:
    answer = get(served, "/health")
    assert answer.status_code == 200
    body = answer.json()
    conforms(spec, "/health", "get", 200, body)
    assert body["home"] == str(home)
    assert body["articles"] == cli_json(home, "stats")["articles"]
    assert body["snapshot"]["last_file"] == "graph.xml"
    assert body["default_mode"] == "lexical"


def test_search_answers_what_search_json_prints(
    served: tuple[TestClient, str, Warm], home: Path, spec: dict[str, Any]
) -> None:
    for params, args in (
        ({"q": "heart failure", "k": 3}, ["heart failure", "-k", "3"]),
        ({"q": "heart failure", "sort": "date"}, ["heart failure", "--sort", "date"]),
        ({"q": "cardiac[ti]", "year": "2019:2020"}, ["cardiac[ti]", "--year", "2019:2020"]),
    ):
        answer = get(served, "/search", **params)
        assert answer.status_code == 200
        conforms(spec, "/search", "get", 200, answer.json())
        assert answer.json() == cli_json(home, "search", *args)
    counted = get(served, "/search", q="heart failure", count="true").json()
    conforms(spec, "/search", "get", 200, counted)
    assert counted == cli_json(home, "search", "heart failure", "--count")
    kept = get(served, "/search", q="cardiac[ti]", count="true", record="true").json()
    conforms(spec, "/search", "get", 200, kept)  # what the CLI's history keeps, for it
    assert kept["record"]["total"] == kept["count"] == len(kept["record"]["pmids"])
    assert kept["record"]["query"] == "cardiac[ti]" and kept["record"]["counted"] == "set"


def test_articles_and_export_answer_what_show_and_export_print(
    served: tuple[TestClient, str, Warm], home: Path, spec: dict[str, Any]
) -> None:
    record = get(served, "/articles/90000002").json()
    conforms(spec, "/articles/{pmid}", "get", 200, record)
    assert record == cli_json(home, "show", "90000002")
    for fmt in ("bibtex", "ris", "nbib", "csv"):
        text = get(served, "/export", ids="90000002,90000001", format=fmt).text
        printed = CliRunner().invoke(
            main, ["--home", str(home), "export", "90000002", "90000001", "--format", fmt]
        )
        assert text == printed.stdout_bytes.decode()


def test_similar_by_citations_and_cite_need_no_vectors_or_say_so(
    served: tuple[TestClient, str, Warm], home: Path, spec: dict[str, Any]
) -> None:
    related = get(served, "/similar/90000001", by="citations", k=5)
    conforms(spec, "/similar/{pmid}", "get", 200, related.json())
    assert related.json() == cli_json(home, "similar", "90000001", "--by", "citations", "-k", "5")
    no_vectors = get(served, "/similar/90000001")
    assert no_vectors.status_code == 409
    conforms(spec, "/similar/{pmid}", "get", 409, no_vectors.json())
    assert "needs article vectors" in no_vectors.json()["error"]


def test_mistakes_are_one_line_with_the_cli_s_words(
    served: tuple[TestClient, str, Warm], spec: dict[str, Any]
) -> None:
    for url, params, status in (
        ("/search", {}, 400),
        ("/search", {"q": "heart", "k": "0"}, 400),
        ("/search", {"q": "heart", "sort": "sideways"}, 400),
        ("/search", {"q": "heart", "year": "2020:2010"}, 400),
        ("/articles/abc", {}, 400),
        ("/articles/123456789", {}, 404),
        ("/export", {"ids": "90000001,123456789"}, 404),
    ):
        answer = get(served, url, **params)
        assert answer.status_code == status, (url, params, answer.text)
        conforms(spec, "/articles/{pmid}", "get", status, answer.json())
        assert "\n" not in answer.json()["error"]
    assert "123456789" in get(served, "/export", ids="90000001,123456789").json()["error"]


def test_the_service_offers_no_write_no_sql_and_no_other_home(
    served: tuple[TestClient, str, Warm], home: Path, tmp_path: Path
) -> None:
    client, token, _ = served
    auth = {"Authorization": f"Bearer {token}"}
    before = written(home)
    for method, url in (
        ("POST", "/search?q=x"),
        ("PUT", "/articles/90000001"),
        ("DELETE", "/articles/90000001"),
        ("POST", "/export?ids=1"),
    ):
        assert client.request(method, url, headers=auth).status_code == 405, (method, url)
    for url in ("/sql?q=select+1", "/ingest", "/update", "/marks", "/history"):
        assert client.get(url, headers=auth).status_code == 404, url
    other = tmp_path / "elsewhere"
    answer = client.get("/health", params={"home": str(other)}, headers=auth).json()
    assert answer["home"] == str(home)
    assert not other.exists()
    assert set(GRAPH) <= {h["pmid"] for h in get(served, "/search", q="heart", k=50).json()["hits"]}
    get(served, "/entrez/eutils/esearch.fcgi", term="heart", usehistory="y")
    get(served, "/entrez/eutils/epost.fcgi", id="90000001")
    assert written(home) == before  # no history line, no mark, no file touched


def written(home: Path) -> dict[str, int]:
    """Every file in the home with its size and mtime, but SQLite's shared-memory index
    (which readers maintain)."""
    return {
        str(p.relative_to(home)): p.stat().st_mtime_ns + p.stat().st_size
        for p in home.rglob("*")
        if p.is_file() and not p.name.endswith("-shm")
    }


def test_the_cli_works_alone_when_no_service_answers(home: Path) -> None:
    import socket

    socket_file = Paths(home).serve_socket
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(socket_file))  # left by a killed service: nobody listens
    dead.close()
    try:
        shown = cli_json(home, "show", "90000001")
        found = cli_json(home, "search", "heart failure", "--count")
    finally:
        socket_file.unlink()
    assert "served" not in shown and shown["pmid"] == 90000001
    assert found == {"count": 5}
