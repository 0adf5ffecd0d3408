"""``medsearch serve`` as it listens: the Unix socket (0600, one service per home), the
printed units, the interface rules, a writer's commit picked up without a restart, and
the command itself started and stopped as a process."""

from __future__ import annotations

import json
import logging
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.errors import BusyError
from medsearch.lock import write_lock
from medsearch.paths import Paths
from medsearch.serve.access import ensure_token
from medsearch.serve.app import build_app
from medsearch.serve.run import Listen, unit_text, unix_socket
from medsearch.serve.state import Warm
from tests.conftest import wait_until
from tests.serve_home import build_home


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_home(tmp_path_factory.mktemp("run"))


@pytest.fixture(scope="module")
def on_socket(home: Path) -> Iterator[tuple[httpx.Client, Warm]]:
    """A real uvicorn on the home's Unix socket, made as ``medsearch serve`` makes it."""
    import uvicorn

    paths = Paths(home)
    warm = Warm(paths, load=False)
    token = ensure_token(paths)
    sock = unix_socket(paths.serve_socket)
    config = uvicorn.Config(build_app(warm, token), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert wait_until(lambda: server.started, 30)
    transport = httpx.HTTPTransport(uds=str(paths.serve_socket))
    with httpx.Client(
        transport=transport,
        base_url="http://medsearch",
        headers={"Authorization": f"Bearer {token}"},
    ) as client:
        yield client, warm
    server.should_exit = True
    thread.join(10)
    sock.close()
    warm.close()


@pytest.mark.thorough  # a home and a real uvicorn: ~4 s of CPU for the module
def test_the_socket_is_private_and_answers_with_the_token(
    home: Path, on_socket: tuple[httpx.Client, Warm]
) -> None:
    client, _ = on_socket
    socket_file = Paths(home).serve_socket
    assert stat.S_ISSOCK(socket_file.stat().st_mode)
    assert stat.S_IMODE(socket_file.stat().st_mode) == 0o600
    assert client.get("/health").json()["home"] == str(home)
    assert client.get("/health", headers={"Authorization": ""}).status_code == 401


@pytest.mark.thorough  # a home and a real uvicorn: ~4 s of CPU for the module
def test_a_second_service_on_the_same_home_is_refused(
    home: Path, on_socket: tuple[httpx.Client, Warm]
) -> None:
    with pytest.raises(BusyError, match="already answers"):
        unix_socket(Paths(home).serve_socket)
    assert on_socket[0].get("/health").status_code == 200


def test_a_socket_left_by_a_killed_service_is_replaced(tmp_path: Path) -> None:
    import socket

    stale = tmp_path / "serve.sock"
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(stale))
    dead.close()  # the file stays, nobody listens
    sock = unix_socket(stale)
    try:
        assert stat.S_IMODE(stale.stat().st_mode) == 0o600
    finally:
        sock.close()


@pytest.mark.thorough  # a home and a real uvicorn: ~4 s of CPU for the module
def test_a_writer_s_commit_is_picked_up_after_it_finishes(
    home: Path, tmp_path: Path, on_socket: tuple[httpx.Client, Warm]
) -> None:
    client, warm = on_socket
    before = client.get("/health").json()
    new = article_xml(90000099, "Sodium glucose cotransporter inhibitors in heart failure")
    update = pubmed_file(tmp_path / "pubmed21n9999.xml", [new])
    result = CliRunner().invoke(main, ["--home", str(home), "ingest", str(update), "--no-encode"])
    assert result.exit_code == 0, result.output
    paths = Paths(home)
    with write_lock(paths, "ingest"):  # a writer at work: the last state still answers
        warm.check_now()
        during = client.get("/health").json()
        assert during["reopened"] == before["reopened"]  # not while the lock is held
    warm.check_now()
    after = client.get("/health").json()
    assert after["reopened"] == before["reopened"] + 1
    assert after["articles"] == before["articles"] + 1
    assert after["snapshot"]["last_file"] == "pubmed21n9999.xml"
    hits = client.get("/search", params={"q": "cotransporter"}).json()["hits"]
    assert [h["pmid"] for h in hits] == [90000099]


