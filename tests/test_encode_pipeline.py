"""The pipelined vector stage: every device gets a share, results land in one collection,
and interruption, out-of-memory and reader failures keep the serial stage's guarantees.

No GPU is needed: two encoders on the CPU stand in for two GPUs (the share and merge
logic does not care what the device is), and out-of-memory is raised from a real tiny
model's forward pass, as ``torch.OutOfMemoryError`` would be on a GPU.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import wait_until
from tiny_models import WORDS, TinyModels, build_tiny_models, tiny_profile_for, write_tiny_config

import ingest.encode_loop as loop
import ingest.encode_readers as readers
import ingest.encode_stage as stage
from benchmarks.synth import article_xml, pubmed_file
from ingest.encode_pipeline import Chunk, Encoded, Rate, human_rate, run_pipeline
from ingest.pipeline import Ingestor
from medsearch.index.vectors.collection import VectorCollection
from medsearch.index.vectors.sentence_index import SentenceCollection
from medsearch.models.encoders import Encoder, Prepared, load_encoder
from medsearch.paths import Paths
from medsearch.progress import NullProgress

N_ARTICLES = 30


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("models"))


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))).capitalize() + "."


def ingested(root: Path, tiny: TinyModels) -> Paths:
    """A home with N_ARTICLES stored (no vectors yet), abstracts of 0 to 6 sentences."""
    rng = random.Random(5)
    folder = root / "xml"
    folder.mkdir(parents=True)
    xml = [
        article_xml(
            100 + i, sentence(rng), " ".join(sentence(rng) for _ in range(rng.randint(0, 6)))
        )
        for i in range(N_ARTICLES)
    ]
    pubmed_file(folder / "pubmed26n0001.xml", xml)
    paths = Paths(root / "home")
    write_tiny_config(paths, tiny)
    with Ingestor(paths, jobs=0) as ing:
        assert ing.run([folder]).ok
    return paths


def encode_with(
    paths: Paths, encoders: list[Encoder], processes: int | None = None
) -> tuple[np.ndarray, int]:
    """Run both kinds through the pipeline; the article vectors and the sentence count."""
    with Ingestor(paths, jobs=0) as ing:
        article_vectors, sentence_vectors = stage.open_collections(paths, "tiny", encoders[0].dim)
        try:
            done = NullProgress()
            loop.encode_articles(
                ing.store, encoders, article_vectors, progress=done, processes=processes
            )
            loop.encode_sentences(
                ing.store, encoders, sentence_vectors, progress=done, processes=processes
            )
        finally:
            article_vectors.close()
            sentence_vectors.close()
    with VectorCollection.open(paths.vector_dir("articles")) as articles:
        vectors = articles.get(np.arange(100, 100 + N_ARTICLES, dtype=np.int64))
    with SentenceCollection.open(paths.vector_dir("sentences")) as sentences:
        return vectors, len(sentences)


def test_two_devices_share_the_work_and_fill_the_same_collections(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    profile = tiny_profile_for(tiny)
    one = encode_with(ingested(tmp_path / "one", tiny), [load_encoder(profile, device="cpu")])

    two_encoders = [load_encoder(profile, device="cpu") for _ in range(2)]
    both_started = threading.Barrier(2, timeout=30)
    worked: dict[int, int] = {}
    real = Encoder.run

    def run(self: Encoder, prepared: Prepared, **kw: object) -> np.ndarray:
        if id(self) not in worked:
            both_started.wait()  # each "GPU" takes a chunk before either may finish
        worked[id(self)] = worked.get(id(self), 0) + 1
        return real(self, prepared, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(readers, "CHUNK", 3)
    with monkeypatch.context() as patch:
        patch.setattr(Encoder, "run", run)
        two = encode_with(ingested(tmp_path / "two", tiny), two_encoders)
    assert set(worked) == {id(e) for e in two_encoders}
    assert sum(worked.values()) == 2 * -(-N_ARTICLES // 3)  # articles + sentences chunks
    np.testing.assert_allclose(two[0], one[0], atol=1e-5)
    assert two[1] == one[1] > N_ARTICLES


def test_out_of_memory_halves_the_batch_and_the_vectors_do_not_change(
    tmp_path: Path, tiny: TinyModels
) -> None:
    profile = tiny_profile_for(tiny)
    reference = encode_with(ingested(tmp_path / "ref", tiny), [load_encoder(profile, device="cpu")])

    encoder = load_encoder(profile, device="cpu")
    largest: list[int] = []

    def small_device(_: torch.nn.Module, args: object, kwargs: dict[str, torch.Tensor]) -> None:
        rows = kwargs["input_ids"].shape[0]
        if rows > 4:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        largest.append(rows)

    backbone = encoder._article  # the article model fits 4 rows at a time
    backbone.model.register_forward_pre_hook(small_device, with_kwargs=True)
    got = encode_with(ingested(tmp_path / "oom", tiny), [encoder])
    # One batch of 30 articles: 30 -> 15 -> 7 -> 3 rows, and later batches start at 3.
    assert backbone.oom_limit == 3 and max(largest) == 3 and encoder.oom_limit == 3
    np.testing.assert_allclose(got[0], reference[0], atol=1e-5)
    assert got[1] == reference[1]


def pipeline_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("encode-")]


@pytest.mark.parametrize("threaded", [True, False])
def test_a_failure_in_the_reader_reaches_the_caller_and_stops_every_thread(
    tiny: TinyModels, threaded: bool
) -> None:
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")
    written: list[int] = []

    def chunks() -> Iterator[Chunk[int]]:
        yield Chunk(0, 0, encoder.prepare_sentences(["kras mutations in lung cancer"]))
        raise OSError("the store went away")

    with pytest.raises(OSError, match="went away"):
        run_pipeline(
            chunks, [encoder], lambda done: written.append(done.chunk.seq), threaded=threaded
        )
    assert written == [0] or (threaded and not written)  # the error may overtake chunk 0
    assert not pipeline_threads()


@pytest.mark.parametrize("threaded", [True, False])
def test_ctrl_c_in_the_writer_stops_the_pipeline(tiny: TinyModels, threaded: bool) -> None:
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")

    def chunks() -> Iterator[Chunk[int]]:
        for seq in range(100):
            yield Chunk(seq, seq, encoder.prepare_sentences([f"kras {seq}"]))

    def write(done: Encoded[int]) -> None:
        if done.chunk.seq == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_pipeline(chunks, [encoder], write, threaded=threaded)
    assert not pipeline_threads()


def test_the_device_goes_on_encoding_while_the_writer_commits(tiny: TinyModels) -> None:
    """A commit holds the writer for seconds at PubMed scale; meanwhile the device keeps
    encoding at least 8 chunks ahead (~18 s of an H200's sentence work), and nothing is
    lost or reordered."""
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")
    total = 20
    made: list[int] = []

    def chunks() -> Iterator[Chunk[int]]:
        for seq in range(total):
            made.append(seq)
            yield Chunk(seq, seq, encoder.prepare_sentences([f"kras {seq}"]))

    written: list[int] = []
    during_commit: list[int] = []

    def write(done: Encoded[int]) -> None:
        if not written:  # the first write commits, slowly
            wait_until(lambda: len(made) >= 1 + 8 + 1, 5.0)
            during_commit.append(len(made))
        written.append(done.chunk.meta)

    run_pipeline(chunks, [encoder], write, threaded=True)
    # the chunk being written + 8 encoded and waiting + 1 on the device + the reader's
    assert during_commit[0] >= 1 + 8 + 1
    assert sorted(written) == list(range(total))


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
def test_reader_processes_prepare_what_the_reader_thread_would(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spawned readers (the GPU default) fetch, split and tokenise chunk by chunk; the
    collections end up exactly as with the in-process reader."""
    profile = tiny_profile_for(tiny)
    encoder = load_encoder(profile, device="cpu")
    in_thread = encode_with(ingested(tmp_path / "thread", tiny), [encoder], processes=0)
    monkeypatch.setattr(readers, "CHUNK", 4)  # 8 chunks each: more than the window of 4
    in_workers = encode_with(ingested(tmp_path / "workers", tiny), [encoder], processes=2)
    np.testing.assert_allclose(in_workers[0], in_thread[0], atol=1e-6)
    assert in_workers[1] == in_thread[1] > N_ARTICLES


def test_the_first_big_chunk_is_cut_into_growing_pieces_so_the_device_starts_early() -> None:
    whole, rest = list(range(8_192)), list(range(8_192, 9_000))
    pieces = list(readers.ramped(iter([whole, rest]), first=1_024))
    assert [len(p) for p in pieces] == [1_024, 1_024, 2_048, 4_096, 808]
    assert [pmid for p in pieces for pmid in p] == whole + rest  # nothing lost or reordered
    assert list(readers.ramped(iter([[7, 8, 9]]), first=1_024)) == [[7, 8, 9]]
    assert list(readers.ramped(iter([]), first=1_024)) == []


@pytest.mark.thorough  # seconds of CPU; .ci/run runs it
@pytest.mark.parametrize("processes", [0, 2])
def test_ramped_chunks_store_exactly_what_whole_chunks_store(
    tmp_path: Path, tiny: TinyModels, monkeypatch: pytest.MonkeyPatch, processes: int
) -> None:
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")
    whole = encode_with(ingested(tmp_path / "whole", tiny), [encoder], processes=processes)
    sizes: list[int] = []
    ramp = readers.ramped

    def watched(batches: Iterator[list[int]], first: int) -> Iterator[list[int]]:
        for pmids in ramp(batches, first):
            sizes.append(len(pmids))
            yield pmids

    monkeypatch.setattr(readers, "ramped", watched)
    monkeypatch.setattr(readers, "CHUNK", 12)
    monkeypatch.setattr(readers, "RAMP_FIRST", 2)
    ramped = encode_with(ingested(tmp_path / "ramped", tiny), [encoder], processes=processes)
    assert sizes == [2, 2, 4, 4, 12, 6] * 2  # articles, then sentences
    np.testing.assert_allclose(ramped[0], whole[0], atol=1e-6)
    assert ramped[1] == whole[1] > N_ARTICLES


def test_a_host_tokenizer_prepares_exactly_what_the_encoder_prepares(tiny: TinyModels) -> None:
    import pickle

    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")
    rng = random.Random(3)
    texts = [sentence(rng) for _ in range(50)]
    pairs = [(sentence(rng), " ".join(sentence(rng) for _ in range(5))) for _ in range(20)]
    query, article = encoder.host_tokenizer("query"), encoder.host_tokenizer("article")
    assert query is not None and article is not None
    query = pickle.loads(pickle.dumps(query))  # as a worker process receives it
    cases = [
        (query.prepare(texts), encoder.prepare_sentences(texts)),
        (
            article.prepare([t for t, _ in pairs], [a for _, a in pairs]),
            encoder.prepare_articles(pairs),
        ),
    ]
    for got, want in cases:
        assert (got.role, got.count, got.tokens) == (want.role, want.count, want.tokens)
        assert len(got.batches) == len(want.batches)
        for a, b in zip(got.batches, want.batches, strict=True):
            np.testing.assert_array_equal(a.rows, b.rows)
            assert a.arrays.keys() == b.arrays.keys()
            for name in a.arrays:
                np.testing.assert_array_equal(a.arrays[name], b.arrays[name])
    assert query.prepare([]).count == 0


def test_reader_processes_only_where_gpus_leave_cores_free() -> None:
    assert readers.reader_processes(["cpu"], cores=16) == 0  # torch has every core
    assert readers.reader_processes(["cuda:0"], cores=16) == 8
    assert readers.reader_processes(["cuda:0", "cuda:1"], cores=6) == 3
    assert readers.reader_processes(["cuda:0"], cores=3) == 0  # too few: a reader thread


@pytest.mark.parametrize("threaded", [True, False])
def test_the_summary_says_which_part_of_the_pipeline_was_busy(
    tiny: TinyModels, threaded: bool
) -> None:
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")

    def chunks() -> Iterator[Chunk[int]]:
        for seq in range(3):
            time.sleep(0.05)  # a slow reader
            yield Chunk(seq, seq, encoder.prepare_sentences([f"kras {seq}"]))

    rate = Rate.start()
    run_pipeline(
        chunks,
        [encoder],
        lambda done: None,
        threaded=threaded,
        busy=rate.busy,
        firsts=rate.firsts,
    )
    assert set(rate.busy) == {"read", "cpu", "write"}
    assert rate.busy["read"] >= 0.15 and all(v >= 0 for v in rate.busy.values())
    rate.busy["commit"] = 1.25
    assert rate.bottleneck().startswith("read 0.")
    assert rate.bottleneck().endswith("(commits 1.2 s)")
    # the first chunk: read after the reader's first 0.05 s, encoded and written after it
    assert 0.05 <= rate.firsts["read"] <= rate.firsts["cpu"] <= rate.firsts["write"]
    assert rate.startup().startswith("first chunk read after 0.")
    assert "encoded after" in rate.startup() and "written after" in rate.startup()


def test_rates_read_at_a_glance() -> None:
    assert [human_rate(v) for v in (12, 1_234, 1_600_000, 2.5e9)] == ["12", "1.2K", "1.6M", "2.5G"]
    rate = Rate(started=0.0, articles=100, tokens=65_000)
    assert "articles/s" in rate.describe() and "tokens/s" in rate.describe()
    notes = stage.rate_notes([("articles", rate)], 12.0, ["cuda:0", "cuda:1"])
    assert notes[0] == "vector stage took 12.0 s on cuda:0, cuda:1"
    assert notes[1].startswith("encoded 100 articles in ") and "(65.0K tokens)" in notes[1]
    # how long the GPUs waited for their first chunk; a CPU takes turns, it never waits
    rate.firsts.update({"read": 0.4, "cuda:0": 1.5, "cuda:1": 1.7, "write": 1.6})
    gpus = stage.rate_notes([("articles", rate)], 12.0, ["cuda:0", "cuda:1"])[1]
    assert gpus.endswith("; first chunk read after 0.4 s, encoded after 1.5 s, written after 1.6 s")
    rate.firsts = {"read": 0.4, "cpu": 1.5, "write": 1.6}
    assert "first chunk" not in stage.rate_notes([("articles", rate)], 12.0, ["cpu"])[1]
    # sentences are counted as what they are, with the articles they came from
    sentences = Rate(started=0.0, articles=100, tokens=30_000, vectors=862)
    note = stage.rate_notes([("sentences", sentences)], 12.0, ["cpu"])[1]
    assert note.startswith("encoded 862 abstract sentences of 100 articles in ")
    # one is one: "1 article", "1 abstract sentence"
    one = Rate(started=0.0, articles=1, tokens=300, vectors=1)
    assert stage.rate_notes([("articles", one)], 1.0, ["cpu"])[1].startswith(
        "encoded 1 article in "
    )
    assert stage.rate_notes([("sentences", one)], 1.0, ["cpu"])[1].startswith(
        "encoded 1 abstract sentence of 1 article in "
    )


def test_progress_names_the_devices_and_the_token_rate(tmp_path: Path, tiny: TinyModels) -> None:
    paths = ingested(tmp_path, tiny)
    progress = NullProgress()
    encoder = load_encoder(tiny_profile_for(tiny), device="cpu")
    with Ingestor(paths, jobs=0) as ing:
        article_vectors, sentence_vectors = stage.open_collections(paths, "tiny", encoder.dim)
        try:
            rate = loop.encode_articles(ing.store, [encoder], article_vectors, progress=progress)
        finally:
            article_vectors.close()
            sentence_vectors.close()
    assert rate.articles == N_ARTICLES and rate.tokens > N_ARTICLES * 5
    shown = progress.descriptions["encode-articles"]
    assert shown.startswith("Encoding articles on cpu (") and "tokens/s)" in shown


def test_a_stopped_rate_keeps_its_own_time() -> None:
    rate = Rate.start()
    rate.add(10, 1000)
    rate.stop()
    frozen = rate.seconds
    assert rate.seconds == frozen and rate.ended is not None


@pytest.mark.gpu
def test_on_every_gpu_the_vectors_match_the_cpu_within_half_precision(
    tmp_path: Path, tiny: TinyModels
) -> None:
    """Run with ``pytest -m gpu``: pinned copies, per-thread devices, bf16 noise only."""
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    from medsearch.models.device import detect, resolve_devices

    profile = tiny_profile_for(tiny)
    cpu = encode_with(ingested(tmp_path / "cpu", tiny), [load_encoder(profile, device="cpu")])
    devices = resolve_devices("cuda", detect())
    gpus = [load_encoder(profile, device=d) for d in devices]
    got = encode_with(ingested(tmp_path / "gpu", tiny), gpus)
    np.testing.assert_allclose(got[0], cpu[0], atol=0.05, rtol=0.05)
    assert got[1] == cpu[1]


def test_commits_are_spaced_by_their_own_cost_so_a_huge_index_is_not_rewritten_constantly() -> None:
    cheap = 0.05  # a small collection: the usual cadence
    assert loop.commit_due(loop.COMMIT_ARTICLES, 1.0, cheap)
    assert loop.commit_due(10, loop.COMMIT_SECONDS + 1, cheap)
    assert not loop.commit_due(10, 5.0, cheap)
    assert not loop.commit_due(0, loop.COMMIT_SECONDS + 1, cheap)  # nothing to commit
    # a 40.9M-article home: writing its ~40 GB sentence index takes ~60 s, so the next
    # commit waits until commits would be ~10% of the stage's time
    huge = 60.0
    assert not loop.commit_due(loop.COMMIT_ARTICLES * 50, huge / loop.COMMIT_SHARE - 1, huge)
    assert loop.commit_due(loop.COMMIT_ARTICLES, huge / loop.COMMIT_SHARE, huge)
