"""A writer killed between the store's commit and the index's (issue 40): the store
lists the unit's PMIDs; readers say the index is out of step and leave out, from the
hits and from the count, what the index holds and the store does not; every writer
mends it when it opens the home, `update` with nothing new included."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from httpserver import serve
from update_site import baseline

from medsearch.cli import main
from medsearch.paths import Paths
from medsearch.store import Store


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def test_readers_say_so_and_update_with_nothing_new_mends_the_index(tmp_path: Path) -> None:
    root, home = tmp_path / "site", tmp_path / "home"
    assert cli(home, "ingest", str(baseline(root)), "--no-encode", "--jobs", "0")[0] == 0
    assert cli(home, "search", "statin[ti]", "--count")[1].strip() == "2"  # PMIDs 1 and 3
    with Store(Paths(home).store) as store, store.transaction():  # a unit the index lacks
        store.delete([3])
        store.unindexed.mark([3])

    code, out, err = cli(home, "search", "statin[ti]", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert [h["pmid"] for h in found["hits"]] == [1] and found["total"] == 1
    assert any("out of step" in note for note in found["notes"])
    code, out, err = cli(home, "search", "statin[ti]", "--count")
    assert (code, out.strip()) == (0, "1"), err  # the whole set read, not only one hit
    assert [line for line in err.splitlines() if "out of step" in line] == [
        "note: the lexical index is out of step with the store for 1 PMIDs (an ingest or"
        " update was stopped between its two commits, or is running): hits without a stored"
        " record are left out; the next `medsearch ingest` or `update` mends it"
    ]
    code, out, err = cli(home, "search", "3[pmid]", "--count")
    assert (code, out.strip()) == (0, "0"), err

    (root / "pubmed" / "updatefiles").mkdir()
    with serve(root) as server:  # the mirror has nothing new
        code, out, err = cli(
            home, "update", "--mirror", server.url + "pubmed/", "--no-encode", "--jobs", "0"
        )
    assert code == 0, err
    assert "up to date" in out
    with Store(Paths(home).store, readonly=True) as store:
        assert store.unindexed.count() == 0
    code, out, err = cli(home, "search", "statin[ti]", "--count")
    assert (code, out.strip()) == (0, "1") and "out of step" not in err


def test_a_ranked_count_leaves_out_every_match_the_store_lost_not_only_the_hits_shown(
    tmp_path: Path,
) -> None:
    """Plain words count the articles holding every word; one the store lost is taken
    out of that count although it is not among the hits fetched (-k 1)."""
    root, home = tmp_path / "site", tmp_path / "home"
    assert cli(home, "ingest", str(baseline(root)), "--no-encode", "--jobs", "0")[0] == 0
    before = json.loads(cli(home, "search", "statin", "--mode", "lexical", "--json")[1])
    assert before["total"] == 2
    second = before["hits"][1]["pmid"]
    with Store(Paths(home).store) as store, store.transaction():
        store.delete([second])
        store.unindexed.mark([second])
    code, out, err = cli(home, "search", "statin", "--mode", "lexical", "-k", "1", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert [h["pmid"] for h in found["hits"]] != [second] and found["total"] == 1
    note = next(n for n in found["notes"] if "out of step" in n)
    assert "upper bound" not in note
    assert cli(home, "search", "statin", "--count")[1].strip() == "1"
