"""``medsearch mesh``: install NLM's MeSH from its XML files and look headings up."""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.errors import UsageError
from medsearch.paths import Paths


@click.group()
def mesh() -> None:
    """NLM's Medical Subject Headings: heading explosion and automatic term mapping.

    Install them with `medsearch ingest --download mesh`, or import copies of
    desc20XX.xml, supp20XX.xml and qual20XX.xml (gzipped or not) with
    `medsearch mesh import`.
    """


@mesh.command("import")
@click.argument(
    "files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@click.option("--json", "as_json", is_flag=True, help="Print the counts as JSON.")
@click.pass_context
def import_(ctx: click.Context, files: tuple[Path, ...], as_json: bool) -> None:
    """Import a descriptor file (desc20XX.xml), a supplementary file (supp20XX.xml)
    and/or a qualifier file (qual20XX.xml: the subheading tree [sh] explodes through).

    Each replaces the MeSH of its kind already installed, in one transaction: a file
    that fails leaves the installed MeSH as it was.
    """
    result = import_files(paths_of(ctx), files)
    if as_json:
        emit_json(result)
        return
    year = f"MeSH {result['year']}" if result.get("year") else "MeSH"
    click.echo(
        f"{year}: {result['descriptors']:,} descriptors, {result['tree_numbers']:,} tree"
        f" numbers, {result['terms']:,} entry terms, {result['qualifiers']:,} allowed"
        f" qualifiers, {result['supplementals']:,} supplementary concepts,"
        f" {result['actions']:,} pharmacological actions, {result['subheadings']:,}"
        f" subheadings ({result['seconds']:.1f} s)"
    )


def import_files(paths: Paths, files: tuple[Path, ...] | list[Path]) -> dict[str, Any]:
    """Import ``files`` into the home's store (under the writer lock); the counts."""
    from ingest.mesh_xml import (
        DESCRIPTOR_ROOT,
        QUALIFIER_ROOT,
        SUPPLEMENTAL_ROOT,
        mesh_kind,
        mesh_year,
        parse_mesh,
    )
    from medsearch.lock import write_lock
    from medsearch.mesh import tables
    from medsearch.store import Store

    by_kind: dict[str, Path] = {}
    for path in files:
        kind = mesh_kind(path)
        if kind in by_kind:
            raise UsageError(f"two files of one kind ({by_kind[kind].name}, {path.name}); give one")
        by_kind[kind] = path
    desc = by_kind.get(DESCRIPTOR_ROOT)
    supp = by_kind.get(SUPPLEMENTAL_ROOT)
    qual = by_kind.get(QUALIFIER_ROOT)
    year = mesh_year(desc) if desc is not None else None
    started = time.perf_counter()
    with write_lock(paths, "mesh import"), Store(paths.store) as store, store.transaction():
        counts = tables.replace(
            store.conn,
            parse_mesh(desc) if desc is not None else None,
            parse_mesh(supp) if supp is not None else None,
            year,
            parse_mesh(qual) if qual is not None else None,
        )
        for given, kind, count in (
            (desc, "descriptor", counts.descriptors),
            (supp, "supplementary", counts.supplementals),
            (qual, "qualifier", counts.subheadings),
        ):
            if given is not None and not count:  # rolls back: the installed MeSH stays
                raise UsageError(
                    f"{given}: holds no {kind} records; the installed MeSH is left as it was"
                )
        installed = tables.installed_year(store.conn)
    return {
        **asdict(counts),
        "year": installed,
        "files": [str(p) for p in files],
        "seconds": round(time.perf_counter() - started, 3),
    }


@mesh.command("show")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print the heading as JSON.")
@click.pass_context
def show(ctx: click.Context, name: str, as_json: bool) -> None:
    """A heading by name, entry term or UI: scope note, tree numbers, entry terms,
    broader and narrower headings, allowed subheadings."""
    from medsearch.mesh import tables
    from medsearch.store import Store

    paths = paths_of(ctx)
    with Store(paths.store, readonly=True) as store:
        conn = store.conn
        if tables.installed_year(conn) is None:
            raise UsageError(tables.INSTALL_HINT)
        ui = name if tables.heading(conn, name) is not None else tables.descriptor_ui(conn, name)
        found = tables.heading(conn, ui) if ui is not None else None
        if found is None:
            raise UsageError(f"no MeSH heading named {name!r}")
        info: dict[str, Any] = {
            **asdict(found),
            "broader": [{"ui": u, "name": n} for u, n in tables.broader(conn, found.ui)],
            "narrower": [{"ui": u, "name": n} for u, n in tables.narrower(conn, found.ui)],
        }
    if as_json:
        emit_json(info)
        return
    click.echo(f"{found.name} ({found.ui})  {', '.join(found.tree_numbers)}")
    if found.scope_note:
        click.echo(f"  {found.scope_note}")
    for label, items in (
        ("entry terms", list(found.terms)),
        ("broader", [b["name"] for b in info["broader"]]),
        ("narrower", [b["name"] for b in info["narrower"]]),
        ("subheadings", [f"{q.name} ({q.abbreviation})" for q in found.qualifiers]),
    ):
        if items:
            click.echo(f"  {label}: {'; '.join(items)}")
