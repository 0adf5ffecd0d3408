"""Typed settings, layered: defaults, then ``config.toml`` in the data home.

Each field says why it has its default. The file is TOML with a ``[search]`` table; model
profiles live in ``[profiles.NAME]`` tables (read by :mod:`medsearch.models.profiles`) and
key bindings in ``[keys]`` (read by the TUI).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields
from typing import Any

from medsearch.errors import UsageError
from medsearch.paths import Paths


@dataclass(frozen=True)
class Settings:
    profile: str | None = None
    """Model profile; None picks medcpt when cached, else the offline minilm profile."""

    device: str = "auto"
    """auto picks cuda, then mps, then cpu."""

    lexical_candidates: int = 1000
    """Lexical top-N fed to fusion. Measured (BENCHMARKS.md, issue 10): hybrid nDCG@10 on
    SciFact is flat from 50 to 1000 (0.7196-0.7212) and Recall@100 from 200 up; at 1M
    documents top-300 costs what top-1000 does (tantivy scores every match of the
    multi-field query either way), so the deeper list, safer on a 40M corpus, is kept."""

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

    rerank: str = "auto"
    """auto (CPU: Delta over the top 500, then the cross-encoder on the head in the
    background; GPU: the cross-encoder over the top 100), delta, cross or none."""

    delta_depth: int = 500
    """First-stage candidates the Delta reranker reorders (the paper's 500: ~tens of ms)."""

    rerank_int8: bool | None = None
    """Dynamic int8 cross-encoder: None = on a CPU (~1.5-2x faster here), never on a GPU."""


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


def load_ingest_settings(paths: Paths) -> IngestSettings:
    """Defaults overridden by the ``[ingest]`` table of the config file."""
    table = _table(paths, "ingest", {f.name for f in fields(IngestSettings)})
    value = table.get("keep_free_bytes", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UsageError(
            f"[ingest] keep_free_bytes in {paths.config_file} must be a whole number of"
            f" bytes, 0 or more (e.g. 20_000_000_000), not {value!r}"
        )
    delete = table.get("delete_downloads", False)
    if not isinstance(delete, bool):
        raise UsageError(
            f"[ingest] delete_downloads in {paths.config_file} must be true or false,"
            f" not {delete!r}"
        )
    minutes = table.get("cpu_encode_minutes", IngestSettings.cpu_encode_minutes)
    if not isinstance(minutes, int | float) or isinstance(minutes, bool) or minutes < 0:
        raise UsageError(
            f"[ingest] cpu_encode_minutes in {paths.config_file} must be a number of"
            f" minutes, 0 or more (e.g. 30), not {minutes!r}"
        )
    return IngestSettings(
        keep_free_bytes=value, delete_downloads=delete, cpu_encode_minutes=float(minutes)
    )


def load_settings(paths: Paths) -> Settings:
    """Defaults overridden by the ``[search]`` table of the config file, if there is one."""
    return Settings(**_table(paths, "search", {f.name for f in fields(Settings)}))


def _table(paths: Paths, name: str, known: set[str]) -> dict[str, Any]:
    """The config file's ``[name]`` table; a key no setting has is an error naming it."""
    table: dict[str, Any] = read_config(paths).get(name, {})
    unknown = set(table) - known
    if unknown:
        raise UsageError(
            f"unknown setting(s) {', '.join(sorted(unknown))} in {paths.config_file} [{name}]"
        )
    return table


def read_config(paths: Paths) -> dict[str, Any]:
    if not paths.config_file.exists():
        return {}
    try:
        return tomllib.loads(paths.config_file.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"cannot read {paths.config_file}: {exc}") from exc
