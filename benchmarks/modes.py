"""One command per subsystem, its measurements picked by a first word.

``python -m benchmarks.lexical shards --docs N`` runs the ``shards`` mode with the rest
of the command line; without a mode's name first, the default mode reads every argument,
so a subsystem's main measurement keeps the short command (``python -m
benchmarks.lexical --docs N``). Each mode is a module with a ``main()`` that reads
``sys.argv`` through argparse, as it would run alone (or, in a script of one file, a
function that does): the modes share nothing but this.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping

Mode = str | Callable[[], None]
"""A module's dotted name (imported only when its mode runs), or the mode's function."""


def run_mode(command: str, modes: Mapping[str, Mode], default: str) -> None:
    """Run the mode the first argument names, else ``default``."""
    args = sys.argv[1:]
    mode = default
    if args and args[0] in modes:
        mode = args.pop(0)
    elif args and args[0] in ("-h", "--help"):
        print(f"python -m {command} [MODE] [OPTIONS]; modes ({default} when none is named):")
        for name, target in modes.items():
            doc = (_doc(target) or "").strip()
            print(f"  {name:14} {doc.splitlines()[0] if doc else ''}")
        print(f"\nThe {default} mode's options:")
    sys.argv = [f"{command} {mode}", *args]
    _main(modes[mode])()


def _main(target: Mode) -> Callable[[], None]:
    if callable(target):
        return target
    main: Callable[[], None] = importlib.import_module(target).main
    return main


def _doc(target: Mode) -> str | None:
    return target.__doc__ if callable(target) else importlib.import_module(target).__doc__
