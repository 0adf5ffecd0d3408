"""Kill -9 during screening loses no decision: every decision a reviewer saw confirmed
is in the project file after the process dies mid-stream."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from medsearch.screening import readers
from medsearch.screening.project import Project, Strategy

FIXTURES = Path(__file__).parent / "fixtures" / "screening"

SCREENER = """
import sys
from pathlib import Path
from medsearch.screening.project import Project
from medsearch.screening.session import Session
project = Project.open(Path(sys.argv[1]), "k")
session = Session(project)
n = 0
while True:
    record = session.next()
    if record is None:
        session.undo()  # keep going: undo and decide again, as a reviewer might
        continue
    kind = ("include", "exclude", "maybe")[n % 3]
    session.decide(record, kind)
    n += 1
    print(record, kind, flush=True)
"""


@pytest.mark.thorough
def test_kill_9_loses_no_confirmed_decision(tmp_path: Path) -> None:
    items = readers.read_file(FIXTURES / "labelled.csv") * 30  # 300 records
    with Project.create(tmp_path, "k") as project:
        project.add(items, Strategy("file"))
        project.conn.execute("UPDATE records SET duplicate_of = NULL")  # screen them all
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SCREENER, str(tmp_path)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    confirmed: list[tuple[int, str]] = []
    for line in proc.stdout:
        record, kind = line.split()
        confirmed.append((int(record), kind))
        if len(confirmed) == 120:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    with Project.open(tmp_path, "k") as project:
        stored = project.decisions()
    for record, kind in confirmed:
        assert stored[record].decision == kind
    assert len(stored) >= len(confirmed)
