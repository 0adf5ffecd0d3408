"""``medsearch update``: the one command a timer runs each day.

Fetch NCBI's update files the ledger lacks (resumable, MD5-checked), apply them in
order, encode what changed where the home has vectors, run every watch, print the
digest. Exit 0 when done, 1 when a file failed (the line names it), 3 when another
process holds the data home ("already running"), so overlapping timers never pile up.
Each run appends what it did to ``<home>/update.log``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from medsearch.commands.common import emit_json, paths_of
from medsearch.errors import BusyError, MedsearchError
from medsearch.paths import Paths

if TYPE_CHECKING:
    from ingest.clock import StageClock
    from ingest.download import RemoteFile
    from ingest.pipeline import Ingestor
    from ingest.summary import IngestSummary
    from ingest.update import UpdatePlan
    from medsearch.progress import Progress
    from medsearch.watches.runner import RunReport


def log_line(paths: Paths, text: str) -> None:
    """Append one line to ``update.log`` (a run from a timer has nobody watching)."""
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    try:
        with paths.update_log.open("a", encoding="utf-8") as log:
            log.write(f"{stamp} {text}\n")
    except OSError:
        pass  # the log is a courtesy: a run that did its work is not failed by it


@click.command()
@click.option("--mirror", default=None, help="Base URL instead of NCBI's (its pubmed/ folder).")
@click.option(
    "--connections",
    type=click.IntRange(min=1, max=8),
    default=None,
    help="Files fetched at once (default 2).",
)
@click.option("--no-encode", is_flag=True, help="Lexical only: leave encoding for later.")
@click.option(
    "--device",
    default="auto",
    show_default=True,
    help="auto, cpu, cuda, cuda:N or mps (auto on a CPU encodes within the CPU guard).",
)
@click.option(
    "--baseline",
    "move_baseline",
    is_flag=True,
    help="Move to the newer annual baseline the mirror lists (then apply its update files).",
)
@click.option(
    "--quiet", is_flag=True, help="Print only the digest, or nothing when nothing is new."
)
@click.option(
    "--exec",
    "exec_cmd",
    default=None,
    metavar="CMD",
    help="Pipe each watch's digest with news to CMD (e.g. a mail command).",
)
@click.option(
    "--print-timer",
    is_flag=True,
    help="Print a systemd user timer, a cron line and a launchd plist; installs nothing.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    help="Parser processes (default: as ingest; 0: parse in-process).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the update and digest as JSON.")
@click.pass_context
def update(
    ctx: click.Context,
    mirror: str | None,
    connections: int | None,
    no_encode: bool,
    device: str,
    move_baseline: bool,
    quiet: bool,
    exec_cmd: str | None,
    print_timer: bool,
    jobs: int | None,
    as_json: bool,
) -> None:
    """Apply NCBI's new daily update files, encode them, run every watch, print a digest.

    \b
    Examples:
      medsearch update
      medsearch update --quiet --exec 'mail -s "PubMed watches" me@example.org'
      medsearch update --print-timer
    """
    paths = paths_of(ctx)
    if print_timer:
        from medsearch.schedule import timer_text

        click.echo(timer_text(paths.home), nl=False)
        return
    paths = paths.ensure()
    from ingest.clock import StageClock
    from ingest.summary import IngestSummary
    from medsearch.lock import write_lock

    clock = StageClock(IngestSummary())
    try:
        with write_lock(paths, "update"):
            plan, stopped, report = run_update(
                paths,
                clock,
                mirror=mirror,
                connections=connections,
                encode=not no_encode,
                device=device,
                move_baseline=move_baseline,
                jobs=jobs,
                quiet=quiet or as_json,
            )
    except BusyError as exc:
        log_line(paths, f"already running: {exc}")
        busy = BusyError(f"already running: {exc}")
        if as_json:
            emit_json(_failed_json(clock, busy))
        raise busy from None
    except MedsearchError as exc:
        log_line(paths, f"failed: {exc}")
        if as_json:
            emit_json(_failed_json(clock, exc))
        raise
    except BaseException as exc:  # Ctrl-C, a kill by the timer, a bug: the log says so
        log_line(paths, f"stopped: {type(exc).__name__} {exc}".rstrip())
        if as_json and isinstance(exc, (Exception, KeyboardInterrupt)):
            emit_json(_failed_json(clock, exc))
        raise
    clock.stop()
    summary = clock.summary
    failed = stopped or _first_failure(summary)
    if exec_cmd and report.news:
        from medsearch.watches.runner import pipe_digests

        report = _with_exec(report, pipe_digests(report, exec_cmd))
    log_line(paths, _log_text(plan, summary, report, failed))
    if as_json:
        emit_json(_json(plan, clock, report, failed))
    else:
        _print(plan, summary, report, quiet=quiet, failed=failed is not None)
    for problem in report.exec_failures:
        click.echo(f"medsearch: warning: {problem}", err=True)
    if failed is not None:
        raise failed


def run_update(
    paths: Paths,
    clock: StageClock,
    *,
    mirror: str | None,
    connections: int | None,
    encode: bool,
    device: str,
    move_baseline: bool,
    jobs: int | None,
    quiet: bool,
) -> tuple[UpdatePlan, BaseException | None, RunReport]:
    """Plan, fetch and apply, encode, run the watches (the caller holds the lock).
    Returns the plan, what stopped the download if anything did, and the watches' run."""
    from ingest.download import DEFAULT_MIRROR
    from ingest.download_ahead import CONNECTIONS
    from ingest.download_run import check_space, ingested_files
    from ingest.pipeline import Ingestor
    from ingest.run import default_jobs
    from ingest.update import plan_update
    from medsearch.commands.progress import cli_progress
    from medsearch.config import load_ingest_settings
    from medsearch.watches.runner import run_watches

    connections = connections or CONNECTIONS
    done = ingested_files(paths)
    with clock.stage("download"):
        plan = plan_update(done, mirror=mirror or DEFAULT_MIRROR, move_baseline=move_baseline)
    wanted = [*plan.baseline, *plan.files]
    stopped: BaseException | None = None
    summary = clock.summary
    settings = load_ingest_settings(paths)
    with cli_progress(enabled=not quiet) as progress:
        if wanted:
            dest = paths.downloads / ("baseline" if plan.baseline else "updates")
            check_space(
                paths,
                wanted,
                dest,
                encode=encode,
                ingested=done,
                keep=not settings.delete_downloads,
                connections=connections,
            )
            with clock.stage("prepare"):
                ing = Ingestor(
                    paths, jobs=default_jobs() if jobs is None else jobs, progress=progress
                )
            with ing:
                stopped = _apply(ing, plan, paths, progress, clock, connections)
                if encode and summary.ingested:
                    _encode(paths, ing, device, progress, clock)
        else:  # nothing new: still mend what a stopped run left (an ingest would)
            from ingest.lexical_sync import repair

            with clock.stage("prepare"):
                repair(paths, progress)
        with clock.stage("watches"):
            report = run_watches(paths)
    return plan, stopped, report


