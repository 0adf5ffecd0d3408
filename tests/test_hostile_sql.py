"""`medsearch sql` against SQL written to hurt: it reads, in bounded memory and time.

A query may not reach SQLite's native code (``fts3_tokenizer``), may not build a value
past 128 MiB or make SQLite hold more than 512 MiB, stops at ``--timeout`` (exit 124)
and at Ctrl-C (exit 130, also before its first row and inside one long function call),
each with one line that names the limit. Whatever it tries, the store's bytes stay the
same. Memory is measured on the command's own process (``wait4``), not on pytest.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from medsearch.cli import main
from medsearch.commands.sql import GRACE

ROOT = Path(__file__).resolve().parent.parent
RUN = "from medsearch.cli import main; main()"
MIB = 2**20

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
SORT_BEFORE_THE_FIRST_ROW = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000000)"
    " SELECT x FROM c ORDER BY -x"
)
PRINTF_BOMB = "SELECT length(printf('%.*c', 2e9, 'x'))"
DOUBLING = (
    "WITH RECURSIVE s(x) AS (SELECT 'x' UNION ALL SELECT x || x FROM s) SELECT length(x) FROM s"
)
WIDE_ROW = "SELECT " + ", ".join(["hex(zeroblob(6e7))"] * 5)  # 5 x 120 MB: under the value limit


def fingerprint(home: Path) -> dict[str, str]:
    """The store's content: the database and its write-ahead log (a reader may leave an
    empty log and the shared-memory index, neither of which holds data)."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.glob("store.sqlite*"))
        if not p.name.endswith("-shm") and p.stat().st_size
    }


@dataclass(frozen=True)
class Store:
    home: Path
    content: dict[str, str]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    home = tmp_path_factory.mktemp("hostile") / "home"
    args = ["--home", str(home), "ingest", str(FIXTURES / "tricky_articles.xml"), "--no-encode"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return Store(home, fingerprint(home))


@pytest.fixture(autouse=True)
def store_unchanged(store: Store) -> Iterator[None]:
    """After every hostile query, the store holds exactly what ingest wrote."""
    yield
    assert fingerprint(store.home) == store.content


def sql(store: Store, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(store.home), "sql", *args])
    return result.exit_code, result.stdout, result.stderr


@dataclass(frozen=True)
class Finished:
    code: int
    stdout: str
    stderr: str
    peak_mib: float
    """The command's own peak resident memory."""


