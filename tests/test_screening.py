"""Screening projects: import and dedup, decisions on disk, ranking, the stopping rules,
the metrics as asreview-insights computes them, two reviewers and PRISMA counts."""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from medsearch.screening import agreement, exports, metrics, prisma, readers, stopping
from medsearch.screening.dedup import counts, find_duplicates
from medsearch.screening.features import tfidf
from medsearch.screening.items import Item
from medsearch.screening.model import fit
from medsearch.screening.project import Project, ProjectError, Strategy
from medsearch.screening.session import Session
from medsearch.screening.simulate import random_priors, simulate

FIXTURES = Path(__file__).parent / "fixtures" / "screening"


# -- readers --------------------------------------------------------------------------------


def test_ris_keeps_abstract_authors_journal_and_the_pubmed_url_as_pmid() -> None:
    items = readers.read_file(FIXTURES / "records.ris")
    assert [i.title[:20] for i in items] == [
        "Statins for the prim",
        "Exercise training fo",
        "Statins for the Prim",
    ]
    first = items[0]
    assert first.authors == ("Taylor, Fiona", "Huffman, Mark D")
    assert first.journal == "Cochrane Database Syst Rev"
    assert first.doi == "10.1002/14651858.CD004816.pub5"
    assert first.abstract.startswith("Reducing high blood")
    assert items[1].pmid == 30695817


def test_nbib_reads_mesh_keywords_and_wrapped_abstracts() -> None:
    items = readers.read_file(FIXTURES / "records.nbib")
    heart = items[0]
    assert heart.pmid == 30695817
    assert heart.abstract.endswith("in people with heart failure.")
    assert heart.mesh == ("Heart Failure", "Exercise Therapy")
    assert heart.keywords == ("rehabilitation",)
    assert heart.year == 2019


def test_bibtex_reads_authors_abstract_and_keywords() -> None:
    items = readers.read_file(FIXTURES / "records.bib")
    assert items[0].authors == ("Doe, John", "Roe, Richard")
    assert items[0].title == "Aspirin and Bleeding: A Cohort"
    assert items[0].keywords == ("aspirin", "bleeding")
    assert items[1].year == 2021


def test_asreview_csv_reads_labels_and_row_ids() -> None:
    items = readers.read_file(FIXTURES / "labelled.csv")
    assert len(items) == 10
    assert [i.label for i in items[:3]] == [1, 0, 1]
    assert items[9].row == 10
    assert readers.labelled(items)


def test_a_file_of_no_known_format_is_one_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("just some words\n")
    with pytest.raises(Exception, match="not a file medsearch screens"):
        readers.read_file(bad)


# -- dedup ----------------------------------------------------------------------------------


def test_duplicates_by_pmid_doi_and_title_year_author_hand_made() -> None:
    ris = readers.read_file(FIXTURES / "records.ris")
    nbib = readers.read_file(FIXTURES / "records.nbib")
    bib = readers.read_file(FIXTURES / "records.bib")
    everything = [*ris, *nbib, *bib]
    found = find_duplicates(everything)
    # ris[2] repeats ris[0] (title folded, same year, surname Taylor); nbib[0] repeats
    # ris[1] by PMID; bib[0] repeats nbib[1] by DOI, whatever its case
    assert [(d.index, d.of, d.key) for d in found] == [
        (2, 0, "title_year_author"),
        (3, 1, "pmid"),
        (5, 4, "doi"),
    ]
    assert counts(found) == {"pmid": 1, "doi": 1, "title_year_author": 1}


def test_a_project_lists_its_duplicates_and_restores_one(tmp_path: Path) -> None:
    with Project.create(tmp_path, "p") as project:
        added = project.add(readers.read_file(FIXTURES / "records.ris"), Strategy("file"))
        assert added.added == 2
        assert project.count() == 2
        (dup,) = project.duplicates()
        assert dup[1:3] == (1, "title_year_author")
        again = project.add(readers.read_file(FIXTURES / "records.nbib"), Strategy("nbib"))
        assert [d.key for d in again.duplicates] == ["pmid"]  # against the records in
        assert project.count() == 3
        project.restore_duplicate(dup[0])
        assert project.count() == 4
        assert len(project.duplicates()) == 1


# -- decisions ------------------------------------------------------------------------------


def _project(tmp_path: Path, name: str = "p") -> Project:
    project = Project.create(tmp_path, name)
    project.add(readers.read_file(FIXTURES / "labelled.csv"), Strategy("file labelled.csv"))
    return project


def test_decisions_undo_and_reviewers_are_kept_apart(tmp_path: Path) -> None:
    with _project(tmp_path) as project:
        project.decide(1, "include")
        project.decide(2, "exclude", reason="wrong population")
        project.decide(2, "include", reviewer="b")
        assert {r: d.decision for r, d in project.decisions().items()} == {
            1: "include",
            2: "exclude",
        }
        undone = project.undo()
        assert undone is not None and undone.record_id == 2
        assert set(project.decisions()) == {1}
        assert project.decisions("b")[2].decision == "include"
        assert project.reviewers() == ["reviewer1", "b"]
        with pytest.raises(Exception, match="a reason goes with an exclusion"):
            project.decide(3, "include", reason="x")


