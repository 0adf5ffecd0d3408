"""Typed settings, layered: defaults, then ``config.toml`` in the data home.

Each field says why it has its default. The file is TOML with a ``[search]`` table; model
profiles live in ``[profiles.NAME]`` tables (read by :mod:`medsearch.models.profiles`) and
key bindings in ``[keys]`` (read by the TUI).
"""

from __future__ import annotations

import difflib
import json
import math
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, get_args, get_type_hints

from medsearch.errors import ConfigError
from medsearch.paths import Paths


@dataclass(frozen=True)
class Settings:
    profile: str | None = None
    """Model profile; None picks medcpt when cached, else the offline minilm profile."""

    device: str = "auto"
    """auto picks cuda, then mps, then cpu."""

    lexical_candidates: int = 1000
    """Lexical top-N fed to fusion. Measured (docs/benchmarks-history.md, "Hybrid
    candidate depths"): hybrid nDCG@10 on SciFact is flat from 50 to 1000
    (0.7196-0.7212) and Recall@100 from 200 up; at 1M documents top-300 costs what
    top-1000 does (tantivy scores every match of the multi-field query either way), so
    the deeper list, safer on a 40M corpus, is kept."""

    dense_candidates: int = 1000
    """Dense top-N fed to fusion: 200-1000 measured equal on SciFact (within 0.001)."""

    rrf_k: int = 60
    """Reciprocal rank fusion constant (Cormack et al. 2009)."""

    fusion: str = "rrf"
    """rrf, or "score" for a weighted sum of min-max normalised scores."""

    rerank_head_gpu: int = 100
    """Cross-encoder head on a GPU (MedCPT's own setting)."""

    rerank_head_cpu: int = 20
    """Cross-encoder head on a CPU: ~0.1 s per pair with int8 here, so keep it short."""

    index_factory: str | None = None
    """Faiss factory string overriding the size-based choice."""

    sentence_candidates: int | None = None
    """Compressed sentence candidates re-scored exactly by re-encoding their text (large
    sentence indexes only): None = 400 on a GPU (one ~15 ms batch; recall@10 0.96-0.99)
    and 100 on a CPU (re-encoding 400 there takes seconds; recall@10 0.98 on real
    sentences, 0.85 on 1M synthetic ones)."""

    rerank_budget_cpu: float = 1.0
    """Seconds a command (``search``) may spend on the cross-encoder on a CPU, loading it
    included: a BERT-base reranker scores a few pairs a second there, and waiting for
    the whole head made a search take 40 s (issue 42). The head's first pairs that fit
    are reranked and a note says how many; 0 leaves the cross-encoder to ``--rerank
    cross`` (never limited), as is the TUI's background rerank."""

    rerank: str = "auto"
    """auto (CPU: Delta over the top 500, then the cross-encoder on the head in the
    background; GPU: the cross-encoder over the top 100), delta, cross or none."""

    delta_depth: int = 500
    """First-stage candidates the Delta reranker reorders (the paper's 500: ~tens of ms)."""

    rerank_int8: bool | None = None
    """Dynamic int8 cross-encoder: None = on a CPU (~1.5-2x faster here), never on a GPU."""

    mesh_ranking: bool = False
    """With MeSH installed, plain words also rank by the headings automatic term mapping
    finds for them (an extra clause per heading). Off: not shown to help ranking
    (docs/mesh.md); the mapping always applies to set queries and to the count."""


@dataclass(frozen=True)
class IngestSettings:
    """The ``[ingest]`` table."""

    keep_free_bytes: int = 0
    """Bytes ``ingest --download`` leaves free on the data home's disk beyond its own
    estimate (which already has 10% headroom): room for the rest of the machine."""

    delete_downloads: bool = False
    """Delete each downloaded PubMed file once it is ingested (the baseline is 51.8 GB
    of gzipped XML that the store holds again); later downloads skip files the ledger
    has. Same as ``ingest --delete-downloads``."""

    cpu_encode_minutes: float = 5.0
    """How long ``ingest --device auto`` may encode by itself on a machine without a GPU,
    judged by the rate it measures on the first few articles (see ingest/cpu_guard.py):
    a 2-core CPU encodes ~2 articles/s with MedCPT and sentences, so an update file's
    30K would be hours. ``--device cpu`` encodes whatever waits."""


TABLES = ("search", "ingest", "profiles", "keys")
"""The config file's tables: ``[profiles.NAME]`` are read by :mod:`medsearch.models.profiles`
and ``[keys]`` by the TUI, which warns of a binding it does not know and goes on."""

CHOICES: dict[str, tuple[str, ...]] = {
    "fusion": ("rrf", "score"),
    "rerank": ("auto", "delta", "cross", "none"),
}
LARGEST = 2**31 - 1
"""No setting needs more (candidates, minutes); a larger one (``1e300``, 30 digits)
would overflow where it is used, far from the file that set it."""
MAXIMUM: dict[str, int] = {"keep_free_bytes": 2**63 - 1}
"""Settings that may pass :data:`LARGEST` (a byte count fits SQLite's and the OS's
signed 64 bits)."""
MINIMUM: dict[str, int] = {
    "lexical_candidates": 1,
    "dense_candidates": 1,
    "delta_depth": 1,
}
"""Whole-number settings that need more than the 0 every count may be: fusion and the
Delta reranker need candidates."""


