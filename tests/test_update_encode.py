"""`medsearch update` on a home with vectors encodes what the day changed: the new
articles and the revised text, not the rest; a deleted article's vectors go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from httpserver import serve
from tiny_models import build_tiny_models, ingest_and_encode, write_tiny_config
from update_site import baseline, day_one

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store


@pytest.mark.thorough
def test_an_update_encodes_only_the_new_and_revised_articles(tmp_path: Path) -> None:
    root, paths = tmp_path / "site", Paths(tmp_path / "home")
    write_tiny_config(paths, build_tiny_models(tmp_path / "tiny"))
    assert ingest_and_encode(paths, [baseline(root)]) == 58
    day_one(root)
    with serve(root) as server:
        mirror = server.url + "pubmed/"
        args = ["update", "--mirror", mirror, "--device", "cpu", "--jobs", "0", "--json"]
        result = CliRunner().invoke(main, ["--home", str(paths.home), *args])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["encoded"] == 3  # 10 and 11 are new, 2's text was revised
    with Store(paths.store, readonly=True) as store:
        encoded = {
            p for (p,) in store.conn.execute("SELECT pmid FROM encoded WHERE kind = 'articles'")
        }
    assert {2, 10, 11} <= encoded and 3 not in encoded