def test_a_decision_is_on_disk_when_decide_returns(tmp_path: Path) -> None:
    """Another connection (a process started after a kill -9) sees it at once."""
    with _project(tmp_path) as project:
        project.decide(4, "exclude", reason="wrong outcome")
        other = sqlite3.connect(project.path)
        row = other.execute("SELECT record_id, decision, reason FROM decisions").fetchone()
        other.close()
    assert row == (4, "exclude", "wrong outcome")
    mode = sqlite3.connect(tmp_path / "p.sqlite").execute("PRAGMA journal_mode").fetchone()
    assert mode == ("wal",)


def test_opening_a_missing_project_names_the_ones_there(tmp_path: Path) -> None:
    _project(tmp_path, "one").close()
    with pytest.raises(ProjectError, match="projects: one"):
        Project.open(tmp_path, "two")
    with pytest.raises(ProjectError, match="exists already"):
        Project.create(tmp_path, "one")


def test_search_within_the_project(tmp_path: Path) -> None:
    with _project(tmp_path) as project:
        assert project.search("statin LDL") == [1, 6, 10]
        assert project.search("knee") == [2]


def test_exports_carry_the_labels_back(tmp_path: Path) -> None:
    with _project(tmp_path) as project:
        project.decide(1, "include")
        project.decide(2, "exclude", reason="wrong population")
        ris = exports.to_ris(project)
        back = readers.read_ris(ris)
        assert [b.label for b in back[:3]] == [1, 0, None]
        asr = readers.read_csv(exports.to_asreview_csv(project))
        assert [a.label for a in asr[:3]] == [1, 0, None]
        table = exports.to_csv(project).splitlines()
        assert table[2].endswith("exclude,wrong population,reviewer1,")


# -- ranking --------------------------------------------------------------------------------


def test_the_model_ranks_like_records_first() -> None:
    items = readers.read_file(FIXTURES / "labelled.csv")
    matrix = tfidf([i.text for i in items], min_df=1).matrix
    fitted = fit("logistic", matrix, np.array([0, 1]), np.array([1, 0]))
    order = np.argsort(-fitted.scores(matrix))
    assert set(order[:4].tolist()) == {0, 2, 5, 9}  # the statin records


def test_the_session_orders_by_strategy_then_by_the_model(tmp_path: Path) -> None:
    with _project(tmp_path) as project:
        session = Session(project)
        assert session.next() == 1  # the strategy's (the file's) order
        session.decide(1, "include")
        session.decide(2, "exclude", reason="wrong population")
        assert session.ranker.wait(30)
        assert session.ranker.modelled
        assert session.next() in (3, 6, 10)
        session.undo()
        assert session.decision(2) is None
        session.close()


# -- stopping -------------------------------------------------------------------------------


def test_hypergeometric_cdf_matches_scipy_stats() -> None:
    from scipy.stats import hypergeom

    for k, m, big_k, n in [(0, 100, 5, 20), (2, 500, 30, 60), (1, 50, 3, 49), (4, 80, 10, 15)]:
        expected = hypergeom.cdf(k, m, big_k, n)
        assert stopping._hypergeom_cdf(k, m, big_k, n) == pytest.approx(expected, rel=1e-9)


def test_p_value_is_the_minimum_over_every_window() -> None:
    """Only the largest window per k is tested; brute force over all windows agrees."""
    from scipy.stats import hypergeom

    rng = np.random.default_rng(3)
    for _ in range(5):
        seq = (rng.random(120) < np.linspace(0.5, 0.0, 120)).astype(int)
        total, target = 400, 0.95
        r = int(seq.sum())
        best = 1.0
        for n in range(1, len(seq) + 1):
            k = int(seq[len(seq) - n :].sum())
            big_k = int(np.floor(r / target)) + 1 - (r - k)
            urn = total - len(seq) + n
            p = 0.0 if big_k > urn else float(hypergeom.cdf(k, urn, big_k, n))
            best = min(best, p)
        assert stopping.p_value(seq, total, target) == pytest.approx(best, abs=1e-12)


def test_the_rule_stops_after_a_long_run_of_irrelevant_records() -> None:
    seq = np.zeros(1000, dtype=int)
    seq[:30] = 1
    early = stopping.estimate(seq[:60], 1000)
    assert not early.can_stop and early.more_to_screen > 0
    after = stopping.estimate(seq[: 60 + early.more_to_screen], 1000)
    assert after.can_stop and after.more_to_screen == 0
    before = stopping.estimate(seq[: 60 + early.more_to_screen - 1], 1000)
    assert not before.can_stop
    assert "screen" in early.line and "can stop" in after.line


