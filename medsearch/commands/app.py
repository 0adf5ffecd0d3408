"""Opening the terminal UI (the only path from the CLI into textual)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from medsearch.paths import Paths


def open_app(paths: Paths) -> None:
    with typed_ahead_kept():
        from medsearch.tui.app import run_app

        run_app(paths)


@contextmanager
def typed_ahead_kept() -> Iterator[None]:
    """Keys typed while the app starts (imports, the history: a second or so) wait for
    it instead of landing on the shell's screen.

    Until textual takes the terminal over, the terminal echoes what is typed (it shows
    in the shell after quitting) and turns Enter into a line feed. From here on it does
    neither; the app still reads every key typed (and :class:`SearchBar` takes a line
    feed typed earlier as Enter). The settings found are restored when the app ends:
    textual restores what it found, which is these.
    """
    saved = _terminal_settings()
    if saved is None:  # no terminal (a pipe, a test's capture) or no termios (Windows)
        yield
        return
    import termios

    iflag, oflag, cflag, lflag, ispeed, ospeed, cc = saved
    cc = list(cc)
    cc[termios.VMIN], cc[termios.VTIME] = 1, 0
    quiet = [
        iflag & ~termios.ICRNL,  # Enter stays a carriage return
        oflag,
        cflag,
        lflag & ~(termios.ECHO | termios.ICANON),  # no echo; keys readable one at a time
        ispeed,
        ospeed,
        cc,
    ]
    fd = sys.stdin.fileno()
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _terminal_settings() -> list[Any] | None:
    """Standard input's terminal settings, or None when it is not a terminal."""
    try:
        import termios
    except ImportError:
        return None
    try:
        return termios.tcgetattr(sys.stdin.fileno())
    except (OSError, ValueError, AttributeError, termios.error):
        return None
