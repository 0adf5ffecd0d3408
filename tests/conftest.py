"""Fixtures shared by every test: an isolated data home and the optional ../shared data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = REPO.parent / "shared" / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Every test gets its own MEDSEARCH_HOME and no network-reaching hub lookups."""
    home = tmp_path / "home"
    monkeypatch.setenv("MEDSEARCH_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    # A developer's real Hugging Face cache must not change what tests see.
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    yield home


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test cleanly when it is not there."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path


def wait_until(condition: Callable[[], object], seconds: float = 60.0) -> bool:
    """Poll ``condition`` until it holds (True) or ``seconds`` pass (False)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False
