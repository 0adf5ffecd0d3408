"""``medsearch models list|check|download``: see, test and fetch model profiles.

Thin commands over :mod:`medsearch.models`: domain errors become one clear line and a
non-zero exit. torch and transformers are imported only by ``check`` (and by nothing at
module import), so ``medsearch --help`` stays fast.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

import click

from medsearch.commands.common import fail
from medsearch.errors import MedsearchError
from medsearch.paths import Paths

CHECK_TEXT = "EGFR mutations and response to gefitinib in non-small cell lung cancer"


def _paths() -> Paths:
    """The data home the main group resolved (``ctx.obj``), or the default one."""
    ctx = click.get_current_context()
    obj = ctx.find_object(Paths)
    return obj if obj is not None else Paths.resolve()


@contextmanager
def _domain_errors() -> Iterator[None]:
    """A :class:`MedsearchError` becomes the CLI's one line and exit code, as elsewhere
    (also when this group is invoked on its own, as the tests do)."""
    try:
        yield
    except MedsearchError as error:
        fail(str(error), error.exit_code)


def human_size(size: int) -> str:
    """Decimal units, as disk sizes are usually quoted (91.6 MB for minilm)."""
    units = ("B", "KB", "MB", "GB", "TB")
    value, index = float(size), 0
    while value >= 1000 and index < len(units) - 1:
        value, index = value / 1000, index + 1
    return f"{size} B" if index == 0 else f"{value:.1f} {units[index]}"


@click.group(name="models")
def models() -> None:
    """List, check and download the model profiles used for dense search."""


@models.command(name="list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def list_profiles(as_json: bool) -> None:
    """Show each profile, whether it works offline, where from and its size on disk."""
    from medsearch.models.profiles import all_profiles, profile_availability, resolve_profile

    paths = _paths()
    with _domain_errors():
        profiles = all_profiles(paths)
        rows = [(p, profile_availability(p, paths)) for p in profiles.values()]
        try:
            default: str | None = resolve_profile(None, paths).name
        except MedsearchError:
            default = None
    if as_json:
        payload = {
            "default": default,
            "profiles": [
                {
                    **profile.to_dict(),
                    "available": avail.available,
                    "where": avail.where,
                    "size_bytes": avail.size_bytes,
                    "missing": list(avail.missing),
                }
                for profile, avail in rows
            ],
        }
        click.echo(json.dumps(payload, indent=2))
        return
    width = max(len(p.name) for p, _ in rows) + 2
    click.echo(f"  {'profile':<{width}}{'offline':<9}{'size':>10}  where / description")
    for profile, avail in rows:
        mark = "*" if profile.name == default else " "
        status = "yes" if avail.available else "no"
        size = human_size(avail.size_bytes) if avail.available else "-"
        click.echo(f"{mark} {profile.name:<{width}}{status:<9}{size:>10}  {avail.where}")
        if profile.description:
            click.echo(f"  {'':<{width}}{'':<9}{'':>10}  {profile.description}")
    if default is None:
        click.echo("no profile works offline: run `medsearch models download medcpt`")
    else:
        click.echo(f"* default: {default}")


@models.command(name="check")
@click.argument("name", required=False)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda[:N] or mps.")
def check_profile(name: str | None, device: str) -> None:
    """Load a profile's models and encode one sentence (default profile if NAME is omitted)."""
    from medsearch.models.profiles import resolve_profile

    paths = _paths()
    with _domain_errors():
        profile = resolve_profile(name, paths)
        from medsearch.models.cross import load_cross_encoder
        from medsearch.models.encoders import load_encoder

        started = time.perf_counter()
        encoder = load_encoder(profile, device=device, paths=paths)
        loaded = time.perf_counter()
        vector = encoder.encode_queries([CHECK_TEXT])
        encoded = time.perf_counter()
        click.echo(f"profile   {profile.name}")
        click.echo(f"device    {encoder.device} ({encoder.dtype})")
        click.echo(f"dim       {encoder.dim}")
        click.echo(
            f"lengths   query {encoder.query_max_length}, article {encoder.article_max_length}"
        )
        click.echo(f"load      {loaded - started:.2f} s")
        click.echo(f"encode    {(encoded - loaded) * 1000:.1f} ms for one query")
        click.echo(f"norm      {float((vector[0] ** 2).sum() ** 0.5):.3f}")
        cross = load_cross_encoder(profile, device=device, paths=paths)
        if cross is None:
            click.echo("reranker  none in this profile")
            return
        start = time.perf_counter()
        score = cross.score_pairs(CHECK_TEXT, [("Gefitinib in lung cancer", CHECK_TEXT)])
        took = time.perf_counter() - start
        kind = "int8" if cross.quantized else cross.dtype
        click.echo(f"reranker  {kind}, {took * 1000:.1f} ms per pair, score {float(score[0]):.3f}")


@models.command(name="download")
@click.argument("name")
def download_profile(name: str) -> None:
    """Fetch a profile's models into the data home's model cache (needs the network)."""
    from medsearch.models.cache import download_model
    from medsearch.models.profiles import get_profile

    paths = _paths()
    with _domain_errors():
        profile = get_profile(name, paths)
        for ref in profile.model_refs:
            click.echo(f"{ref} ...")
            folder = download_model(ref, paths)
            click.echo(f"{ref}: {folder}")
    click.echo(f"profile {profile.name} is ready for offline use")
