"""A data home the reader may not write is read all the same (or refused in one line).

A copy on read-only media, a home made read-only, another user's home: reading needs
no write, so `show`, `search`, `sql`, `stats` and `export` answer there and leave no
file behind. Where reading is impossible without writing (commits still in the
write-ahead log and no shared-memory file), or the files are not readable, one line
says so. Root ignores file modes, so as root the commands run as the unprivileged
user ``nobody`` (setpriv or runuser), which is what a reader of someone else's home is.
"""

from __future__ import annotations

import functools
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ingested_home

from medsearch.cli import main
from medsearch.paths import Paths

ROOT = Path(__file__).resolve().parent.parent

# Runs several commands in one process (one start-up, not five): as the given user, on
# the given home; prints [exit status, stdout, stderr] for each.
CHILD = """
import json, sys
from click.testing import CliRunner
from medsearch.cli import main
home, commands = sys.argv[1], json.loads(sys.argv[2])
results = []
for command in commands:
    result = CliRunner().invoke(main, ["--home", home, *command])
    results.append([result.exit_code, result.stdout, result.stderr])
print(json.dumps(results))
"""


def nobody() -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


@functools.cache
def reader() -> tuple[str, ...] | str:
    """The prefix that runs a command as a user who may not write the home (none when
    this process is not root: a mode it sets binds it), or why there is none."""
    if os.geteuid() != 0:
        return ()
    user = nobody()
    if user is None:
        return "running as root and there is no user `nobody` to read as"
    if setpriv := shutil.which("setpriv"):
        prefix: tuple[str, ...] = (
            setpriv,
            f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}",
            "--clear-groups",
        )
    elif runuser := shutil.which("runuser"):
        prefix = (runuser, "-u", "nobody", "--")
    else:
        return "running as root without setpriv or runuser to read as another user"
    probe = subprocess.run(
        [*prefix, sys.executable, "-c", "import medsearch.cli, tantivy"],
        capture_output=True,
        text=True,
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if probe.returncode:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return f"`nobody` cannot run this Python and medsearch: {last}"
    return prefix


def run_as_reader(home: Path, *commands: list[str]) -> list[tuple[int, str, str]]:
    prefix = reader()
    if isinstance(prefix, str):
        pytest.skip(prefix)
    found = subprocess.run(
        [*prefix, sys.executable, "-c", CHILD, str(home), json.dumps(commands)],
        capture_output=True,
        text=True,
        cwd=home.parent,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert found.returncode == 0, found.stderr
    return [tuple(r) for r in json.loads(found.stdout)]


@dataclass(frozen=True)
class Built:
    home: Path
    pmid: int
    title: str
    count: int


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A data home as ingest leaves it: store (no log left) and lexical index."""
    home, articles = ingested_home(tmp_path_factory)
    return Built(home, articles[0].pmid, articles[0].title, len(articles))


def title_word(title: str) -> str:
    """A word of ``title`` that search finds it by (the longest: not a stopword)."""
    return max(re.findall(r"[A-Za-z]+", title), key=len)


@contextmanager
def copy_of(home: Path) -> Iterator[Path]:
    """A copy of ``home`` where the reader can reach it (pytest's own folders are
    private to this user), removed afterwards whatever its modes."""
    base = Path(tempfile.mkdtemp(prefix="medsearch-readonly-"))
    base.chmod(0o755)
    try:
        copy = base / "home"
        shutil.copytree(home, copy)
        yield copy
    finally:
        unlock(base)
        shutil.rmtree(base)


def lock(home: Path) -> None:
    """Make ``home`` the reader's and read-only: nobody, its owner included, may write."""
    user = nobody() if os.geteuid() == 0 else None
    for path in [home, *home.rglob("*")]:
        if user is not None:
            os.chown(path, user.pw_uid, user.pw_gid)
        path.chmod(0o555 if path.is_dir() else 0o444)


def unlock(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def listing(home: Path) -> dict[str, bytes]:
    """Every file under ``home`` and its bytes (a read may not add, change or remove one)."""
    return {
        str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()
    }


def test_every_read_command_answers_from_a_home_it_may_not_write(built: Built) -> None:
    with copy_of(built.home) as home:
        assert sorted(p.name for p in home.glob("store.sqlite*")) == ["store.sqlite"]
        lock(home)
        before = listing(home)
        show, search, sql, stats, export = run_as_reader(
            home,
            ["show", str(built.pmid), "--json"],
            ["search", title_word(built.title), "--mode", "lexical", "--json"],
            ["sql", "--json", "SELECT pmid FROM articles ORDER BY pmid"],
            ["stats", "--json"],
            ["export", str(built.pmid), "--format", "ris"],
        )
        for code, _, err in (show, search, sql, stats, export):
            assert (code, err) == (0, "")
        assert json.loads(show[1])["pmid"] == built.pmid
        assert built.pmid in [hit["pmid"] for hit in json.loads(search[1])["hits"]]
        assert len(json.loads(sql[1])) == built.count
        assert json.loads(stats[1])["articles"] == built.count
        assert export[1].rstrip().endswith("ER  -")
        assert listing(home) == before


def killed_writer(home: Path) -> None:
    """Leave ``home`` as a writer killed after a commit leaves it, less ``-shm``: the
    commit is only in the write-ahead log."""
    store = Paths(home).store
    code = (
        "import os, sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.execute('PRAGMA wal_autocheckpoint = 0')\n"
        "conn.execute(\"INSERT INTO meta(key, value) VALUES ('a commit', 'in the log')\")\n"
        "os._exit(0)  # no close: nothing is checkpointed\n"
    )
    subprocess.run([sys.executable, "-c", code, str(store)], check=True)
    assert store.with_name("store.sqlite-wal").stat().st_size
    store.with_name("store.sqlite-shm").unlink()


def test_commits_only_in_the_log_are_refused_in_one_line_until_folded_in(built: Built) -> None:
    with copy_of(built.home) as home:
        killed_writer(home)
        lock(home)
        results = run_as_reader(home, ["show", str(built.pmid)], ["sql", "SELECT 1"])
        store = Paths(home).store
        for code, out, err in results:
            assert (code, out) == (1, "")
            assert err == (
                f"medsearch: error: the article store {store} has commits in store.sqlite-wal"
                f" that cannot be read without writing to {home}; run `medsearch ingest"
                " --no-encode` once as a user who may write there (it folds them into the"
                " store)\n"
            )
        unlock(home)  # its owner follows the advice
        result = CliRunner().invoke(main, ["--home", str(home), "ingest", "--no-encode"])
        assert result.exit_code == 0, result.output
        assert not store.with_name("store.sqlite-wal").exists()
        lock(home)
        ((code, out, err),) = run_as_reader(
            home, ["sql", "SELECT value FROM meta WHERE key = 'a commit'"]
        )
        assert (code, out.splitlines(), err) == (0, ["value", "in the log"], "")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a home another user owns")
def test_an_index_the_reader_may_not_read_is_named_in_one_line(built: Built) -> None:
    """tantivy keeps two of its files private to their owner: another user's index
    cannot be searched, and no rebuild by that user could help."""
    with copy_of(built.home) as home:
        (show, search) = run_as_reader(
            home, ["show", str(built.pmid), "--json"], ["search", "anything", "--mode", "lexical"]
        )
        assert show[0] == 0
        assert search[:2] == (1, "")
        index = Paths(home).lexical_index
        assert search[2] == (
            f"medsearch: error: the lexical index at {index} cannot be read by this user"
            " (.managed.json, meta.json not readable); ask its owner to make the data home"
            " readable\n"
        )
