"""Fixtures shared by every test: an isolated data home and the optional ../shared data."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


def ingested_home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    """A data home as `ingest --no-encode` leaves it (a real baseline file's records when
    ../shared has them, else the tricky fixture), with its articles in PMID order, read
    from the file: reading the store would leave its -shm behind."""
    from click.testing import CliRunner

    from ingest.pubmed_xml import parse_file
    from medsearch.cli import main
    from medsearch.records import Article

    real = SHARED_DATA / "pubmed" / "net-synergy-pubmedparser" / "pubmed21n0001.xml.gz"
    source = real if real.exists() else FIXTURES / "tricky_articles.xml"
    home = tmp_path_factory.mktemp("owner") / "home"
    result = CliRunner().invoke(main, ["--home", str(home), "ingest", str(source), "--no-encode"])
    assert result.exit_code == 0, result.output
    articles = (a for a in parse_file(source) if isinstance(a, Article))
    return home, sorted(articles, key=lambda a: a.pmid)