def load_ingest_settings(paths: Paths) -> IngestSettings:
    """Defaults overridden by the ``[ingest]`` table of the config file."""
    return _load(paths)[1]


def load_settings(paths: Paths) -> Settings:
    """Defaults overridden by the ``[search]`` table of the config file, if there is one."""
    return _load(paths)[0]


def _load(paths: Paths) -> tuple[Settings, IngestSettings]:
    """Both tables, both checked whichever one a command reads: a mistake in the file
    is named by the first command that reads it, not by a later search."""
    config = read_config(paths)
    settings = Settings(**_validated(paths, config, "search", Settings))
    if settings.profile is not None:
        _check_profile(paths, settings.profile)
    return settings, IngestSettings(**_validated(paths, config, "ingest", IngestSettings))


def read_config(paths: Paths) -> dict[str, Any]:
    """The config file as TOML, its tables checked for shape: a typo such as ``[serach]``
    or ``search = 5`` is an error here, not a file silently ignored."""
    file = paths.config_file
    if not file.exists():
        return {}
    try:
        text = file.read_bytes().decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {file}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{file} is not UTF-8 text (byte {exc.start} is not): save it as UTF-8"
        ) from exc
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{file} is not valid TOML: {exc}") from exc
    except RecursionError:  # tomllib recurses once per nesting level
        raise ConfigError(
            f"{file} nests arrays or tables too deeply to read; a medsearch setting is a"
            " number, a string or a flat list"
        ) from None
    for name, value in config.items():
        if name not in TABLES:
            raise ConfigError(
                f"{file}: unknown table [{name}]{_closest(name, TABLES, '[{}]')}; the tables"
                " are [search], [ingest], [profiles.NAME] and [keys]"
            )
        if not isinstance(value, dict):
            raise ConfigError(
                f"{file}: {name} must be a table ([{name}] on a line of its own, its"
                f" settings below it), not {name} = {_shown(value)}"
            )
    return config


def _validated(
    paths: Paths, config: dict[str, Any], name: str, settings: type[Any]
) -> dict[str, Any]:
    """The ``[name]`` table, each key a field of the ``settings`` dataclass, each value
    of that field's type and in its range. Checked when the file is read, so a wrong
    value is named at once rather than failing (or being ignored) deep in a search."""
    table: dict[str, Any] = config.get(name, {})
    hints = get_type_hints(settings)
    known = [f.name for f in fields(settings)]
    for key, value in table.items():
        if key not in hints:
            raise ConfigError(
                f"{paths.config_file}: unknown setting {key!r} in [{name}]"
                f"{_closest(key, known, '{}')}; the settings are {', '.join(known)}"
            )
        problem = _problem(key, value, hints[key])
        if problem is not None:
            raise ConfigError(
                f"{paths.config_file}: [{name}] {key} must be {problem},"
                f" not {key} = {_shown(value)}"
            )
    return table


def _problem(key: str, value: Any, hint: Any) -> str | None:
    """What ``value`` should be for ``key`` (typed ``hint``), or None when it is fine."""
    kinds = [t for t in get_args(hint) if t is not type(None)] or [hint]
    kind = kinds[0]
    if kind is bool:
        return None if isinstance(value, bool) else "true or false"
    if kind is int or kind is float:
        least, most = MINIMUM.get(key, 0), MAXIMUM.get(key, LARGEST)
        what = "a whole number" if kind is int else "a number"
        number = isinstance(value, int) or (kind is float and isinstance(value, float))
        if (
            isinstance(value, bool)
            or not number
            or not math.isfinite(value)  # nan compares false with everything
            or not least <= value <= most
        ):
            return f"{what} from {least} to {most:,}"
        return None
    if not isinstance(value, str):
        return "a string" + (f": {_listed(CHOICES[key])}" if key in CHOICES else "")
    if key in CHOICES and value not in CHOICES[key]:
        return _listed(CHOICES[key])
    if key == "device":
        return _device_problem(value)
    return None


def _device_problem(value: str) -> str | None:
    from medsearch.errors import ModelError
    from medsearch.models.device import resolve_device

    try:  # every accelerator "present": only the form is checked, not this machine
        resolve_device(value, cuda_available=True, mps_available=True)
    except ModelError:
        return '"auto", "cpu", "cuda", "cuda:N", "cuda:N,M" or "mps"'
    return None


def _check_profile(paths: Paths, name: str) -> None:
    from medsearch.models.profiles import all_profiles

    known = list(all_profiles(paths))
    if name not in known:
        raise ConfigError(
            f"{paths.config_file}: [search] profile {_shown(name)} is not a model profile"
            f"{_closest(name, known, '{}')}; the profiles are {', '.join(known)}"
            " (add your own as [profiles.NAME])"
        )


def _closest(name: str, known: Sequence[str], form: str) -> str:
    match = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" (did you mean {form.format(match[0])}?)" if match else ""


def _listed(choices: Sequence[str]) -> str:
    quoted = [f'"{c}"' for c in choices]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def _shown(value: Any) -> str:
    """A value as it was written in the file (TOML, not Python)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "a table"
    return str(value)