def test_knee_method_on_a_worked_gain_curve() -> None:
    seq = np.zeros(400, dtype=int)
    seq[:20] = 1
    stop, at = stopping.knee(seq)
    assert at == 20
    # slope before 20/20, after (20-20+1)/380: ratio 380 >= 156 - 20
    assert stop
    assert stopping.knee(seq[:100]) == (False, 20)  # fewer than 150 screened


# -- metrics (asreview-insights' definitions) ---------------------------------------------


def test_metrics_on_worked_examples() -> None:
    assert metrics.loss([1, 1, 0, 0]) == 0.0
    assert metrics.loss([0, 0, 1, 1]) == 1.0
    assert metrics.loss([1, 0, 1, 0]) == pytest.approx(0.25)  # (7 - 6) / (7 - 3)
    assert metrics.wss([1, 1, 0, 0], 0.95) == pytest.approx(0.5)
    assert metrics.recall_at([0, 1, 0, 0, 0, 0, 0, 0, 0, 1], 0.10) == 0.0
    assert metrics.recall_at([0, 1, 0, 0, 0, 0, 0, 0, 0, 1], 0.20) == 0.5
    assert metrics.last_relevant([0, 1, 0, 1, 0]) == 4


def test_a_simulation_finds_the_relevant_records_first() -> None:
    items = readers.read_file(FIXTURES / "labelled.csv")
    labels = np.array([i.label for i in items])
    matrix = tfidf([i.text for i in items], min_df=1).matrix
    priors = random_priors(labels, included=1, excluded=1, seed=1)
    assert labels[priors].tolist() == [1, 0]
    run = simulate(matrix, labels, priors)
    assert run.order[:2] == priors
    assert sorted(run.order) == list(range(10))
    assert metrics.last_relevant(run.labels) <= 6
    data = run.to_dict([i.row or 0 for i in items])
    assert data["order"][0] == items[priors[0]].row
    assert set(data) >= {"wss@95", "recall@10%", "loss", "last_relevant", "stopping"}


# -- two reviewers and PRISMA ---------------------------------------------------------------


def test_kappa_matches_a_worked_example() -> None:
    # 10 pairs: 4 both include, 4 both exclude, 2 disagree; p_o 0.8, p_e 0.5 -> 0.6
    pairs = [("include", "include")] * 4 + [("exclude", "exclude")] * 4
    pairs += [("include", "exclude"), ("exclude", "include")]
    assert agreement.kappa(pairs) == pytest.approx(0.6)


def test_conflicts_and_imported_decisions(tmp_path: Path) -> None:
    with _project(tmp_path, "a") as mine, _project(tmp_path, "b") as theirs:
        for record, decision in [(1, "include"), (2, "exclude"), (3, "include")]:
            mine.decide(record, decision, reviewer="ann")
        for record, decision in [(1, "include"), (2, "include"), (3, "include")]:
            theirs.decide(record, decision, reviewer="bob")
        assert agreement.import_decisions(mine, theirs, "bob") == 3
        result = agreement.compare(mine, "ann", "bob")
        assert result.both == 3 and result.agreed == 2
        assert result.conflicts == ((2, "exclude", "include"),)
        assert json.loads(json.dumps(result.to_dict()))["reviewers"] == ["ann", "bob"]


def test_prisma_counts_against_a_hand_made_flow(tmp_path: Path) -> None:
    with Project.create(tmp_path, "p") as project:
        project.add(readers.read_file(FIXTURES / "records.ris"), Strategy("file records.ris"))
        project.add(readers.read_file(FIXTURES / "records.nbib"), Strategy("file records.nbib"))
        project.add(readers.read_file(FIXTURES / "records.bib"), Strategy("file records.bib"))
        # 3 + 2 + 2 identified; duplicates: RIS title (1), nbib PMID (1), bib DOI (1)
        ids = project.ids_in_rank_order()
        assert len(ids) == 4
        project.decide(ids[0], "include")
        project.decide(ids[1], "exclude", reason="wrong population")
        project.decide(ids[2], "exclude", reason="wrong population", reviewer="b")
        project.decide(ids[3], "maybe")
        c = prisma.counts(project)
        assert c.identified_total == 7 and c.duplicates == 3
        assert (c.screened, c.excluded, c.included, c.maybe, c.unscreened) == (4, 2, 1, 1, 0)
        assert c.reasons == (("wrong population", 2),)
        md, table, diagram = prisma.write(project, tmp_path / "out")
        assert "| Duplicates removed | 3 |" in md.read_text()
        assert "excluded_reason,wrong population,2" in table.read_text()
        svg = diagram.read_text()
        assert svg.startswith("<svg") and "Duplicates (n = 3)" in svg
        assert "Records excluded (n = 2)" in svg


def test_item_text_is_what_the_model_reads() -> None:
    item = Item(title="T", abstract="A", keywords=("k1", "k2"))
    assert item.text == "T A k1 k2"
    assert list(itertools.islice(iter(item.text.split()), 2)) == ["T", "A"]
