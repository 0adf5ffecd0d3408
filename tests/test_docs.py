"""The documentation is checked: README examples are valid, every command has help."""

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


def test_readme_config_example_is_accepted_by_every_reader(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```toml\n(.*?)```", readme, re.S)
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
