"""`medsearch ingest` run from a folder that holds packages named like medsearch's own.

The parsers run in child processes started by ``multiprocessing``'s forkserver as
``python -c ...``, which put the current directory first on ``sys.path``: a planted
``./ingest/__init__.py`` ran during ingest, and a folder holding a clone (``./medsearch``)
made every file fail as "parser process died". The children start with a clean
``sys.path`` (``PYTHONSAFEPATH``) that keeps ``PYTHONPATH``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.synth import article_xml, pubmed_file

REPO = Path(__file__).resolve().parent.parent


def plant(folder: Path, package: str, marker: Path) -> None:
    """A package ``package`` in ``folder`` whose import writes ``marker`` and then fails."""
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text(
        f"open({str(marker)!r}, 'a').write({package!r} + '\\n')\nraise SystemExit(3)\n"
    )


@pytest.mark.thorough  # a real ingest with parser processes: seconds of CPU
def test_ingest_imports_nothing_from_the_folder_it_runs_in(tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    marker = tmp_path / "imported.txt"
    for package in ("medsearch", "ingest", "multiprocessing"):  # the last: the forkserver's
        plant(cwd, package, marker)
    inputs = [
        pubmed_file(
            tmp_path / f"f{n}.xml", [article_xml(10 * n + i, f"Cwd test {n}") for i in (1, 2)]
        )
        for n in (1, 2)
    ]
    # The user's `medsearch` is a script outside the folder: its own directory, not the
    # current one, is first on its sys.path (a `python -c` parent would import the
    # planted package itself, which is the user's own doing).
    launcher = tmp_path / "bin" / "medsearch_launcher.py"
    launcher.parent.mkdir()
    launcher.write_text(  # as pip writes a console script
        "from medsearch.cli import main\nif __name__ == '__main__':\n    main()\n"
    )
    env = {
        **os.environ,
        # no empty entry: an empty PYTHONPATH entry is the current folder
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "COLUMNS": "200",
    }
    env.pop("PYTHONSAFEPATH", None)
    home = tmp_path / "home"
    run = subprocess.run(
        [
            sys.executable,
            str(launcher),
            "--home",
            str(home),
            "ingest",
            *map(str, inputs),
            "--no-encode",
            "--jobs",
            "2",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert not marker.exists(), marker.read_text()
    assert run.returncode == 0, run.stdout[-1500:] + run.stderr[-1500:]
    assert "2 ingested" in run.stdout and "0 failed" in run.stdout
    assert sorted(p.name for p in cwd.iterdir()) == ["ingest", "medsearch", "multiprocessing"]
