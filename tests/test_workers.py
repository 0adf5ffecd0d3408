"""Parser processes: every file parsed at once up to ``jobs``, applied in file order.

A parser writes its batches to a spool file, so it never waits for the writer: on a
baseline file of 30,000 articles the old bounded queue (8 batches) let the parser of a
file ahead of the writer run 8,000 articles and then block, and many cores ingested at
about one parser's speed.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, wait_until

from benchmarks.synth import article_xml, pubmed_file
from ingest.workers import SPOOL_AHEAD, SPOOL_PREFIX, ParserPool, died

BATCH = 20


def baseline_files(folder: Path, files: int, per_file: int) -> list[Path]:
    """``files`` PubMed files of ``per_file`` articles, PMIDs numbered across them."""
    folder.mkdir(parents=True, exist_ok=True)
    return [
        pubmed_file(
            folder / f"pubmed26n{f + 1:04d}.xml",
            [
                article_xml(f * per_file + i + 1, f"Trial {f}-{i}", "Statins lower LDL.")
                for i in range(per_file)
            ],
        )
        for f in range(files)
    ]


def articles_of(messages: object) -> list[int]:
    return [
        row[0]
        for kind, payload in messages  # type: ignore[attr-defined]
        if kind == "articles"
        for row in payload.rows
    ]


def test_a_parser_ahead_of_the_writer_finishes_its_file_without_waiting(tmp_path: Path) -> None:
    # 20 batches a file: more than the 8 the old queue held.
    files = baseline_files(tmp_path / "in", 2, 20 * BATCH)
    pool = ParserPool(files, jobs=2, batch_size=BATCH, spool_root=tmp_path / "tmp")
    walk = iter(pool)
    path, messages = next(walk)
    first = next(messages)  # the writer holds the first file's first batch, no further
    assert path == files[0] and first[0] == "articles"
    assert wait_until(lambda: pool.parsing() == 0), "a parser waited for the writer"
    written = articles_of([first]) + articles_of(messages)
    path, messages = next(walk)
    written += articles_of(messages)
    assert next(walk, None) is None
    assert written == list(range(1, 2 * 20 * BATCH + 1))  # every article, in file order


def test_no_more_than_jobs_files_parse_and_few_wait_for_the_writer(tmp_path: Path) -> None:
    files = baseline_files(tmp_path / "in", 6, 3 * BATCH)
    pool = ParserPool(files, jobs=1, batch_size=BATCH, spool_root=tmp_path / "tmp")
    walk = iter(pool)
    _, messages = next(walk)
    seen = articles_of([next(messages)])  # the writer holds the first file's first batch
    for in_flight in (2, 3):  # as each file is parsed, the writer's next read starts one
        assert wait_until(lambda: pool.parsing() == 0)
        seen += articles_of([next(messages)])
        assert pool.in_flight() == in_flight and pool.parsing() == 1
    assert wait_until(lambda: pool.parsing() == 0)
    seen += articles_of([next(messages)])  # ... and a fourth waits: 1 + SPOOL_AHEAD
    assert pool.in_flight() == 1 + SPOOL_AHEAD and pool.parsing() == 0
    seen += articles_of(messages)
    for _, messages in walk:
        assert pool.parsing() <= 1 and pool.in_flight() <= 1 + SPOOL_AHEAD
        seen += articles_of(messages)
    assert seen == list(range(1, 6 * 3 * BATCH + 1))


def test_spools_are_removed_as_files_are_written_and_after_a_killed_run(tmp_path: Path) -> None:
    root = tmp_path / "tmp"
    killed = root / f"{SPOOL_PREFIX}999999999-abc"  # a writer that no longer runs
    killed.mkdir(parents=True)
    (killed / "000001.spool").write_bytes(b"left by kill -9")
    running = root / f"{SPOOL_PREFIX}{os.getpid()}-abc"  # a writer still running
    running.mkdir()
    files = baseline_files(tmp_path / "in", 3, 2 * BATCH)
    pool = ParserPool(files, jobs=2, batch_size=BATCH, spool_root=root)
    assert not killed.exists() and running.exists()
    for _, messages in pool:
        articles_of(messages)
    assert sorted(p.name for p in root.iterdir()) == [running.name]


def test_a_file_stopped_early_stops_its_parser_and_leaves_no_spool(tmp_path: Path) -> None:
    files = baseline_files(tmp_path / "in", 3, 20 * BATCH)
    root = tmp_path / "tmp"
    pool = ParserPool(files, jobs=2, batch_size=BATCH, spool_root=root)
    for _, messages in pool:
        next(messages)
        break  # Ctrl-C in the writer: the ingest ends here
    pool.close()
    assert pool.parsing() == 0 and list(root.iterdir()) == []


def test_a_full_disk_under_the_spools_stops_the_writer_as_a_full_disk(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full (Linux)")
    files = baseline_files(tmp_path / "in", 1, 2 * BATCH)
    pool = ParserPool(files, jobs=2, batch_size=BATCH, spool_root=tmp_path / "tmp")
    assert pool.spools is not None
    (pool.spools / "000001.spool").symlink_to("/dev/full")  # every write: ENOSPC
    with pytest.raises(OSError) as raised:
        for _, messages in pool:
            articles_of(messages)
    assert raised.value.errno == errno.ENOSPC
    pool.close()
    assert not (tmp_path / "tmp").exists() or list((tmp_path / "tmp").iterdir()) == []


CHILD_WITHOUT_REGEX = r"""
import os
import sys
from pathlib import Path

from ingest.workers import ParserPool

# Put a broken "regex" first on the parser processes' path (their server starts from
# the environment; newer Pythons pass it this sys.path), as a broken install would: only
# the parsers import it (for the lexical fields), this process never does.
os.environ["PYTHONPATH"] = sys.argv[1] + os.pathsep + os.environ["PYTHONPATH"]
sys.path.insert(0, sys.argv[1])
pool = ParserPool([Path(sys.argv[2])], jobs=1, spool_root=Path(sys.argv[3]))
for path, messages in pool:
    for kind, payload in messages:
        print(kind, payload)
"""


def test_a_parser_process_that_cannot_start_says_why(tmp_path: Path) -> None:
    """An import that fails in the parser process is named with its message, not hidden
    behind "parser process died (exit code 1)"."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "regex.py").write_text('raise ImportError("regex is built for another Python")\n')
    [path] = baseline_files(tmp_path / "in", 1, 2)
    done = subprocess.run(
        [sys.executable, "-c", CHILD_WITHOUT_REGEX, str(broken), str(path), str(tmp_path / "tmp")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == [
        "error ('parser process failed: ImportError: regex is built for another Python', None)"
    ]


@pytest.mark.parametrize(
    ("exit_code", "said"),
    [
        (1, "parser process died (exit code 1)"),
        (-9, "parser process killed by SIGKILL (the system may have run out of memory)"),
        (-11, "parser process killed by SIGSEGV"),
    ],
)
def test_a_parser_process_that_dies_without_a_word_is_named_by_its_end(
    exit_code: int, said: str
) -> None:
    assert died(exit_code) == said
