"""Bi-encoders: queries, sentences and articles to vectors, as a profile prescribes.

For MedCPT (DESIGN.md, "The models, exactly"): queries and sentences go through the query
encoder, truncated to 64 tokens; articles go through the article encoder as the pair
(title, abstract), truncated longest-first to 512 tokens; the vector is the [CLS] hidden
state, not normalised. A symmetric profile (minilm) runs one model for every role,
encodes an article as the single text ``title + " " + abstract``, mean-pools over the
attention mask and L2-normalises.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from medsearch.errors import ModelError
from medsearch.models.backbone import (
    Backbone,
    configure_cpu_threads,
    default_batch_size,
    input_names,
    load_backbone,
    maybe_compile,
    prepare_batches,
    run_prepared,
    tokenize,
)
from medsearch.models.batching import TokenBudget, budget_for
from medsearch.models.cache import require_model
from medsearch.models.device import detect, dtype_for, resolve_device, threads_for
from medsearch.models.host_text import HostTokenizer, Prepared, Role
from medsearch.models.profiles import ModelProfile, Pooling
from medsearch.paths import Paths


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: Pooling) -> torch.Tensor:
    """[CLS] vector, or the mean of the real (unpadded) token vectors."""
    if pooling == "cls":
        return hidden[:, 0]
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    summed = (hidden * mask).sum(dim=1)
    return summed / mask.sum(dim=1).clamp(min=1e-9)


def _forward_fn(
    pooling: Pooling, normalize: bool
) -> Callable[[torch.nn.Module, dict[str, torch.Tensor]], torch.Tensor]:
    def forward(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
        hidden = model(**inputs).last_hidden_state.float()
        vectors = pool(hidden, inputs["attention_mask"], pooling)
        if normalize:
            vectors = torch.nn.functional.normalize(vectors, p=2.0, dim=1)
        return vectors

    return forward


class Encoder:
    """One loaded profile's bi-encoder(s). Every ``encode_*`` returns float32 ``(n, dim)``.

    ``article`` may be a function that loads the article encoder: a search reads queries
    alone (MedCPT's article encoder is a second BERT-base, ~0.5 s and 440 MB more), so
    it loads on first need, when a long text is read as an article.
    """

    def __init__(
        self,
        profile: ModelProfile,
        query: Backbone,
        article: Backbone | Callable[[], Backbone],
        batch_size: int,
    ) -> None:
        dim = query.hidden_size
        self.profile = dataclasses.replace(profile, dim=dim)
        self.dim = dim
        self.device = query.device
        self.dtype = query.dtype
        self.batch_size = batch_size
        self._query = query
        self._article_backbone: Backbone | None = None
        self._load_article: Callable[[], Backbone] | None = None
        self._article_lock = threading.Lock()
        if isinstance(article, Backbone):
            self._article_backbone = self._checked(article)
        else:
            self._load_article = article
        self._forward = _forward_fn(profile.pooling, profile.normalize)
        self.load_seconds = 0.0
        """How long the query encoder took to load here (a guide to its siblings' loads)."""

    def _checked(self, article: Backbone) -> Backbone:
        if article.hidden_size != self.dim:
            raise ModelError(
                f"profile {self.profile.name!r}: query model gives {self.dim}-d vectors but"
                f" the article model gives {article.hidden_size}-d; they cannot share an index"
            )
        return article

    @property
    def _article(self) -> Backbone:
        """The article encoder, loaded now if it was left for first need."""
        with self._article_lock:
            if self._article_backbone is None:
                assert self._load_article is not None
                self._article_backbone = self._checked(self._load_article())
            return self._article_backbone

    def _loaded(self) -> tuple[Backbone, ...]:
        """The backbones loaded so far (the article one may not be)."""
        article = self._article_backbone
        return (self._query,) if article is None else (self._query, article)

    @property
    def query_max_length(self) -> int:
        """Tokens kept of a query (longer queries are truncated, by contract)."""
        return self._query.clamp_length(self.profile.query_max_length)

    @property
    def sentence_max_length(self) -> int:
        """Sentences use the query encoder and its limit."""
        return self.query_max_length

    @property
    def article_max_length(self) -> int:
        return self._article.clamp_length(self.profile.article_max_length)

    def query_tokens(self, text: str) -> int:
        """How many tokens ``text`` is for the query encoder (special tokens included)."""
        return len(tokenize(self._query, [text], None, 1 << 20)["input_ids"][0])

    def article_tokens(self, title: str, abstract: str) -> int:
        """How many tokens a (title, abstract) pair is for the article encoder."""
        second = None if self.profile.symmetric else [abstract]
        first = [f"{title} {abstract}" if self.profile.symmetric else title]
        return len(tokenize(self._article, first, second, 1 << 20)["input_ids"][0])

    @property
    def oom_limit(self) -> int | None:
        """The batch (texts) an out-of-memory back-off settled on; None if it never ran."""
        limits = [b.oom_limit for b in self._loaded() if b.oom_limit]
        return min(limits) if limits else None

    @property
    def compiled(self) -> bool:
        """Whether ``torch.compile`` wraps the models (see :func:`maybe_compile`)."""
        return any(b.compiled for b in self._loaded())

    @property
    def shares_model(self) -> bool:
        """True when one loaded model serves queries and articles (symmetric profiles)."""
        return self._load_article is None and self._query is self._article

    def _empty(self) -> np.ndarray:
        return np.zeros((0, self.dim), dtype=np.float32)

    def budget(self, max_length: int, batch_size: int | None = None) -> TokenBudget:
        """The token budget of one forward pass on this encoder's device."""
        size = batch_size or self.batch_size
        return budget_for(self.device, batch_size=size, max_length=max_length)

    def _prepare(
        self,
        role: Role,
        first: Sequence[str],
        second: Sequence[str] | None,
        max_length: int,
        batch_size: int | None,
    ) -> Prepared:
        backbone = self._backbone(role)
        if not first:
            return Prepared(role, (), 0, 0)
        features = tokenize(backbone, first, second, max_length)
        batches = prepare_batches(backbone, features, self.budget(max_length, batch_size))
        return Prepared(role, tuple(batches), len(first), sum(b.tokens for b in batches))

    def _backbone(self, role: Role) -> Backbone:
        return self._query if role == "query" else self._article

    def host_tokenizer(self, role: Role) -> HostTokenizer | None:
        """What a worker process needs to prepare this role's texts exactly as
        :meth:`prepare_sentences` / :meth:`prepare_articles` do (None: a slow tokenizer,
        which stays in this process)."""
        backbone = self._backbone(role)
        if backbone.fast is None:
            return None
        length = self.sentence_max_length if role == "query" else self.article_max_length
        return HostTokenizer(
            role=role,
            tokenizer_json=backbone.fast.to_str(),
            names=input_names(backbone.tokenizer),
            pad_id=backbone.tokenizer.pad_token_id or 0,
            max_length=length,
            budget=self.budget(length),
            joined_pairs=self.profile.symmetric,
        )

    def prepare_sentences(self, texts: Sequence[str], *, batch_size: int | None = None) -> Prepared:
        """Tokenise and pad sentences on the host (no device work; any thread)."""
        return self._prepare("query", texts, None, self.sentence_max_length, batch_size)

    def prepare_articles(
        self, pairs: Sequence[tuple[str, str]], *, batch_size: int | None = None
    ) -> Prepared:
        """Tokenise and pad (title, abstract) pairs on the host (no device work; any thread)."""
        if self.profile.symmetric:
            texts = [f"{title} {abstract}" for title, abstract in pairs]
            return self._prepare("article", texts, None, self.article_max_length, batch_size)
        titles = [title for title, _ in pairs]
        abstracts = [abstract for _, abstract in pairs]
        return self._prepare("article", titles, abstracts, self.article_max_length, batch_size)

    def run(
        self, prepared: Prepared, *, progress: Callable[[int], None] | None = None
    ) -> np.ndarray:
        """The vectors of prepared texts, float32 ``(count, dim)`` in their input order.

        ``prepared`` may come from another :class:`Encoder` of the same profile (one per
        GPU shares one tokenising pipeline): the batches are plain host arrays.
        """
        if not prepared.count:
            return self._empty()
        configured = torch.get_num_threads()
        threads = threads_for(prepared.tokens, configured) if self.device == "cpu" else configured
        if threads != configured:
            torch.set_num_threads(threads)
        try:
            vectors = run_prepared(
                self._backbone(prepared.role), prepared.batches, self._forward, progress=progress
            )
        finally:
            if threads != configured:
                torch.set_num_threads(configured)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def _run(
        self,
        role: Role,
        first: Sequence[str],
        second: Sequence[str] | None,
        max_length: int,
        batch_size: int | None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        prepared = self._prepare(role, first, second, max_length, batch_size)
        return self.run(prepared, progress=progress)

    def encode_queries(self, texts: Sequence[str], *, batch_size: int | None = None) -> np.ndarray:
        return self._run("query", texts, None, self.query_max_length, batch_size)

    def encode_sentences(
        self,
        texts: Sequence[str],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Abstract sentences, with the query encoder (the MedCPT authors' advice)."""
        return self._run("query", texts, None, self.sentence_max_length, batch_size, progress)

    def encode_articles(
        self,
        pairs: Sequence[tuple[str, str]],
        *,
        batch_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """(title, abstract) pairs; ``progress(n)`` is called with each batch's size."""
        return self.run(self.prepare_articles(pairs, batch_size=batch_size), progress=progress)


def load_runtime(device: str) -> tuple[str, str]:
    """Resolve ``device`` against this machine and pick its dtype; set CPU threads."""
    support = detect()
    resolved = resolve_device(
        device, cuda_available=support.cuda_available, mps_available=support.mps_available
    )
    if resolved == "cpu":
        configure_cpu_threads()
    return resolved, dtype_for(resolved, bf16_supported=support.bf16_supported)


def load_encoder(
    profile: ModelProfile,
    *,
    device: str = "auto",
    paths: Paths | None = None,
    batch_size: int | None = None,
    compile_model: bool | None = None,
    article_now: bool = True,
) -> Encoder:
    """Load the profile's query and article encoders (once each, even if they are one).

    ``compile_model``: see :func:`maybe_compile` (None: ``MEDSEARCH_TORCH_COMPILE`` alone).
    ``article_now=False`` leaves a separate article encoder for its first use (a search;
    a missing article model is then reported when a long text needs it).
    """
    where = paths if paths is not None else Paths.resolve()
    resolved, dtype = load_runtime(device)
    query_dir = require_model(profile.query_model, where, profile.name)
    started = time.perf_counter()
    query = maybe_compile(
        load_backbone(profile.query_model, query_dir, kind="encoder", device=resolved, dtype=dtype),
        compile_model,
    )
    load_seconds = time.perf_counter() - started

    def load_article() -> Backbone:
        article_dir = require_model(profile.article_model, where, profile.name)
        return maybe_compile(
            load_backbone(
                profile.article_model, article_dir, kind="encoder", device=resolved, dtype=dtype
            ),
            compile_model,
        )

    article: Backbone | Callable[[], Backbone]
    if profile.article_model == profile.query_model:
        article = query
    else:
        article = load_article() if article_now else load_article
    encoder = Encoder(profile, query, article, batch_size or default_batch_size(resolved))
    encoder.load_seconds = load_seconds
    return encoder
