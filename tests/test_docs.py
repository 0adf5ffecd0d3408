"""The documentation is checked: its examples are valid, its links lead somewhere, every
command has help, and it tells no development machine's story."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import REPO

from medsearch.cli import main
from medsearch.config import Settings, load_ingest_settings, load_settings
from medsearch.models.profiles import read_config_profiles
from medsearch.paths import Paths
from medsearch.tui.keys import SPECS

DOCS = REPO / "docs"

WRITTEN_ALONGSIDE = {
    "citations.md",
    "history.md",
    "mesh.md",
    "query-parity.md",
    "retractions.md",
    "updates-and-watches.md",
}
"""Pages that docs/index.md lists and that arrive with the features they document."""


def pages() -> list[Path]:
    return [REPO / "README.md", REPO / "BENCHMARKS.md", *sorted(DOCS.glob("*.md"))]


def test_configuration_example_is_accepted_by_every_reader(tmp_path: Path) -> None:
    page = (DOCS / "configuration.md").read_text()
    block = re.search(r"```toml\n(.*?)```", page, re.S)
    assert block is not None
    config = tomllib.loads(block.group(1))
    Settings(**config["search"])
    (tmp_path / "config.toml").write_text(block.group(1))
    assert load_settings(Paths(tmp_path)) == Settings(**config["search"])  # validated
    assert load_ingest_settings(Paths(tmp_path)).delete_downloads is True
    assert set(read_config_profiles(tmp_path / "config.toml")) == {"biolinkbert"}
    assert set(config["keys"]) <= {spec.id for spec in SPECS}


def test_readme_names_the_two_setup_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert "scripts/start" in readme and ".ci/run" in readme
    assert (REPO / "scripts" / "start").exists() and (REPO / ".ci" / "run").exists()


def anchors(page: Path) -> set[str]:
    """The fragment ids a Markdown renderer gives the page's headings (GitHub's rule)."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", page.read_text(), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_leads_to_a_file_and_heading(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if linked.parent == DOCS and linked.name in WRITTEN_ALONGSIDE and not linked.exists():
            continue
        if not linked.exists() or (fragment and fragment not in anchors(linked)):
            broken.append(target)
    assert broken == []


def test_docs_index_lists_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    listed = set(re.findall(r"\]\(([\w-]+\.md)\)", index))
    assert {p.name for p in DOCS.glob("*.md")} - {"index.md"} <= listed
    assert listed >= WRITTEN_ALONGSIDE


@pytest.mark.parametrize("page", pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_docs_name_no_development_machine_paths_or_work_sessions(page: Path) -> None:
    text = page.read_text()
    assert re.findall(r"(?:^|[\s`(])/(?:work|tmp)/\S*", text) == []
    assert re.findall(r"\b(?:session|issue)s? \d+", text, re.I) == []


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    for name, command in group.commands.items():
        out.append((*prefix, name))
        if isinstance(command, click.Group):
            out.extend(all_commands(command, (*prefix, name)))
    return out


@pytest.mark.parametrize("command", all_commands(main), ids=" ".join)
def test_every_command_has_help_text(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(main, [*command, "--help"])
    assert result.exit_code == 0
    usage, _, body = result.output.partition("\n\n")
    assert usage.startswith("Usage:") and len(body.strip().splitlines()[0]) > 10