def spawn(store: Store, tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    """``medsearch sql ARGS`` as a process of its own; its output goes to files (a pipe
    nobody reads while it runs could fill and stall it)."""
    with (tmp_path / "out").open("wb") as out, (tmp_path / "err").open("wb") as err:
        return subprocess.Popen(
            [sys.executable, "-c", RUN, "--home", str(store.home), "sql", *args],
            stdout=out,
            stderr=err,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )


def finish(proc: subprocess.Popen[bytes], tmp_path: Path, within: float) -> Finished:
    """Wait for ``proc`` (killed, and the test failed, after ``within`` seconds)."""
    deadline = time.monotonic() + within
    peak = 0.0
    while True:
        peak = max(peak, own_peak_mib(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            pytest.fail(f"medsearch sql still ran after {within:.0f} s")
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Finished(
        proc.returncode,
        (tmp_path / "out").read_text(),
        (tmp_path / "err").read_text(),
        peak if peak else usage.ru_maxrss / 1024,  # KiB on Linux
    )


def own_peak_mib(pid: int) -> float:
    """The process's own peak resident memory (VmHWM), polled while it runs: its
    ``ru_maxrss`` would also count what this test process held when it forked it, since
    Linux keeps the larger across exec, and a long test session grows past 1 GB."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def reading(proc: subprocess.Popen[bytes], store: Store) -> bool:
    """Whether ``proc`` has the store open: it is past its start, in the query."""
    try:
        fds = list(Path(f"/proc/{proc.pid}/fd").iterdir())
        return any(os.readlink(fd) == str((store.home / "store.sqlite").resolve()) for fd in fds)
    except OSError:  # it exited, or a descriptor closed while looked at
        return False


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="needs /proc to see when the query runs"
)


# -- what a query may call -----------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "SELECT fts3_tokenizer('simple')",  # the address of native code
        "SELECT hex(fts3_tokenizer('porter'))",
        "SELECT fts3_tokenizer('mine', fts3_tokenizer('simple'))",  # installs code at an address
        "SELECT pmid FROM articles WHERE FTS3_Tokenizer('simple') IS NOT NULL",
    ],
)
def test_fts3_tokenizer_is_refused_in_either_form(store: Store, query: str) -> None:
    code, out, err = sql(store, query)
    assert code == 2
    assert out == ""
    assert "fts3_tokenizer" in err.lower() and "refused" in err
    assert len(err.splitlines()) == 1


# -- memory ----------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["SELECT zeroblob(2e9)", "SELECT zeroblob(2e8)"])
def test_a_value_past_the_length_limit_is_refused_naming_it(store: Store, query: str) -> None:
    code, out, err = sql(store, query)
    assert (code, out) == (2, "")
    assert err.strip() == (
        "medsearch: error: SQL: a string or blob would be longer than 128 MiB, the most"
        " medsearch sql lets a value hold (SQLITE_LIMIT_LENGTH)"
    )


def test_a_query_text_past_one_mib_is_refused_naming_the_limit(store: Store) -> None:
    code, out, err = sql(store, "SELECT 1" + " " * MIB)  # a shell passes at most 128 KiB
    assert (code, out) == (2, "")
    assert err == (
        "medsearch: error: SQL: the query is longer than 1 MiB, the most medsearch sql takes\n"
    )


@pytest.mark.thorough
def test_the_printf_bomb_stays_in_bounded_memory(store: Store, tmp_path: Path) -> None:
    """One printf call loops over all 2e9 characters even past the limit (~20 s, in
    SQLite, where no handler is asked): its memory stays bounded, and --timeout ends it
    GRACE seconds after the deadline."""
    started = time.monotonic()
    done = finish(spawn(store, tmp_path, "--timeout", "1", PRINTF_BOMB), tmp_path, within=60)
    assert done.code == 124, done.stderr
    assert done.stderr == (
        "medsearch: error: the query ran longer than --timeout 1 s and was stopped\n"
    )
    assert done.peak_mib < 400  # 128 MiB of 'x' and Python; SQLite's own limit let it reach 1 GB
    assert time.monotonic() - started < 1 + GRACE + 15  # start-up on a loaded machine


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_a_recursive_cte_doubling_a_string_stops_at_the_length_limit(
    store: Store, tmp_path: Path
) -> None:
    done = finish(spawn(store, tmp_path, DOUBLING), tmp_path, within=60)
    assert done.code == 2
    assert "longer than 128 MiB" in done.stderr and "SQLITE_LIMIT_LENGTH" in done.stderr
    assert done.peak_mib < 640  # the last row (64 MiB), its double, their copies


def test_many_large_values_at_once_stop_at_the_heap_limit(store: Store, tmp_path: Path) -> None:
    done = finish(spawn(store, tmp_path, WIDE_ROW), tmp_path, within=60)
    assert done.code == 2
    assert done.stderr == (
        "medsearch: error: SQL: the query needs more than 512 MiB of memory, the most"
        " medsearch sql gives one (PRAGMA hard_heap_limit)\n"
    )
    assert done.peak_mib < 640


# -- time --------------------------------------------------------------------------------------


@pytest.mark.parametrize("query", [ENDLESS, SORT_BEFORE_THE_FIRST_ROW])
def test_a_query_without_rows_stops_at_its_timeout(store: Store, query: str) -> None:
    started = time.monotonic()
    code, out, err = sql(store, "--timeout", "0.5", query)
    assert (code, out) == (124, "")
    assert err == "medsearch: error: the query ran longer than --timeout 0.5 s and was stopped\n"
    assert time.monotonic() - started < GRACE  # stopped by SQLite's handler, not the backstop


def test_a_query_within_its_timeout_answers_in_full(store: Store) -> None:
    query = "SELECT pmid, title FROM articles ORDER BY pmid"
    code, out, err = sql(store, "--timeout", "60", query)
    assert (code, err) == (0, "")
    assert out == sql(store, query)[1]
    assert len(out.splitlines()) == 1 + 5  # the header, and the five articles of the file


def test_a_timeout_must_be_positive(store: Store) -> None:
    code, _, err = sql(store, "--timeout", "0", "SELECT 1")
    assert code == 2
    assert "--timeout" in err


@needs_proc
@pytest.mark.parametrize(
    ("query", "within"),
    [
        (ENDLESS, 10.0),  # the progress handler stops it between two steps
        (PRINTF_BOMB, GRACE + 10),  # one step that runs long: the backstop ends the process
    ],
)
@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_ctrl_c_stops_a_query_that_has_not_produced_a_row(
    store: Store, tmp_path: Path, query: str, within: float
) -> None:
    proc = spawn(store, tmp_path, query)
    try:
        deadline = time.monotonic() + 60
        while not reading(proc, store):
            assert proc.poll() is None, (tmp_path / "err").read_text()
            assert time.monotonic() < deadline, "the query never started"
            time.sleep(0.02)
        time.sleep(0.3)  # well into the query
        proc.send_signal(signal.SIGINT)
        done = finish(proc, tmp_path, within=within)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert done.code == 130
    assert (
        done.stderr
        == "medsearch: error: the query was interrupted (Ctrl-C); the store is unchanged\n"
    )


def test_a_sort_that_spills_past_the_cap_is_stopped_in_one_line(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite caps no temporary file: an endless ORDER BY random() filled the folder.
    The cap is lowered here to 1 MiB; grouping 3M random keys spills ~100 MB (an
    ``ORDER BY ... LIMIT 1`` keeps only its top row in memory and spills nothing)."""
    from medsearch.store import sql_bounds

    monkeypatch.setattr(sql_bounds, "SPILL", MIB)
    monkeypatch.setattr(sql_bounds, "SPILL_EVERY", 16)
    query = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000)"
        " SELECT count(*) FROM (SELECT hex(randomblob(16)) AS h FROM c GROUP BY h)"
    )
    code, _, err = sql(store, query)
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith("medsearch: error: SQL: the query's temporary files took more than 0")
    assert line.endswith("and it was stopped (a sort or grouping too large to spill)")


def test_cited_pmids_refuses_a_blob_past_its_bound(store: Store) -> None:
    """A 100 MB zeroblob() through cited_pmids() once took 2.4 GB of Python memory."""
    code, _, err = sql(store, "SELECT length(cited_pmids(zeroblob(100000000)))")
    assert code == 2
    assert err.strip() == "medsearch: error: SQL: user-defined function raised exception"
    code, out, _ = sql(store, "SELECT cited_pmids(x'0a00000014000000') AS c", "--json")
    assert code == 0 and '{"c":"[10, 20]"}' in out