def test_print_unit_prints_a_systemd_unit_and_a_launchd_plist(tmp_path: Path) -> None:
    home = tmp_path / "home"
    result = CliRunner().invoke(main, ["--home", str(home), "serve", "--print-unit"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert "[Service]" in text and "ExecStart=" in text and "<key>KeepAlive</key>" in text
    assert f"--home {home} serve" in text
    assert " --port" not in text
    assert "--port 8765" in unit_text(Paths(home), Listen(port=8765))


def test_serve_listens_beyond_localhost_only_when_told_and_warns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert Listen().local_only and Listen(port=8765).local_only
    assert not Listen(host="0.0.0.0", port=8765).local_only
    refused = CliRunner().invoke(main, ["--home", str(home), "serve", "--host", "0.0.0.0"])
    assert refused.exit_code == 2
    assert "--host needs --port" in refused.output
    help_text = CliRunner().invoke(main, ["serve", "--help"]).output
    assert "127.0.0.1" in help_text and "0600" in help_text


@pytest.mark.thorough  # a home and a real uvicorn: ~4 s of CPU for the module
def test_serve_json_of_health_matches_stats(
    home: Path, on_socket: tuple[httpx.Client, Warm]
) -> None:
    stats = CliRunner().invoke(main, ["--home", str(home), "stats", "--json"])
    assert on_socket[0].get("/health").json()["articles"] == json.loads(stats.stdout)["articles"]


@pytest.mark.thorough  # a subprocess that imports the service and opens a home: ~3 s
def test_the_command_serves_on_its_socket_and_removes_it_on_sigterm(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    home = build_home(tmp_path)
    paths = Paths(home)
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from medsearch.cli import main; main()",
            "--home",
            str(home),
            "serve",
            "--no-load",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )
    try:
        assert wait_until(paths.serve_socket.exists, 60)
        token = paths.serve_token.read_text().strip()
        transport = httpx.HTTPTransport(uds=str(paths.serve_socket))
        with httpx.Client(transport=transport, base_url="http://medsearch") as client:
            answer = client.get("/health", headers={"Authorization": f"Bearer {token}"})
        assert answer.json()["home"] == str(home)
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "GET /health 200" in err  # the request line, with its time
    assert " ms" in err.split("GET /health 200", 1)[1].splitlines()[0]
    assert not paths.serve_socket.exists()


@pytest.mark.thorough  # the module's home and real uvicorn
def test_the_cli_uses_a_running_service_and_says_so(
    home: Path, on_socket: tuple[httpx.Client, Warm], tmp_path: Path
) -> None:
    def cli(*args: str, stdin: str | None = None) -> str:
        result = CliRunner().invoke(main, ["--home", str(home), *args], input=stdin)
        assert result.exit_code == 0, result.output
        return result.stdout

    run = CliRunner().invoke(
        main, ["--home", str(home), "search", "heart failure", "-k", "3", "--json"]
    )
    assert "not recorded" not in run.stderr  # the CLI records what the service sent
    served = json.loads(run.stdout)
    assert served.pop("served") is True
    assert served == on_socket[0].get("/search", params={"q": "heart failure", "k": 3}).json()
    counted = json.loads(cli("search", "heart failure", "--count", "--json"))
    assert counted == {"count": served["total"], "served": True}
    shown = json.loads(cli("show", "90000002", "--json"))
    assert shown.pop("served") is True
    assert shown["title"] == "Cardiac remodelling in heart failure, part 2"
    assert "Cardiac remodelling" in cli("show", "90000002")
    related = json.loads(cli("similar", "90000001", "--by", "citations", "--json"))
    assert related["served"] is True and related["mode"] == "citations"
    assert cli("export", "90000002", "--format", "ris").startswith("TY  - JOUR")
    bad = CliRunner().invoke(main, ["--home", str(home), "show", "123456789", "--json"])
    assert bad.exit_code == 1 and "not in the store" in bad.output  # the service's own error
    alone = json.loads(cli("search", "heart failure", "-k", "3", "--json", "--models", "x"))
    assert "served" not in alone  # another profile than the service's: worked alone


def _history_lines(home: Path) -> list[tuple[dict[str, object], list[int] | None]]:
    """Each history line as ``history --json`` prints it (less its number and time), with
    the set it keeps."""
    from medsearch.history.store import open_history

    history = open_history(Paths(home), write=False)
    if history is None:  # nothing recorded yet
        return []
    with history:
        entries = history.entries(sets=True)
    out = []
    for entry in entries:
        shown = entry.to_dict()
        del shown["number"], shown["time"]
        out.append((shown, None if entry.pmids is None else entry.pmids.tolist()))
    return out


@pytest.mark.thorough  # the module's home and real uvicorn
def test_a_served_search_is_kept_in_the_history_as_one_run_alone(
    home: Path, on_socket: tuple[httpx.Client, Warm], caplog: pytest.LogCaptureFixture
) -> None:
    def cli(*args: str) -> str:
        result = CliRunner().invoke(main, ["--home", str(home), *args])
        assert result.exit_code == 0, result.output
        assert "not recorded" not in result.stderr
        return result.stdout

    searches = [
        ("cardiac[ti] NOT 2018[dp]", "-k", "2", "--year", "2015:2025"),
        ("heart failure", "--count"),
        ("heart failure", "--sort", "date", "--json"),
    ]
    for args in searches:
        before = len(_history_lines(home))
        served = cli("search", *args)
        alone = cli("search", *args, "--device", "cpu")  # another device: worked alone
        if "--json" in args:
            answer = json.loads(served)
            assert answer.pop("served") is True
            assert answer == json.loads(alone)
        else:
            assert served == alone
        lines = _history_lines(home)
        assert len(lines) == before + 2  # the served search was recorded too
        assert lines[-2] == lines[-1]  # and recorded as the same search run alone
    assert _history_lines(home)[-6][1]  # a set query's set is kept, served or not
    with caplog.at_level(logging.INFO, logger="medsearch.serve"):
        text = cli("search", "cardiac[ti] NOT 2018[dp]", "-k", "2")  # plain text, served
        similar = cli("similar", "90000001", "--by", "citations")
    assert "GET /search 200" in caplog.text and "GET /similar/90000001 200" in caplog.text
    assert text == cli("search", "cardiac[ti] NOT 2018[dp]", "-k", "2", "--device", "cpu")
    assert "matching · showing 2" in text and "PMID" in text
    assert similar == cli("similar", "90000001", "--by", "citations", "--device", "cpu")
