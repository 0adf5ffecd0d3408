"""Replacing the Delta model: a process killed at any moment leaves a usable model, and
whatever a kill left behind (in this layout or the plain-directory one) never stops the
next training. The kills are real: a subprocess installing a model SIGKILLs itself
just before one of its file-system steps."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_rerank_model import _scorer

from medsearch.rerank.install import current
from medsearch.rerank.scorer import DeltaScorer

INSTALL_AND_DIE = """
import os, shutil, signal, sys
from pathlib import Path
from medsearch.rerank.scorer import DeltaScorer

source, link, step = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
steps = 0

def dies_at_step(call):
    def wrapped(*args, **kwargs):
        global steps
        steps += 1
        if steps == step:
            os.kill(os.getpid(), signal.SIGKILL)
        return call(*args, **kwargs)
    return wrapped

for module, name in ((os, "rename"), (os, "replace"), (os, "symlink"), (shutil, "rmtree")):
    setattr(module, name, dies_at_step(getattr(module, name)))
scorer = DeltaScorer.load(source)
scorer.meta["trained_at"] = "new"
scorer.save(link)
print(steps)
"""


def model(trained_at: str, blend: float = 0.5) -> DeltaScorer:
    return _scorer({"trained_at": trained_at, "blend": blend})


def trained_at(directory: Path) -> str:
    return str(DeltaScorer.load(directory).meta["trained_at"])


def install_and_die(source: Path, link: Path, step: int) -> subprocess.CompletedProcess[str]:
    """Install ``source``'s model (stamped "new") as ``link`` in a subprocess that kills
    itself before its ``step``-th rename, replace, symlink or rmtree (0: never)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(
        [sys.executable, "-c", INSTALL_AND_DIE, str(source), str(link), str(step)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def plain_layout(link: Path) -> None:
    """The model as homes written before the versioned layout hold it: ``delta`` a plain
    directory."""
    model("old").save(link)
    target = link.resolve()
    link.unlink()
    target.rename(link)


def leftovers(rerank_dir: Path) -> list[str]:
    """Everything beside the live model: versions no link names, staging, swap debris."""
    live = (rerank_dir / "delta").resolve()
    return sorted(p.name for p in rerank_dir.iterdir() if p.name != "delta" and p != live)


@pytest.fixture
def source(tmp_path: Path) -> Path:
    directory = tmp_path / "source" / "delta"
    model("new").save(directory)
    return directory


@pytest.mark.parametrize("layout", ["versioned", "plain"])
def test_a_kill_at_any_step_of_a_swap_leaves_the_old_or_the_new_model(
    layout: str, source: Path, tmp_path: Path
) -> None:
    link = tmp_path / "home" / "rerank" / "delta"
    plain_layout(link) if layout == "plain" else model("old").save(link)
    pristine = tmp_path / "pristine"
    shutil.copytree(link.parent, pristine, symlinks=True)
    finished = install_and_die(source, link, step=0)
    assert finished.returncode == 0, finished.stderr
    steps = int(finished.stdout)
    assert trained_at(link) == "new" and leftovers(link.parent) == []
    for step in range(1, steps + 1):
        shutil.rmtree(link.parent)
        shutil.copytree(pristine, link.parent, symlinks=True)
        killed = install_and_die(source, link, step)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        found = current(link)
        assert found is not None, f"no model after a kill at step {step} of {steps}"
        assert trained_at(found) in ("old", "new")
        # the next training installs over whatever the kill left, and tidies it
        model("next").save(link)
        assert trained_at(link) == "next" and link.is_symlink()
        assert leftovers(link.parent) == [], f"after a kill at step {step}"


def test_a_leftover_delta_old_does_not_fail_the_next_training(tmp_path: Path) -> None:
    """A plain ``delta`` beside a ``delta.old`` that a kill left while removing it: the
    two-rename swap renamed ``delta`` onto it and failed ("Directory not empty")."""
    link = tmp_path / "rerank" / "delta"
    plain_layout(link)
    debris = link.with_name("delta.old")
    shutil.copytree(link, debris)
    model("next").save(link)
    assert trained_at(link) == "next"
    assert leftovers(link.parent) == []


def test_a_kill_between_the_plain_layouts_two_renames_loses_no_model(tmp_path: Path) -> None:
    """``delta`` already moved to ``delta.old``, ``delta.tmp`` (whole) not yet renamed:
    searches use the new model, and the next training adopts it and tidies up."""
    link = tmp_path / "home" / "rerank" / "delta"
    plain_layout(link)
    link.rename(link.with_name("delta.old"))
    model("new").save(tmp_path / "elsewhere" / "delta")
    shutil.copytree((tmp_path / "elsewhere" / "delta").resolve(), link.with_name("delta.tmp"))
    found = current(link)  # what a search's load_delta reads
    assert found == link.with_name("delta.tmp") and trained_at(found) == "new"
    model("next").save(link)
    assert trained_at(link) == "next" and leftovers(link.parent) == []


def test_a_plain_delta_directory_keeps_working_and_becomes_a_version(tmp_path: Path) -> None:
    link = tmp_path / "rerank" / "delta"
    plain_layout(link)
    assert current(link) == link and trained_at(link) == "old"
    model("next").save(link)
    assert link.is_symlink() and trained_at(link) == "next"
    assert json.loads((link / "meta.json").read_text())["trained_at"] == "next"
    assert leftovers(link.parent) == []
