"""A benchmark command's first word picks its mode; without one, the default reads it all."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from benchmarks.modes import Mode, run_mode


def _record(name: str, seen: list[tuple[str, list[str]]]) -> Callable[[], None]:
    def mode() -> None:
        """One line that --help lists."""
        seen.append((name, sys.argv[1:]))

    return mode


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["shards", "--docs", "10"], ("shards", ["--docs", "10"])),
        (["--docs", "10"], ("latency", ["--docs", "10"])),
        ([], ("latency", [])),
    ],
)
def test_the_first_word_names_the_mode_and_the_rest_is_its_command_line(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], expected: tuple[str, list[str]]
) -> None:
    seen: list[tuple[str, list[str]]] = []
    modes = {"latency": _record("latency", seen), "shards": _record("shards", seen)}
    monkeypatch.setattr(sys, "argv", ["__main__.py", *argv])
    run_mode("benchmarks.lexical", modes, default="latency")
    assert seen == [expected]
    assert sys.argv[0] == f"benchmarks.lexical {expected[0]}"  # argparse's usage line


def test_help_lists_every_mode_then_the_default_modes_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[str, list[str]]] = []
    modes = {"speed": _record("speed", seen), "quality": _record("quality", seen)}
    monkeypatch.setattr(sys, "argv", ["__main__.py", "--help"])
    run_mode("benchmarks.rerank", modes, default="speed")
    listed = capsys.readouterr().out
    assert "speed          One line that --help lists." in listed
    assert "quality        One line that --help lists." in listed
    assert seen == [("speed", ["--help"])]


def test_a_mode_given_as_a_module_is_imported_only_when_it_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A command's modes may need different heavy imports (torch for one, faiss for
    another); naming one must not load the others."""
    seen: list[tuple[str, list[str]]] = []
    modes: dict[str, Mode] = {"gpu": "benchmarks.no_such_module", "cpu": _record("cpu", seen)}
    monkeypatch.setattr(sys, "argv", ["__main__.py", "cpu"])
    run_mode("benchmarks.encode", modes, default="gpu")
    assert seen == [("cpu", [])]
    monkeypatch.setattr(sys, "argv", ["__main__.py", "gpu"])
    with pytest.raises(ModuleNotFoundError):
        run_mode("benchmarks.encode", modes, default="gpu")