def _apply(
    ing: Ingestor,
    plan: UpdatePlan,
    paths: Paths,
    progress: Progress,
    clock: StageClock,
    connections: int,
) -> BaseException | None:
    """The new baseline's files (into downloads/baseline), then the update files."""
    from ingest.download_run import download_and_ingest
    from medsearch.config import load_ingest_settings

    delete = load_ingest_settings(paths).delete_downloads
    batches: tuple[tuple[str, list[RemoteFile]], ...] = (
        ("baseline", list(plan.baseline)),
        ("updates", list(plan.files)),
    )
    for folder, files in batches:
        if not files:
            continue
        stopped = download_and_ingest(
            ing,
            [],
            files,
            paths.downloads / folder,
            progress,
            clock,
            delete=delete,
            connections=connections,
        )
        if stopped is not None or not clock.summary.ok:
            return stopped
    return None


def _encode(
    paths: Paths, ing: Ingestor, device: str, progress: Progress, clock: StageClock
) -> None:
    """Encode what changed, when the home has vectors to keep in step (a lexical-only
    home stays lexical: its first encode is ``medsearch ingest``'s, under the CPU guard)."""
    from ingest.encode_stage import recorded_profile, run_vectors_stage

    if recorded_profile(paths) is None:
        clock.summary.notes.append(
            "this home has no vectors: lexical search only (`medsearch ingest` encodes)"
        )
        return
    with clock.stage("vectors"):
        notes, encoded = run_vectors_stage(
            paths,
            ing.store,
            profile=None,
            device=device,
            index_factory=None,
            embeddings=None,
            encode=True,
            progress=progress,
        )
    clock.summary.notes.extend(notes)
    clock.summary.encoded = encoded


