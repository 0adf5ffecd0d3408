"""Which device and number format the models run on.

The decisions are pure functions of what the machine offers (:func:`resolve_device`,
:func:`dtype_for`, :func:`cpu_threads`), so they are tested without a GPU; only
:func:`detect` asks torch what is really there. This module does not import torch at
module level: the CLI imports it to validate ``--device`` before any model loads.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from medsearch.errors import ModelError

DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")
_CUDA_INDEXED = re.compile(r"^cuda:(\d{1,3})$")
"""At most 3 digits: a 20-digit index once reached torch as it was."""
_CUDA_LIST = re.compile(r"^cuda:\d{1,3}(,\d{1,3})+$")

# BERT-base inference gains little beyond this many CPU threads, and a search session
# keeps the UI and the lexical index busy on the other cores.
MAX_CPU_THREADS = 16


@dataclass(frozen=True, slots=True)
class DeviceSupport:
    """What torch reports about this machine's accelerators."""

    cuda_available: bool
    mps_available: bool
    bf16_supported: bool
    cuda_devices: int = 0


def resolve_device(requested: str, *, cuda_available: bool, mps_available: bool) -> str:
    """Turn a user's ``--device`` value into a torch device string.

    ``auto`` prefers CUDA, then Apple's MPS, then the CPU (the order sentence-transformers
    uses). An explicit accelerator that is not there is an error rather than a silent
    fallback: someone who asked for ``cuda`` and gets hours of CPU encoding would rather
    know at once.
    """
    value = requested.strip().lower()
    if value == "auto":
        if cuda_available:
            return "cuda"
        if mps_available:
            return "mps"
        return "cpu"
    if value == "cpu":
        return "cpu"
    if value == "cuda" or _CUDA_INDEXED.match(value) or _CUDA_LIST.match(value):
        if not cuda_available:
            raise ModelError(
                f"device {requested!r} was asked for but CUDA is not available"
                " (no NVIDIA GPU, or torch was installed without CUDA); use --device cpu"
            )
        return value.split(",")[0]
    if value == "mps":
        if not mps_available:
            raise ModelError(
                "device 'mps' was asked for but Apple's Metal backend is not available;"
                " use --device cpu"
            )
        return "mps"
    raise ModelError(
        f"unknown device {requested!r}; choose one of {', '.join(DEVICE_CHOICES)},"
        " cuda:N or cuda:N,M"
    )


def resolve_devices(requested: str, support: DeviceSupport) -> tuple[str, ...]:
    """Every device a bulk job (the vector stage) should run one encoder on.

    ``cuda`` (and ``auto`` on a CUDA machine) means every visible GPU; ``cuda:0,2``
    chooses; anything else is the single device :func:`resolve_device` gives. A single
    visible GPU stays ``cuda``, so a one-GPU machine's messages name no index.
    """
    first = resolve_device(
        requested, cuda_available=support.cuda_available, mps_available=support.mps_available
    )
    value = requested.strip().lower()
    if _CUDA_LIST.match(value):
        indices = [int(i) for i in value.removeprefix("cuda:").split(",")]
        missing = [i for i in indices if i >= max(support.cuda_devices, 1)]
        if missing:
            raise ModelError(
                f"device {requested!r}: this machine has {support.cuda_devices} visible GPU(s)"
                f" (cuda:0 to cuda:{max(support.cuda_devices - 1, 0)})"
            )
        return tuple(f"cuda:{i}" for i in dict.fromkeys(indices))
    if first == "cuda" and support.cuda_devices > 1:
        return tuple(f"cuda:{i}" for i in range(support.cuda_devices))
    return (first,)


def dtype_for(device: str, *, bf16_supported: bool) -> str:
    """The torch dtype name to run inference in on ``device``.

    Half precision roughly doubles GPU throughput with no measurable loss in retrieval
    quality; bfloat16 is preferred where the GPU has it (no overflow in long sequences).
    On the CPU we stay in float32: bf16 was measured slower on this project's CPUs (no
    AMX) and fp16 matmuls are not accelerated there.
    """
    if device.startswith("cuda"):
        return "bfloat16" if bf16_supported else "float16"
    if device == "mps":
        return "float16"
    return "float32"


def cpu_threads(cores: int | None) -> int:
    """How many intra-op threads torch should use on ``cores`` usable cores.

    Small machines use every core (encoding is the only heavy work while it runs);
    larger ones leave one core for the UI and I/O, and stop at :data:`MAX_CPU_THREADS`.
    """
    if cores is None or cores < 1:
        return 1
    if cores <= 2:
        return cores
    return min(cores - 1, MAX_CPU_THREADS)


def usable_cores() -> int:
    """Cores this process may run on (respects taskset/cgroup affinity where exposed)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def detect() -> DeviceSupport:
    """Ask torch which accelerators exist (imports torch)."""
    import torch

    cuda = bool(torch.cuda.is_available())
    mps_backend = getattr(torch.backends, "mps", None)
    mps = bool(mps_backend is not None and mps_backend.is_available())
    bf16 = bool(cuda and torch.cuda.is_bf16_supported())
    return DeviceSupport(
        cuda_available=cuda,
        mps_available=mps,
        bf16_supported=bf16,
        cuda_devices=torch.cuda.device_count() if cuda else 0,
    )


def pick_device(requested: str = "auto", support: DeviceSupport | None = None) -> str:
    """:func:`resolve_device` against the real machine (or a given ``support``)."""
    found = support if support is not None else detect()
    return resolve_device(
        requested, cuda_available=found.cuda_available, mps_available=found.mps_available
    )


INTERACTIVE_TOKENS = 128


def threads_for(total_tokens: int, configured: int) -> int:
    """Intra-op threads for one call: a single short query runs best on one thread.

    Measured here under load: a 10-token minilm query took 63 ms p50 on 2 threads and
    23 ms on 1, because OpenMP's spinning workers lose more to contention than they win
    on a matrix this small. Bulk encoding keeps every configured thread.
    """
    return 1 if total_tokens <= INTERACTIVE_TOKENS else max(1, configured)
