"""``medsearch ingest``: PubMed files (local or downloaded) into the store and indexes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.commands.ingest_clock import IngestFailed, json_report
from medsearch.errors import UsageError
from medsearch.paths import Paths

if TYPE_CHECKING:
    from ingest.run import IngestOptions


@click.command()
@click.argument("inputs", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--download",
    type=click.Choice(["baseline", "updates", "mesh"]),
    default=None,
    help="Fetch PubMed files from NCBI (verified by md5, resumable) and ingest them; mesh:"
    " the newest MeSH descriptor and supplementary files from NLM, imported as"
    " `medsearch mesh import` does.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, help="With --download: at most N files."
)
@click.option("--mirror", default=None, help="With --download: base URL instead of NCBI's.")
@click.option(
    "--connections",
    type=click.IntRange(min=1, max=8),
    default=None,
    help="With --download: files fetched at once (default 2).",
)
@click.option(
    "--embeddings",
    "embeddings",
    default=None,
    help="Import NCBI's precomputed MedCPT article embeddings from a directory or URL.",
)
@click.option(
    "--skip-space-check",
    is_flag=True,
    help="With --download: start even if the disk looks too small for the estimate.",
)
@click.option(
    "--delete-downloads",
    is_flag=True,
    help="With --download: delete each file once it is ingested (the baseline is 51.8 GB).",
)
@click.option(
    "--citations",
    "citations",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Import NIH's Open Citation Collection (iCite's open_citation_collection.zip or"
    " .csv) into the citation graph (resumable; a second import skips it).",
)
@click.option("--no-encode", is_flag=True, help="Skip encoding: lexical search only, encode later.")
@click.option(
    "--models", "profile", default=None, help="Model profile (medcpt, minilm, or your own)."
)
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="auto, cpu, cuda (every GPU), cuda:N, cuda:N,M or mps.",
)
@click.option(
    "--index-factory",
    default=None,
    help="Faiss index factory string (overrides the automatic choice).",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    help="Parser processes (default: ~60% of the cores, 2 to 8; 0: parse in-process).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_context
def ingest(
    ctx: click.Context,
    inputs: tuple[Path, ...],
    download: str | None,
    limit: int | None,
    mirror: str | None,
    connections: int | None,
    embeddings: str | None,
    skip_space_check: bool,
    delete_downloads: bool,
    citations: Path | None,
    no_encode: bool,
    profile: str | None,
    device: str,
    index_factory: str | None,
    jobs: int | None,
    as_json: bool,
) -> None:
    """Ingest PubMed XML files (*.xml, *.xml.gz) and MEDLINE exports (.nbib), or folders.

    Files are applied in NCBI's order, by the number in their pubmedYYnNNNN names across
    folders (baseline, then update files), then other files by path; a later record for a
    PMID replaces an earlier one and DeleteCitation removes it everywhere. Other files
    (.md5, README, partial downloads, hidden files in a folder) and second copies of a file
    are set aside and listed. Re-running skips files already ingested (known by content, not
    name) and retries failed ones; an interrupted run resumes.
    """
    if download == "mesh":
        _download_mesh(ctx, inputs, mirror, as_json=as_json)
        return
    from ingest.run import IngestOptions

    options = IngestOptions(
        files=inputs,
        download="baseline" if download == "baseline" else "updates" if download else None,
        limit=limit,
        mirror=mirror,
        connections=connections,
        space_check=not skip_space_check,
        delete_downloads=True if delete_downloads else None,
        citations=citations,
        embeddings=embeddings,
        encode=not no_encode,
        profile=profile,
        device=device,
        index_factory=index_factory,
        jobs=jobs,
    )
    ingest_and_report(paths_of(ctx).ensure(), options, as_json=as_json)


def ingest_and_report(paths: Paths, options: IngestOptions, *, as_json: bool) -> None:
    """Run the ingest with the CLI's progress, then print its summary (or ``--json``'s
    object, also when the run raises); a failed input or a stopped download ends the
    command with its error after the summary."""
    from ingest.clock import StageClock
    from ingest.run import ingest as run_ingest
    from ingest.summary import IngestSummary
    from medsearch.commands.progress import cli_progress

    clock = StageClock(IngestSummary())
    try:
        report = run_ingest(paths, options, progress=cli_progress(enabled=not as_json), clock=clock)
        clock.summary.notes.extend(rerank_offer(paths, report.articles))
    except (Exception, KeyboardInterrupt) as exc:
        clock.stop()
        if as_json and not isinstance(exc, click.ClickException):
            emit_json(json_report(clock, exc, stopped_in=clock.running))
        raise
    clock.stop()
    summary = clock.summary
    stopped = report.stopped
    if stopped is None and not summary.ok:
        stopped = IngestFailed(
            f"{len(summary.failures)} input(s) failed; fix or remove them and run ingest again"
        )
    if as_json:
        emit_json(json_report(clock, stopped))
    else:
        from medsearch.commands.render import print_summary

        print_summary(summary)
    if stopped is not None:  # after the summary: what did arrive is in the store
        raise stopped


def _download_mesh(
    ctx: click.Context, inputs: tuple[Path, ...], mirror: str | None, *, as_json: bool
) -> None:
    """``--download mesh``: fetch NLM's newest MeSH (resumable) and import it."""
    from ingest.mesh_download import MESH_MIRROR, download_mesh
    from medsearch.commands.mesh import import_files

    if inputs:
        raise UsageError("--download mesh takes no input files (`medsearch mesh import` does)")
    paths = paths_of(ctx).ensure()
    year, files = download_mesh(paths.downloads / "mesh", mirror or MESH_MIRROR)
    result = import_files(paths, files)
    if as_json:
        emit_json(result)
        return
    click.echo(
        f"MeSH {year}: {result['descriptors']:,} descriptors,"
        f" {result['supplementals']:,} supplementary concepts and"
        f" {result['subheadings']:,} subheadings installed from"
        f" {', '.join(p.name for p in files)}"
    )


def rerank_offer(paths: Paths, articles: int) -> list[str]:
    """Once the corpus is big enough, say how to train the Delta reranker (or retrain it)."""
    from medsearch.rerank.loading import MIN_ARTICLES, fit

    if articles < MIN_ARTICLES:
        return []
    from medsearch.status import vector_manifests

    profile = vector_manifests(paths).get("articles", {}).get("profile")
    model = fit(paths.rerank_dir / "delta", articles, profile)
    if model.directory is None:
        return [
            f"{articles:,} articles: train the fast Delta reranker on them with"
            " `medsearch rerank train` (minutes on a CPU; searches then rerank the top 500)"
        ]
    why = "its files are unreadable" if model.unreadable is not None else model.stale
    if why is None:
        return []
    return [f"the Delta reranker no longer fits ({why}): run `medsearch rerank train`"]
