"""Typed errors with messages written for the person at the keyboard.

Every failure a user can cause or meet (bad input, missing data, a model that does not
match the index) is a :class:`MedsearchError`. The CLI prints ``str(error)`` as one line
and exits with ``error.exit_code``; the TUI shows it as a notification. Anything that is
not a ``MedsearchError`` is a bug in medsearch.
"""

from __future__ import annotations


class MedsearchError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user."""

    exit_code: int = 1


class UsageError(MedsearchError):
    """The command was given arguments that cannot work together."""

    exit_code = 2


class ConfigError(MedsearchError):
    """``config.toml`` cannot be read, or a setting in it has a name, type or value
    medsearch cannot use; the message names the file, the setting and what it takes."""

    exit_code = 78  # sysexits' EX_CONFIG, beside 70 (EX_SOFTWARE) for internal errors


class HomeError(MedsearchError):
    """The data home cannot be created or written."""


class StoreError(MedsearchError):
    """The article store is missing, corrupt or from an incompatible version."""


class NotFoundError(MedsearchError):
    """A PMID (or other key) the user asked for is not in the store."""


class ParseError(MedsearchError):
    """An input file is not readable PubMed XML (truncated, malformed, wrong format).

    ``path`` names the file and ``position`` (``line N`` or ``byte N``) says where it
    broke, when the parser knows.
    """

    def __init__(self, path: str, problem: str, position: str | None = None) -> None:
        self.path = path
        self.problem = problem
        self.position = position
        where = f" at {position}" if position else ""
        super().__init__(f"{path}: {problem}{where}")


class DiskFullError(MedsearchError):
    """The disk under the data home is full; nothing half-written was kept."""


class DiskSpaceError(MedsearchError):
    """An ingest was refused before it started: the disk cannot hold what it would write."""


class BusyError(MedsearchError):
    """Another process holds the data home's writer lock (see :mod:`medsearch.lock`)."""

    exit_code = 3


class DownloadError(MedsearchError):
    """A file could not be fetched or failed its checksum."""


class QuerySyntaxError(MedsearchError):
    """A search query cannot be parsed; the message points at the problem.

    ``problem`` is the one line naming it and its position; ``shown``, once the parser
    knows the text, the stretch of the query around the position with a caret under it
    (a window: a strategy may be 8,000 characters long), printed below that line.
    """

    exit_code = 2

    def __init__(self, message: str, position: int | None = None, *, shown: str = "") -> None:
        self.position = position
        self.problem = message
        self.shown = shown
        super().__init__(f"{message}\n{shown}" if shown else message)


class SqlError(MedsearchError):
    """A ``medsearch sql`` query is not valid SQL, would change the store, or passed one
    of the bounds on what a query may take (see :mod:`medsearch.store.sql_bounds`)."""

    exit_code = 2


class QueryInterruptedError(MedsearchError):
    """A ``medsearch sql`` query was stopped by Ctrl-C; exit 130 as for any SIGINT."""

    exit_code = 130


class QueryTimeoutError(MedsearchError):
    """A ``medsearch sql`` query ran past its ``--timeout``; exit 124 as ``timeout(1)``."""

    exit_code = 124


class ModelError(MedsearchError):
    """A model cannot be found, loaded or does not fit the index it is used with."""


class IndexMismatchError(ModelError):
    """The index on disk was built with a different model profile than the one asked for."""


class VectorsMissingError(MedsearchError):
    """Dense retrieval was asked for but the corpus (or this PMID) has no vectors yet."""


class UntrainableError(UsageError):
    """The corpus gives the Delta reranker nothing to learn from (too few articles, or no
    text to make training queries of); ``eval`` then keeps the first-stage order."""
