"""Retrieval end to end: ingest -> encode (tiny real BERT models) -> Searcher -> CLI JSON."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_models import (
    TinyModels,
    build_tiny_models,
    ingest_and_encode,
    vectors_stage,
    write_tiny_config,
)

from benchmarks.synth import article_xml, pubmed_file
from ingest.pipeline import Ingestor
from medsearch.cli import main
from medsearch.errors import (
    IndexMismatchError,
    NotFoundError,
    QuerySyntaxError,
    VectorsMissingError,
)
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.sentence_index import SentenceCollection
from medsearch.paths import Paths
from medsearch.records import Filters
from medsearch.retrieval import neighbours
from medsearch.retrieval.cite import suggest
from medsearch.retrieval.query_text import LONG_TEXT
from medsearch.retrieval.searcher import Searcher, open_searcher
from medsearch.store import Store

TOPICS = [
    (
        "Interleukin-6 drives the cytokine storm in COVID-19",
        "IL-6 levels rise. Tocilizumab blocks IL-6 signalling.",
    ),
    (
        "Metformin and the risk of type 2 diabetes",
        "Metformin lowers glucose. It is first-line therapy.",
    ),
    (
        "BRCA1 mutations in hereditary breast cancer",
        "BRCA1 carriers have high risk. Screening helps.",
    ),
    (
        "Statins lower LDL cholesterol in hypertension trials",
        "Statins reduce events. LDL fell by a third.",
    ),
    ("CRISPR screens of T-cell exhaustion", "CRISPR finds regulators. T cells recover function."),
    (
        "Alpha-synuclein aggregation in Parkinson disease",
        "Aggregates spread. Neurons die in the substantia nigra.",
    ),
    ("Sepsis mortality and early antibiotics", "Early antibiotics save lives. Each hour counts."),
    ("Amyloid beta in Alzheimer disease", "Amyloid plaques accumulate. Antibodies clear plaques."),
]


def build_corpus(root: Path) -> Path:
    folder = root / "xml"
    folder.mkdir(parents=True)
    articles = [
        article_xml(1000 + i, title, abstract, year=2000 + 3 * i)
        for i, (title, abstract) in enumerate(TOPICS)
    ]
    pubmed_file(folder / "pubmed26n0001.xml", articles)
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def home(tmp_path: Path, tiny: TinyModels) -> Paths:
    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    ingest_and_encode(paths, [build_corpus(tmp_path)])
    return paths


@pytest.fixture
def searcher(home: Paths) -> Searcher:
    s = open_searcher(home, device="cpu", load=True)
    yield s
    s.close()


def test_a_loaded_searcher_keeps_the_garbage_collector_off_its_models(home: Paths) -> None:
    gc.unfreeze()
    with open_searcher(home, device="cpu", load=True) as s:
        # frozen, so a full collection does not walk the model (~75 ms, a few queries apart)
        assert gc.get_freeze_count() > 10_000
        model = s.encoder("dense search")
        assert all(o is not model for o in gc.get_objects(generation=2))
    assert gc.get_freeze_count() == 0  # closed: its objects can be collected again


def test_hybrid_is_the_default_with_vectors_and_hits_say_where_they_came_from(
    searcher: Searcher,
) -> None:
    assert searcher.default_mode == "hybrid" and searcher.profile_name == "tiny"
    assert searcher.index_kind == "flat"
    result = searcher.search("IL-6 cytokine storm", k=5)
    assert result.mode == "hybrid"
    assert result.hits[0].pmid == 1000
    assert "lexical" in result.hits[0].sources and "dense" in result.hits[0].sources
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    # plain words: the count is the articles holding every word; others are marked
    assert result.total == 1
    assert [h.all_words for h in result.hits] == [True] + [False] * 4
    assert all(set(h.sources) <= {"lexical", "dense"} for h in result.hits)


def test_dense_mode_ranks_by_inner_product_of_the_stored_vectors(
    searcher: Searcher, home: Paths
) -> None:
    result = searcher.search("metformin glucose", mode="dense", k=8)
    assert searcher.dense is not None
    q = searcher.dense.encode_query("metformin glucose")[0]
    with VectorCollection.open(home.vector_dir("articles")) as coll:
        ids = np.array([1000 + i for i in range(len(TOPICS))], dtype=np.int64)
        expected = ids[np.argsort(-(coll.get(ids) @ q), kind="stable")]
    assert [h.pmid for h in result.hits] == list(expected)


def test_filters_apply_to_the_dense_side_too(searcher: Searcher) -> None:
    f = Filters(year_from=2010, year_to=2015)
    for mode in ("dense", "hybrid"):
        result = searcher.search("disease", mode=mode, k=8, filters=f)
        years = [h.year for h in result.hits]
        assert years and all(y is not None and 2010 <= y <= 2015 for y in years)


def test_rerank_orders_the_head_by_cross_encoder_scores(searcher: Searcher) -> None:
    first = searcher.search("amyloid plaques", k=6)
    reranked = searcher.rerank(first, head=4)
    assert reranked.reranked
    head_scores = [h.score for h in reranked.hits[:4]]
    assert head_scores == sorted(head_scores, reverse=True)
    assert {h.pmid for h in reranked.hits[:4]} == {h.pmid for h in first.hits[:4]}
    assert [h.pmid for h in reranked.hits[4:]] == [h.pmid for h in first.hits[4:]]


def test_a_cancelled_rerank_returns_the_first_stage_unchanged(searcher: Searcher) -> None:
    first = searcher.search("amyloid", k=6)
    assert searcher.rerank(first, is_cancelled=lambda: True) == first


def test_pasted_prose_that_is_not_a_query_is_searched_as_plain_words(
    searcher: Searcher,
) -> None:
    prose = "Metformin lowers glucose (as first-line therapy in type 2 diabetes [12]"
    result = searcher.search(prose, mode="lexical", k=3)
    assert result.hits[0].pmid == 1001
    assert any(n.startswith("read as plain words") and "[12]" in n for n in result.notes)
    with pytest.raises(QuerySyntaxError, match="unclosed parenthesis"):
        searcher.search("(metformin glucose", mode="lexical")  # typed: the error helps


def test_a_text_past_the_query_encoder_is_read_as_an_article(searcher: Searcher) -> None:
    """A pasted abstract (over 64 query tokens) gets the article encoder, as similar
    articles do; a short query keeps the query encoder."""
    long_text = " ".join(f"{title}. {abstract}" for title, abstract in TOPICS[:4])
    assert searcher.encoder("test").query_tokens(long_text) > 64
    dense = searcher.search(long_text, mode="dense", k=5)
    like_article = neighbours.similar_text(searcher, "", long_text, k=5)
    assert [h.pmid for h in dense.hits] == [h.pmid for h in like_article.hits]
    assert LONG_TEXT in dense.notes
    short = searcher.search("IL-6 cytokine storm", mode="dense", k=5)
    assert searcher.dense is not None
    by_query = searcher.dense.search_vector(searcher.dense.encode_query("IL-6 cytokine storm"), 5)
    assert [h.pmid for h in short.hits] == [p for p, _ in by_query]
    assert LONG_TEXT not in short.notes


def test_similar_articles_exclude_the_article_itself(searcher: Searcher) -> None:
    result = neighbours.similar(searcher, 1003, k=5)
    assert result.hits and 1003 not in [h.pmid for h in result.hits]
    with pytest.raises(NotFoundError):
        neighbours.similar(searcher, 424242)


def test_each_question_loads_only_the_models_it_needs(home: Paths) -> None:
    """Stored vectors need no model; text needs the encoders; reranking the cross-encoder."""
    with open_searcher(home, device="cpu") as searcher:
        assert searcher.dense is None and searcher.cross is None  # opening loads nothing
        similar = neighbours.similar(searcher, 1000, k=3)
        assert similar.hits and searcher.dense is not None
        assert searcher.device is None and searcher.cross is None  # vectors only
        lexical = searcher.search("metformin", mode="lexical", k=3)
        assert lexical.hits and searcher.device is None and searcher.cross is None
        hybrid = searcher.search("metformin", k=3)
        assert hybrid.mode == "hybrid" and searcher.device == "cpu" and searcher.cross is None
        assert searcher.rerank(hybrid).reranked and searcher.cross is not None


def test_a_profile_whose_models_changed_size_is_caught_when_they_load(home: Paths) -> None:
    """The vectors open without a model, so their size is checked when the encoders load."""
    home.config_file.write_text(
        '[profiles.tiny]\nquery_model = "sentence-transformers/all-MiniLM-L6-v2"\n'
        'symmetric = true\npooling = "mean"\nnormalize = true\n'
    )
    with open_searcher(home, device="cpu") as searcher:
        assert neighbours.similar(searcher, 1000, k=3).hits  # stored vectors: still fine
        with pytest.raises(IndexMismatchError, match=r"32 dimensions.*'tiny' gives 384"):
            searcher.search("metformin", mode="dense")


def test_similar_sentences_carry_the_sentence_and_its_context(searcher: Searcher) -> None:
    result = neighbours.sentences(searcher, "tocilizumab blocks signalling", k=3)
    assert result.hits
    sentence = result.hits[0].sentence
    assert sentence is not None and sentence.text
    assert sentence.sentence_id // 1000 == result.hits[0].pmid


def test_cite_strips_markers_and_gives_evidence(searcher: Searcher) -> None:
    paragraph = (
        "Blocking IL-6 with tocilizumab calms the cytokine storm [3,4]. "
        "Statins lower LDL cholesterol (Smith et al., 2019). We used R."
    )
    result = suggest(searcher, paragraph, k=3, before=2020)
    texts = [c.citance.text for c in result.citances]
    assert len(texts) == 2 and "[3,4]" not in texts[0] and "Smith" not in texts[1]
    for item in result.citances:
        assert all(h.year is not None and h.year < 2020 for h in item.result.hits)
        assert all(h.evidence for h in item.result.hits)


def test_searching_with_another_profile_is_a_clear_error(home: Paths) -> None:
    with pytest.raises(IndexMismatchError, match=r"'tiny'.*'minilm'"):
        open_searcher(home, profile="minilm")


def test_a_lexical_only_corpus_refuses_dense_mode_clearly(tmp_path: Path) -> None:
    paths = Paths(tmp_path / "lex")
    with Ingestor(paths, jobs=0) as ing:
        ing.run([build_corpus(tmp_path / "c")])
    with open_searcher(paths) as s:
        assert s.default_mode == "lexical"
        assert s.search("metformin").hits[0].pmid == 1001
        with pytest.raises(VectorsMissingError, match=r"needs article vectors"):
            s.search("metformin", mode="dense")


def test_reencoding_only_touches_changed_articles_and_drops_deleted(
    home: Paths, tmp_path: Path
) -> None:
    update = tmp_path / "upd"
    update.mkdir()
    pubmed_file(
        update / "pubmed26n0002.xml",
        [article_xml(1001, "Metformin and ageing", "A new abstract.", version=2)],
        deletions=[1002],
    )
    with SentenceCollection.open(home.vector_dir("sentences"), readonly=True) as sents:
        assert sents.contains(np.arange(1002 * 1000, 1003 * 1000)).any()  # before
    encoded = ingest_and_encode(home, [update], profile=None)
    assert encoded == 1
    with VectorCollection.open(home.vector_dir("articles")) as coll:
        assert len(coll) == len(TOPICS) - 1
        assert not coll.contains(np.array([1002]))[0]
    with SentenceCollection.open(home.vector_dir("sentences"), readonly=True) as sents:
        # sentence id = pmid * 1000 + position: the deleted article's sentences are gone,
        # the revised one's are there (re-encoded from its new abstract)
        assert not sents.contains(np.arange(1002 * 1000, 1003 * 1000)).any()
        assert sents.contains(np.arange(1001 * 1000, 1002 * 1000)).any()
    with Store(home.store) as store:
        n = store.conn.execute("SELECT COUNT(*) FROM encoded WHERE pmid = 1002").fetchone()[0]
        assert n == 0


# -- the command line ----------------------------------------------------------------------


def cli(home: Paths, *args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["--home", str(home.home), *args], input=input)
    return result.exit_code, result.stdout, result.stderr


def test_search_json_has_the_documented_shape(home: Paths) -> None:
    # the tiny cross-encoder's random weights tie every pair: its order is noise, so the
    # shape is checked on the fused first stage, where the one article with both words leads
    args = ["BRCA1 breast", "--json", "-k", "3", "--device", "cpu", "--no-rerank"]
    code, out, _ = cli(home, "search", *args)
    assert code == 0
    data = json.loads(out)
    assert data["query"] == "BRCA1 breast" and data["mode"] == "hybrid"
    hit = data["hits"][0]
    assert {"rank", "pmid", "title", "journal", "year", "score", "snippet"} <= set(hit)
    assert hit["pmid"] == 1002


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "999"), "PMID 999 is not in the store"),
        (("show", "abc"), "positive whole number"),
        (("similar", "999", "--device", "cpu"), "PMID 999"),
        (("search", "(IL-6", "--mode", "lexical"), "parenthes"),
        (("search", "--year", "2020:2010", "x"), "empty"),
        (("export", "1000", "999"), "999"),
    ],
)
def test_bad_input_is_one_clear_line_and_a_non_zero_exit(
    home: Paths, args: tuple[str, ...], message: str
) -> None:
    code, _, err = cli(home, *args)
    assert code != 0
    assert message in err and "Traceback" not in err
    lines = err.strip("\n").splitlines()
    if args[0] == "search" and "parenthes" in message:  # the query, a caret under the place
        assert lines[1:] == ["  (IL-6", "  ^"]
    else:
        assert len(lines) == 1


def test_cite_reads_stdin_and_prints_citances_json(home: Paths) -> None:
    code, out, _ = cli(
        home, "cite", "--json", "--device", "cpu", input="Amyloid plaques accumulate [1].\n"
    )
    assert code == 0
    data = json.loads(out)
    assert data["citances"][0]["citance"] == "Amyloid plaques accumulate."
    assert data["citances"][0]["hits"]


def test_stats_and_export(home: Paths, tmp_path: Path) -> None:
    code, out, _ = cli(home, "stats", "--json")
    stats = json.loads(out)
    assert code == 0 and stats["articles"] == len(TOPICS) and stats["files"] == 1
    assert stats["articles_vectors"]["profile"] == "tiny"
    assert stats["articles_vectors"]["kind"] == "flat"
    assert stats["articles_vectors"]["count"] == len(TOPICS)
    target = tmp_path / "refs.ris"
    code, _, _ = cli(home, "export", "1000", "1001", "--format", "ris", "-o", str(target))
    text = target.read_text()
    assert code == 0 and text.count("ER  -") == 2 and "AN  - 1000" in text


def test_similar_skips_same_title_duplicates_unless_asked(home: Paths, tmp_path: Path) -> None:
    update = tmp_path / "dup"
    update.mkdir()
    title, abstract = TOPICS[3]
    pubmed_file(update / "pubmed26n0003.xml", [article_xml(2003, title, abstract)])
    ingest_and_encode(home, [update], profile=None)
    with open_searcher(home, device="cpu") as s:
        everyone = len(TOPICS)  # k covers the whole corpus
        assert 2003 not in [h.pmid for h in neighbours.similar(s, 1003, k=everyone).hits]
        with_dups = neighbours.similar(s, 1003, k=everyone, skip_duplicates=False)
        assert 2003 in [h.pmid for h in with_dups.hits]


def test_an_interrupted_encode_resumes_without_redoing_committed_chunks(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ingest.encode_loop as loop
    import ingest.encode_readers as readers
    from medsearch.models.encoders import Encoder, Prepared

    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    with Ingestor(paths, jobs=0) as ing:
        ing.run([build_corpus(tmp_path)])
    monkeypatch.setattr(readers, "CHUNK", 2)
    monkeypatch.setattr(loop, "COMMIT_ARTICLES", 2)
    monkeypatch.setattr(loop, "COMMIT_SHARE", float("inf"))  # commit however cheap
    real = Encoder.run
    calls = []

    def interrupted_on_third_chunk(self: Encoder, prepared: Prepared, **kw: object):
        calls.append(prepared.count)
        if len(calls) == 3:  # in the device thread: the caller must still see it
            raise KeyboardInterrupt
        return real(self, prepared, **kw)  # type: ignore[arg-type]

    with monkeypatch.context() as patch, pytest.raises(KeyboardInterrupt):
        patch.setattr(Encoder, "run", interrupted_on_third_chunk)
        ingest_and_encode(paths, [])
    with VectorCollection.open(paths.vector_dir("articles")) as coll:
        assert len(coll) == 4  # two committed chunks survive
    assert ingest_and_encode(paths, []) == len(TOPICS) - 4


def test_cite_stops_between_sentences_when_cancelled(searcher: Searcher) -> None:
    paragraph = "Amyloid plaques accumulate [1]. Statins lower LDL [2]. Sepsis kills [3]."
    checks: list[int] = []

    def after_first_sentence() -> bool:
        checks.append(1)
        return len(checks) > 1

    partial = suggest(searcher, paragraph, k=2, rerank=False, is_cancelled=after_first_sentence)
    assert [c.citance.text for c in partial.citances] == ["Amyloid plaques accumulate."]
    assert suggest(searcher, paragraph, k=2, is_cancelled=lambda: True).citances == ()


def test_text_over_the_encoder_limit_is_a_clear_error(searcher: Searcher) -> None:
    from medsearch.errors import UsageError

    long_sentence = " ".join(["amyloid plaques accumulate"] * 40)  # > 64 query tokens
    with pytest.raises(UsageError, match=r"tokens and sentence search reads 64"):
        neighbours.sentences(searcher, long_sentence)
    huge = " ".join(["statin therapy lowers ldl"] * 200)  # > 512 article tokens
    with pytest.raises(UsageError, match=r"article encoder reads 512"):
        neighbours.similar_text(searcher, "A title", huge)
    assert neighbours.similar_text(searcher, "Statins", "Statins lower LDL.").hits


def test_free_text_with_bytes_that_were_not_utf8_reads_them_as_windows_1252(
    searcher: Searcher,
) -> None:
    """A Latin-1 script's argument (``caf\\xe9`` arrives as ``caf\\udce9``) is encoded,
    not refused by the tokenizer, wherever free text enters."""
    garbled, clean = "Tocilizumab blocks caf\udce9 IL-6", "Tocilizumab blocks café IL-6"
    assert (
        neighbours.sentences(searcher, garbled, k=3).hits
        == neighbours.sentences(searcher, clean, k=3).hits
    )
    assert (
        neighbours.similar_text(searcher, "Statins", garbled).hits
        == neighbours.similar_text(searcher, "Statins", clean).hits
    )
    cited = suggest(searcher, f"{garbled} [3].", k=2, rerank=False)
    assert [c.citance.text for c in cited.citances] == [f"{clean}."]


def test_a_full_disk_while_writing_vectors_is_one_clear_error(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from medsearch.errors import DiskFullError

    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    with Ingestor(paths, jobs=0) as ing:
        ing.run([build_corpus(tmp_path)])

    def no_space(self: VectorCollection, ids: object, vectors: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with (
        monkeypatch.context() as patch,
        pytest.raises(DiskFullError, match="while writing vectors"),
    ):
        patch.setattr(VectorCollection, "add", no_space)  # the disk fills up here
        ingest_and_encode(paths, [])
    assert ingest_and_encode(paths, []) == len(TOPICS)  # space freed: the next run completes


def test_a_store_that_cannot_grow_while_recording_vectors_is_the_same_clear_error(
    tmp_path: Path, tiny: TinyModels
) -> None:
    """The vectors are committed, then their ``encoded`` rows do not fit in the store."""
    from medsearch.errors import DiskFullError

    paths = Paths(tmp_path / "home")
    write_tiny_config(paths, tiny)
    with Ingestor(paths, jobs=0) as ing:
        assert ing.run([build_corpus(tmp_path)]).ok
        conn = ing.store.conn  # fill the table's pages, pack them: any new row needs a page
        conn.executemany(
            "INSERT INTO encoded(pmid, kind, profile, content_hash, items) VALUES (?,?,?,?,1)",
            [(p, "zz-filler", "x" * 100, "0" * 32) for p in range(500)],
        )
        conn.execute("VACUUM")
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
        with pytest.raises(DiskFullError, match="while writing vectors"):
            vectors_stage(paths, ing.store)
    assert ingest_and_encode(paths, []) == len(TOPICS)  # a fresh connection: room again


def test_cite_takes_the_paragraph_as_arguments_and_names_the_sentences_it_skipped(
    home: Paths,
) -> None:
    """`cite 'a sentence' ...` is the paragraph (the words joined); where some sentences
    carry markers the others are not searched, and ``notes`` says which and why (the
    text output prints the same line on stderr)."""
    words = ["Amyloid plaques accumulate [1].", "We studied mice.", "Tau spreads (Lee, 2020)."]
    code, out, err = cli(home, "cite", *words, "--json", "--device", "cpu", "--no-rerank")
    assert code == 0, err
    data = json.loads(out)
    assert [c["citance"] for c in data["citances"]] == [
        "Amyloid plaques accumulate.",
        "Tau spreads.",
    ]
    assert data["skipped"] == ["We studied mice."]
    assert data["notes"] == [
        'searched the 2 sentences with a citation marker; skipped 1 without one: "We'
        ' studied mice." (--all-sentences searches every sentence)'
    ]
    code, _, err = cli(home, "cite", "words", "--file", "p.txt")
    assert code == 2 and "not both" in err
