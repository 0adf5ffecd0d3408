"""`medsearch ingest`, `stats`, `show` and `quickstart` as a user runs them."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner
from httpserver import serve

from benchmarks.synth import article_xml, pubmed_file
from medsearch.cli import main
from medsearch.paths import Paths, demo_corpus
from medsearch.store import Store


def cli(home: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home), *args])
    return result.exit_code, result.stdout, result.stderr


def baseline_site(tmp_path: Path) -> Path:
    """Two baseline files of five articles each, with their md5 files, as NCBI lays out."""
    folder = tmp_path / "site" / "pubmed" / "baseline"
    folder.mkdir(parents=True)
    for n in (1, 2):
        name = f"pubmed26n000{n}.xml.gz"
        pubmed_file(
            folder / name,
            [article_xml(n * 100 + i, f"Baseline {n} article {i}", "Text.") for i in range(5)],
            gz=True,
        )
        digest = hashlib.md5((folder / name).read_bytes()).hexdigest()
        (folder / f"{name}.md5").write_text(f"MD5({name})= {digest}\n")
    return tmp_path / "site"


def test_ingest_download_fetches_verifies_and_ingests_from_a_mirror(tmp_path: Path) -> None:
    baseline_site(tmp_path)
    home = tmp_path / "home"
    with serve(tmp_path / "site") as server:
        code, out, err = cli(
            home,
            "ingest",
            "--download",
            "baseline",
            "--limit",
            "1",
            "--mirror",
            server.url + "pubmed/",
            "--no-encode",
            "--json",
        )
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["ingested"], summary["added"]) == (1, 5)
    assert (home / "downloads" / "baseline" / "pubmed26n0001.xml.gz").exists()
    assert not (home / "downloads" / "baseline" / "pubmed26n0002.xml.gz").exists()


def test_delete_downloads_frees_the_xml_and_a_later_download_skips_what_is_ingested(
    tmp_path: Path,
) -> None:
    site = baseline_site(tmp_path)
    home = tmp_path / "home"
    downloads = home / "downloads" / "baseline"
    with serve(site) as server:
        url = server.url + "pubmed/"
        args = ("ingest", "--download", "baseline", "--mirror", url, "--no-encode", "--json")
        code, out, err = cli(home, *args, "--limit", "1", "--delete-downloads")
        assert code == 0, err
        summary = json.loads(out)
        assert summary["added"] == 5 and not list(downloads.glob("*.xml.gz"))
        assert any("deleted 1 downloaded file(s)" in note for note in summary["notes"])
        (home / "config.toml").write_text("[ingest]\ndelete_downloads = true\n")
        code, out, err = cli(home, *args)  # both files listed: only the second is fetched
        assert code == 0, err
        first = "/pubmed/baseline/pubmed26n0001.xml.gz"
        assert len(server.requests_for(first)) == 1  # the first run's, none since
    assert json.loads(out)["added"] == 5 and not list(downloads.glob("*.xml.gz"))
    with Store(home / "store.sqlite") as store:
        assert store.count() == 10


def test_a_failed_file_makes_the_exit_status_non_zero_but_keeps_the_rest(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    pubmed_file(inputs / "pubmed26n0001.xml", [article_xml(1, "Good", "Text.")])
    (inputs / "pubmed26n0002.xml.gz").write_bytes(b"\x1f\x8b\x08\x00broken")
    code, out, err = cli(tmp_path / "home", "ingest", str(inputs), "--no-encode")
    assert code == 1
    assert "pubmed26n0002.xml.gz" in out + err
    assert "1 input(s) failed" in err
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.count() == 1


def test_an_unwritable_home_is_one_clear_line(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        blocker = tmp_path / "file"
        blocker.write_text("")
        home = blocker / "home"  # a path under a regular file can never be created
    else:
        home = Path("/proc/medsearch-home")
    code, _, err = cli(home, "ingest", str(tmp_path), "--no-encode")
    assert code == 1
    assert "cannot write to the data home" in err and "Traceback" not in err


def test_missing_path_and_no_input_are_usage_errors(tmp_path: Path) -> None:
    code, _, err = cli(tmp_path / "home", "ingest")
    assert code == 2 and "give PubMed files" in err
    code, out, err = cli(tmp_path / "home", "ingest", str(tmp_path / "nope.xml"), "--no-encode")
    assert code == 1 and "no such file" in out + err


def test_stats_on_an_empty_home_reports_zeros(tmp_path: Path) -> None:
    code, out, _ = cli(tmp_path / "home", "stats", "--json")
    assert code == 0
    stats = json.loads(out)
    assert (stats["articles"], stats["deleted"], stats["files"]) == (0, 0, 0)


def test_stats_names_the_lexical_format_and_when_the_next_ingest_rebuilds_it(
    tmp_path: Path,
) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    pubmed_file(inputs / "pubmed26n0001.xml", [article_xml(7, "A title", "An abstract.")])
    home = tmp_path / "home"
    cli(home, "ingest", str(inputs), "--no-encode")
    stats = json.loads(cli(home, "stats", "--json")[1])
    assert stats["lexical_format"] == 6 and "lexical_upgrade" not in stats
    (home / "lexical" / "medsearch-lexical.json").write_text('{"schema": 2}')
    code, out, _ = cli(home, "stats")
    assert code == 0 and "next `medsearch ingest` rebuilds it" in " ".join(out.split())
    code, _, err = cli(home, "search", "title", "--json")  # refused with the fix
    assert code == 1 and "run `medsearch ingest`" in err
    cli(home, "ingest", str(inputs), "--no-encode")
    code, out, _ = cli(home, "search", "title", "--json")
    assert code == 0 and [h["pmid"] for h in json.loads(out)["hits"]] == [7]


def test_show_prints_the_full_record_as_json(tmp_path: Path) -> None:
    inputs = tmp_path / "in"
    inputs.mkdir()
    pubmed_file(inputs / "pubmed26n0001.xml", [article_xml(7, "A title", "An abstract.")])
    cli(tmp_path / "home", "ingest", str(inputs), "--no-encode")
    code, out, _ = cli(tmp_path / "home", "show", "7", "--json")
    record = json.loads(out)
    assert code == 0 and record["pmid"] == 7 and record["title"] == "A title"
    assert ["doi", "10.5555/test.7"] in record["article_ids"]


def test_search_before_any_ingest_says_how_to_ingest(tmp_path: Path) -> None:
    code, _, err = cli(tmp_path / "home", "search", "metformin")
    assert code == 1 and "medsearch ingest" in err


@pytest.mark.parametrize("query", ["COVID-19", "IL-6", '"unclosed', "p<0.05 [", "α-synuclein"])
def test_odd_queries_give_results_or_a_clear_syntax_error(tmp_path: Path, query: str) -> None:
    home = tmp_path / "home"
    code, _, _ = cli(home, "ingest", str(demo_corpus()), "--no-encode")
    assert code == 0
    code, out, err = cli(home, "search", query, "--json")
    assert "Traceback" not in err
    if code == 0:
        assert json.loads(out)["query"] == query
    else:
        assert code == 2 and err.startswith("medsearch: error:")


@pytest.mark.thorough
def test_quickstart_offline_ingests_the_demo_and_runs_a_search(tmp_path: Path) -> None:
    home = tmp_path / "home"
    code, out, err = cli(home, "quickstart", "--offline", "--no-app")
    assert code == 0, err
    assert "demo corpus" in out and "Example search" in out
    assert "ignored" not in out + err  # a first run lists nothing it set aside
    with Store(Paths(home).store) as store:
        assert store.count() == 60  # 61 demo records, one deleted by the update file
        # its last words: where the data went, then three commands that work as printed
        closing = out.rstrip().splitlines()[-3:]
        prefix = f"medsearch --home {shlex.quote(str(home))}"
        assert closing[0] == f"  {prefix} search 'IL-6 cytokine storm in COVID-19'"
        assert closing[1].startswith(f"  {prefix} show ")
        assert store.get(int(closing[1].split()[-1])).title
        assert closing[2].startswith(f"  {prefix} ")
        assert closing[2].split("#")[0].strip() == prefix
    assert f"Your data is in {home}\n" in out


def test_quickstart_next_steps_activate_the_environment_when_medsearch_is_not_on_the_path(
    tmp_path: Path,
) -> None:
    """`scripts/start` runs `.venv/bin/medsearch` without activating it: the commands it
    suggests only work after activation, so it says how; the default home needs no flag."""
    from medsearch.commands.quickstart import next_steps

    activate = tmp_path / "my venv" / "bin" / "activate"
    lines = next_steps(tmp_path / "home", 42, with_home=False, activate=activate)
    assert lines == [
        f"Your data is in {tmp_path / 'home'}",
        "Next, try:",
        f"  . '{activate}'    # puts medsearch on your PATH",
        "  medsearch search 'IL-6 cytokine storm in COVID-19'",
        "  medsearch show 42",
        "  medsearch    # the terminal UI",
    ]


def test_default_parser_processes_take_most_cores_and_leave_the_writer_some() -> None:
    from ingest.run import default_jobs

    assert [default_jobs(n) for n in (1, 2, 4, 8, 16, 32)] == [1, 2, 2, 5, 8, 8]
