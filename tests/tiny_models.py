"""Tiny real BERT models, built and saved with ``save_pretrained`` in well under a second.

They go through exactly the loading code the real MedCPT models use (AutoTokenizer,
AutoModel, AutoModelForSequenceClassification from a directory), so tests of vectors,
retrieval and the TUI exercise the real model layer offline. The weights are random
(seeded): the vectors mean nothing, but they are deterministic and distinct per text.

Use :func:`build_tiny_profile` directly, or the session fixture ``tiny_profile``
(register it with ``from tiny_models import tiny_profile_fixture  # noqa: F401``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from medsearch.models.profiles import ModelProfile
from medsearch.paths import Paths
from medsearch.store import Store

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
_WORD_TEXT = """
the a an of and or in on to with without for from by as at is are was were be been
not no than that this these those which who we our it its their there after before
between during under over into per high low most more less new two three one case cases
patients patient study studies trial trials cohort group groups control controls risk
cancer tumor tumour breast lung liver kidney heart brain blood cell cells gene genes
protein proteins expression mutation mutations receptor inhibitor inhibitors therapy
treatment treated dose doses drug drugs effect effects response outcome outcomes
survival mortality disease diseases infection virus viral bacterial covid sars cov
vaccine vaccination antibody antibodies immune inflammation diabetes insulin glucose
obesity hypertension stroke cardiac coronary artery pressure clinical randomized
randomised placebo analysis results methods background conclusions significant
increased decreased associated association level levels rate rates years age children
adults women men mice mouse rat model models human humans pathway signaling kinase
apoptosis growth factor factors acid dna rna sequence sequencing genome genomic
metabolic metabolism serum plasma tissue samples sample data review systematic
meta prevalence incidence diagnosis diagnostic screening imaging mri ct score scores
il tnf p53 brca1 egfr kras her2 cd4 cd8 t b hiv hcv
"""
WORDS = _WORD_TEXT.split()
SUFFIXES = ("s", "es", "ed", "ing", "ly", "al", "ic", "ion", "tion", "ity", "ment", "ous")
PUNCTUATION = tuple(".,;:()[]-/%+=<>'\"?!")


def vocabulary() -> list[str]:
    """Specials, whole words, then letters/digits and ``##`` pieces so nothing is [UNK]."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    digits = [str(d) for d in range(10)]
    pieces = [f"##{s}" for s in SUFFIXES] + [f"##{c}" for c in letters + digits]
    ordered = [*SPECIAL_TOKENS, *WORDS, *letters, *digits, *PUNCTUATION, *pieces]
    return list(dict.fromkeys(ordered))


@dataclass(frozen=True)
class TinyModels:
    root: Path
    query_dir: Path
    article_dir: Path
    cross_dir: Path
    vocab: tuple[str, ...]


def build_tiny_models(root: Path, seed: int = 0, extra_words: Sequence[str] = ()) -> TinyModels:
    """Save a query encoder, an article encoder and a cross-encoder under ``root``.

    ``extra_words``: whole words added to the vocabulary. Real abstracts otherwise fall
    apart into letters, and tokenizing a (title, abstract) pair that long, then
    truncating it, costs ~15 ms an article (a corpus of hundreds: seconds)."""
    import torch
    import transformers
    from transformers import BertConfig, BertForSequenceClassification, BertModel, BertTokenizer

    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    vocab = list(dict.fromkeys([*vocabulary(), *extra_words]))
    root.mkdir(parents=True, exist_ok=True)
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    tokenizer = BertTokenizer(vocab={token: i for i, token in enumerate(vocab)})
    dirs = {name: root / name for name in ("query", "article", "cross")}
    for offset, (name, target) in enumerate(dirs.items()):
        torch.manual_seed(seed + offset)
        config = BertConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=512,
        )
        model: BertModel | BertForSequenceClassification
        if name == "cross":
            config.num_labels = 1  # one unbounded relevance logit, like MedCPT's reranker
            model = BertForSequenceClassification(config)
        else:
            model = BertModel(config)
        model.save_pretrained(target)
        tokenizer.save_pretrained(target)
    return TinyModels(root, dirs["query"], dirs["article"], dirs["cross"], tuple(vocab))


def tiny_profile_for(models: TinyModels) -> ModelProfile:
    """A MedCPT-shaped profile (cls pooling, raw inner products, 64/512/512) on tiny models."""
    return ModelProfile(
        name="tiny",
        query_model=str(models.query_dir),
        article_model=str(models.article_dir),
        cross_model=str(models.cross_dir),
        pooling="cls",
        normalize=False,
        query_max_length=64,
        article_max_length=512,
        cross_max_length=512,
        description="tiny random BERT models for tests",
    )


def build_tiny_profile(root: Path) -> ModelProfile:
    """Build the tiny models under ``root`` and return the profile that points at them."""
    return tiny_profile_for(build_tiny_models(root))


@pytest.fixture(scope="session", name="tiny_models")
def tiny_models_fixture(tmp_path_factory: pytest.TempPathFactory) -> TinyModels:
    return build_tiny_models(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session", name="tiny_profile")
def tiny_profile_fixture(tiny_models: TinyModels) -> ModelProfile:
    return tiny_profile_for(tiny_models)


def install_in_hub_cache(cache_dir: Path, repo_id: str, source: Path) -> Path:
    """Lay ``source`` out as a Hugging Face hub cache entry for ``repo_id``.

    The layout (``models--org--name/refs/main`` + ``snapshots/<commit>/``) is what
    ``snapshot_download`` leaves behind, so hub-id lookups run exactly as after a real
    ``medsearch models download``.
    """
    import shutil

    repo = cache_dir / f"models--{repo_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True, exist_ok=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    snapshot = repo / "snapshots" / commit
    shutil.copytree(source, snapshot, dirs_exist_ok=True)
    return snapshot


def write_tiny_config(paths: Paths, models: TinyModels, *, search: str = "") -> None:
    """A ``[profiles.tiny]`` table (plus optional ``[search]`` lines) in the home's config."""
    paths.ensure()
    head = f"[search]\n{search}\n" if search else ""
    paths.config_file.write_text(
        head + "[profiles.tiny]\n"
        f'query_model = "{models.query_dir}"\n'
        f'article_model = "{models.article_dir}"\n'
        f'cross_model = "{models.cross_dir}"\n'
        'pooling = "cls"\n'
        'description = "tiny test BERT"\n'
    )


def vectors_stage(
    paths: Paths, store: Store, *, profile: str | None = "tiny"
) -> tuple[list[str], int]:
    """`medsearch ingest`'s vector stage on the CPU: (summary notes, articles encoded)."""
    from ingest.encode_stage import run_vectors_stage
    from medsearch.progress import NullProgress

    return run_vectors_stage(
        paths,
        store,
        profile=profile,
        device="cpu",
        index_factory=None,
        embeddings=None,
        encode=True,
        progress=NullProgress(),
    )


def ingest_and_encode(paths: Paths, inputs: list[Path], *, profile: str | None = "tiny") -> int:
    """The real pipeline: ingest ``inputs`` (if any), then encode with the tiny profile."""
    from ingest.pipeline import Ingestor

    with Ingestor(paths, jobs=0) as ing:
        if inputs:
            assert ing.run(inputs).ok
        return vectors_stage(paths, ing.store, profile=profile)[1]
