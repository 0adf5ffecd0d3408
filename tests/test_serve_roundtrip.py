"""The round trip: efetch's ``PubmedArticleSet`` of every record in ../shared/data/pubmed,
ingested into a new home, gives back identical ``show --json`` for every record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.serve.access import ensure_token
from medsearch.serve.app import build_app
from medsearch.serve.state import Warm
from medsearch.store import Store
from tests.conftest import shared_data


def ingest(home: Path, *inputs: Path) -> None:
    result = CliRunner().invoke(
        main, ["--home", str(home), "ingest", *map(str, inputs), "--no-encode", "--jobs", "0"]
    )
    assert result.exit_code == 0, result.output


def records(home: Path) -> dict[int, dict[str, object]]:
    """Every stored record as ``show --json`` prints it (Article.to_dict)."""
    with Store(Paths(home).store, readonly=True) as store:
        pmids = [int(p) for (p,) in store.conn.execute("SELECT pmid FROM records ORDER BY pmid")]
        return {p: a.to_dict() for p, a in store.get_many(pmids).items()}


@pytest.mark.thorough  # two ingests of ~1,000 real records and an efetch of all: ~10 s
def test_efetch_xml_of_every_shared_record_reingests_identically(tmp_path: Path) -> None:
    folder = shared_data("pubmed")
    files = sorted(p for p in folder.rglob("*") if p.name.endswith((".xml", ".xml.gz")))
    first, second = tmp_path / "first", tmp_path / "second"
    ingest(first, *files)
    original = records(first)
    assert len(original) > 900
    paths = Paths(first)
    warm = Warm(paths, load=False)
    token = ensure_token(paths)
    try:
        with TestClient(build_app(warm, token)) as client:
            answer = client.post(
                "/entrez/eutils/efetch.fcgi",
                data={"db": "pubmed", "id": ",".join(map(str, original)), "retmode": "xml"},
                headers={"Authorization": f"Bearer {token}"},
            )
    finally:
        warm.close()
    assert answer.status_code == 200
    fetched = tmp_path / "efetch.xml"
    fetched.write_bytes(answer.content)
    ingest(second, fetched)
    again = records(second)
    assert again.keys() == original.keys()
    differ = [p for p in original if again[p] != original[p]]
    if differ:
        first_diff = {"pmid": differ[0], "was": original[differ[0]], "now": again[differ[0]]}
        pytest.fail(f"{len(differ)} records differ; the first: {json.dumps(first_diff)[:2000]}")
    pmid = next(iter(original))
    shown = CliRunner().invoke(main, ["--home", str(second), "show", str(pmid), "--json"])
    assert json.loads(shown.stdout) == original[pmid]