def _first_failure(summary: IngestSummary) -> BaseException | None:
    from medsearch.commands.ingest_clock import IngestFailed

    if summary.ok:
        return None
    path, error = summary.failures[0]
    return IngestFailed(f"{Path(path).name} failed: {error}; nothing from it was applied")


def _with_exec(report: RunReport, failures: tuple[str, ...]) -> RunReport:
    import dataclasses

    return dataclasses.replace(report, exec_failures=failures)


def _applied_text(summary: IngestSummary) -> str:
    n = summary.ingested
    return (
        f"applied {n} file{'s' * (n != 1)}: {summary.added:,} added, {summary.replaced:,}"
        f" replaced, {summary.deleted:,} deleted"
    )


def _log_text(
    plan: UpdatePlan, summary: IngestSummary, report: RunReport, failed: BaseException | None
) -> str:
    parts = [_applied_text(summary), f"watches: {report.new} new"]
    if plan.offer is not None:
        parts.append(f"baseline {plan.offer.year} available")
    if failed is not None:
        parts.append(f"failed: {failed}")
    return "; ".join(parts) + f" ({summary.seconds:.1f} s)"


def _print(
    plan: UpdatePlan, summary: IngestSummary, report: RunReport, *, quiet: bool, failed: bool
) -> None:
    from medsearch.watches.runner import digest_text

    digest = digest_text(report, only_new=quiet)
    if quiet:
        news = [plan.offer.message()] if plan.offer is not None else []
        text = "\n".join(news) + ("\n" if news else "") + digest
        if text:
            click.echo(text, nl=False)
        return
    if summary.files or summary.failures:
        click.echo(_applied_text(summary) + f" in {summary.seconds:.1f} s")
    elif not failed and not plan.baseline and not plan.files:  # not when a download failed
        click.echo(f"up to date: no new {plan.year} update files on the mirror")
    for note in summary.notes:
        click.echo(f"note: {note}")
    if plan.offer is not None:
        click.echo(plan.offer.message())
    for note in report.notes:
        click.echo(f"note: {note}")
    if digest:
        click.echo(digest, nl=False)


def _failed_json(clock: StageClock, error: BaseException) -> dict[str, object]:
    """``--json``'s object for a run that stopped before its digest (no baseline, a
    mirror that cannot be reached, a busy home): ingest's shape with the error, where it
    stopped, and update's own keys empty, so a script reads one shape whatever happened."""
    from medsearch.commands.ingest_clock import json_report

    clock.stop()
    out = json_report(clock, error, stopped_in=clock.running)
    out.update(year=None, baseline_offer=None, digest=None)
    return out


def _json(
    plan: UpdatePlan, clock: StageClock, report: RunReport, failed: BaseException | None
) -> dict[str, object]:
    from medsearch.commands.ingest_clock import json_report

    out = json_report(clock, failed)
    out["year"] = plan.year
    out["baseline_offer"] = (
        None
        if plan.offer is None
        else {"year": plan.offer.year, "files": len(plan.offer.files), "bytes": plan.offer.bytes}
    )
    out["digest"] = report.to_dict()
    return out
