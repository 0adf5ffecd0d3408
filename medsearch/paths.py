"""Every on-disk location medsearch uses, and nothing else.

The data home is platformdirs' user data dir, overridden by ``MEDSEARCH_HOME`` and, above
that, by the global ``--home DIR`` option (which the CLI passes in as ``home``). Modules
never build paths themselves: they ask a :class:`Paths`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from medsearch.errors import HomeError

ENV_HOME = "MEDSEARCH_HOME"
APP_NAME = "medsearch"


def demo_corpus() -> Path:
    """The bundled demo records (invented, PubMed format) used when NCBI is unreachable."""
    return Path(__file__).resolve().parent.parent / "assets" / "demo"


def default_home() -> Path:
    """The data home when neither ``--home`` nor ``MEDSEARCH_HOME`` says otherwise."""
    env = os.environ.get(ENV_HOME)
    if env:
        return Path(env).expanduser()
    return platform_home()


def platform_home() -> Path:
    """The platform's user data directory for medsearch (no override applied)."""
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


@dataclass(frozen=True)
class Paths:
    """The layout of one data home."""

    home: Path
    settings_home: Path | None = None
    """Where config.toml and downloaded models live when they are not under ``home``:
    an evaluation collection is its own data home but uses the user's profiles and
    model cache (see :meth:`collection`)."""

    @classmethod
    def resolve(cls, home: str | os.PathLike[str] | None = None) -> Paths:
        return cls(Path(home).expanduser() if home else default_home())

    @property
    def store(self) -> Path:
        """The SQLite article store (articles, deletions, file ledger, vector bookkeeping)."""
        return self.home / "store.sqlite"

    @property
    def lexical_index(self) -> Path:
        return self.home / "lexical"

    @property
    def vectors(self) -> Path:
        """Root of the vector indexes; one sub-directory per collection (articles, sentences)."""
        return self.home / "vectors"

    def vector_dir(self, collection: str) -> Path:
        return self.vectors / collection

    @property
    def citations(self) -> Path:
        """The cited-by arrays built from the store's citation edges."""
        return self.home / "citations"

    @property
    def downloads(self) -> Path:
        return self.home / "downloads"

    @property
    def exports(self) -> Path:
        """Where the terminal UI exports the basket unless told otherwise."""
        return self.home / "exports"

    @property
    def models_cache(self) -> Path:
        """Where ``medsearch models download`` puts model snapshots for offline use."""
        return (self.settings_home or self.home) / "models"

    @property
    def config_file(self) -> Path:
        return (self.settings_home or self.home) / "config.toml"

    def collection(self, home: Path) -> Paths:
        """A separate data home (e.g. an eval collection) sharing this one's settings."""
        return Paths(home, settings_home=self.settings_home or self.home)

    @property
    def history_file(self) -> Path:
        """The TUI's former recall file (one query a line): imported into
        :attr:`history_db` once, then removed."""
        return self.home / "history.txt"

    @property
    def history_db(self) -> Path:
        """The search history: every search, its query as run, count and corpus snapshot."""
        return self.home / "history.sqlite"

    @property
    def rerank_dir(self) -> Path:
        """The Delta reranker trained on this corpus (and its resumable work files)."""
        return self.home / "rerank"

    @property
    def signals_file(self) -> Path:
        """The user's relevance signals (opened/marked/exported/cited) for rerank training."""
        return self.home / "signals.jsonl"

    @property
    def watches_file(self) -> Path:
        """Saved searches and their hits: the user's state, apart from the corpus store,
        so reading and marking hits never needs the writer lock."""
        return self.home / "watches.sqlite"

    @property
    def screening(self) -> Path:
        """Screening projects: one SQLite file each (``NAME.sqlite``), the reviewers' own
        decisions, apart from the corpus store."""
        return self.home / "screening"

    @property
    def feeds(self) -> Path:
        """One Atom feed per saved search, for a feed reader to subscribe to locally."""
        return self.home / "feeds"

    @property
    def update_log(self) -> Path:
        """What each ``medsearch update`` did, appended, for runs from a timer."""
        return self.home / "update.log"

    @property
    def serve_socket(self) -> Path:
        """The Unix socket ``medsearch serve`` listens on (0600), and the CLI looks for."""
        return self.home / "serve.sock"

    @property
    def serve_token(self) -> Path:
        """The bearer token a client of ``medsearch serve`` must send (0600)."""
        return self.home / "serve.token"

    @property
    def eval_cache(self) -> Path:
        return self.home / "eval"

    @property
    def tmp(self) -> Path:
        return self.home / "tmp"

    def ensure(self) -> Paths:
        """Create the home (and tmp) or raise a :class:`HomeError` that says why not."""
        try:
            self.home.mkdir(parents=True, exist_ok=True)
            self.tmp.mkdir(exist_ok=True)
            probe = self.home / ".write-test"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            raise HomeError(
                f"cannot write to the data home {self.home}: {exc.strerror or exc}"
                f" (choose another with --home DIR or {ENV_HOME})"
            ) from exc
        return self
