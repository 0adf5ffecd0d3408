"""A summary of one data home: what ``stats`` prints and the TUI's status bar shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from medsearch.paths import Paths


def dir_size(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def vector_manifests(paths: Paths) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not paths.vectors.exists():
        return out
    for kind_dir in sorted(paths.vectors.iterdir()):
        manifest = kind_dir / "manifest.json"
        if manifest.exists():
            try:
                out[kind_dir.name] = json.loads(manifest.read_text())
            except (OSError, ValueError):
                out[kind_dir.name] = {"error": "unreadable manifest"}
    return out


def corpus_status(paths: Paths) -> dict[str, Any]:
    """Counts and sizes; works (with zeros) on a home that has nothing in it yet."""
    info: dict[str, Any] = {
        "home": str(paths.home),
        "articles": 0,
        "deleted": 0,
        "files": 0,
        "failed_files": 0,
    }
    if paths.store.exists():
        from medsearch.store import Store

        with Store(paths.store, readonly=True) as store:
            ledger = store.ledger()
            info["articles"] = store.count()
            info["deleted"] = store.count_deleted()
            info["files"] = sum(1 for e in ledger if e.status == "done")
            info["failed_files"] = sum(1 for e in ledger if e.status == "failed")
            info["store_bytes"] = store.size_bytes()
    info["lexical_index_bytes"] = dir_size(paths.lexical_index)
    vectors = vector_manifests(paths)
    for kind, manifest in vectors.items():
        info[f"{kind}_vectors"] = {
            "count": manifest.get("live", manifest.get("count")),
            "profile": manifest.get("profile"),
            "kind": manifest.get("kind"),
            "bytes": dir_size(paths.vector_dir(kind)),
        }
    return info
