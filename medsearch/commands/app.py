"""Opening the terminal UI (the only path from the CLI into textual)."""

from __future__ import annotations

from medsearch.paths import Paths


def open_app(paths: Paths) -> None:
    from medsearch.tui.app import run_app

    run_app(paths)
