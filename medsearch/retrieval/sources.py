"""One data home's vectors and its profile's models, each opened only when first needed.

A search needs different parts for different questions: similar articles by PMID read
the stored article vectors and nothing else; query text, ``similar --text``, sentence
search and ``cite`` need the encoders; reranking needs the cross-encoder. Opening them
separately is what lets a CPU user who imported NCBI's precomputed MedCPT vectors
(``medsearch ingest --embeddings``) ask for similar articles without ever downloading a
model, while a command that does need a missing model still fails with the model
cache's clear message (:func:`medsearch.models.cache.require_model`).

The :class:`~medsearch.retrieval.searcher.Searcher` holds one :class:`HomeSources` and
keeps what it opens; nothing here caches or imports torch until a model is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from medsearch.errors import ModelError
from medsearch.paths import Paths

if TYPE_CHECKING:
    from medsearch.models.cross import CrossEncoder
    from medsearch.models.encoders import Encoder
    from medsearch.models.profiles import ModelProfile
    from medsearch.retrieval.dense import DenseSide


@dataclass(frozen=True, slots=True)
class HomeSources:
    """Where a searcher's vectors and models come from: one home, one profile, one device."""

    paths: Paths
    profile: str
    """The profile the article vectors were built with (their manifest records it)."""
    device: str = "auto"
    sentence_candidates: int | None = None
    """``[search] sentence_candidates``; None lets the encoder's device decide."""
    rerank_int8: bool | None = None

    def open_dense(self) -> DenseSide:
        """The article and sentence vectors, read-only, with no model loaded yet.

        Read-only because an ingest may be appending to these files right now (see
        :mod:`medsearch.lock`). Sentence vectors in the old layout are not searched;
        article search still works and sentence search says why.
        """
        from medsearch.index.vectors.collection import VectorCollection
        from medsearch.index.vectors.sentence_index import OldLayoutError, SentenceCollection
        from medsearch.retrieval.dense import DenseSide

        articles = VectorCollection.open(
            self.paths.vector_dir("articles"), profile=self.profile, readonly=True
        )
        sentences, why = None, None
        if (self.paths.vector_dir("sentences") / "manifest.json").exists():
            try:
                sentences = SentenceCollection.open(
                    self.paths.vector_dir("sentences"), profile=self.profile, readonly=True
                )
            except OldLayoutError as exc:
                why = exc
            except BaseException:
                articles.close()  # nobody else holds it yet
                raise
        return DenseSide(
            articles=articles,
            load_encoder=self.encoder,
            sentences=sentences,
            sentences_error=why,
            sentence_candidates=self.sentence_candidates,
        )

    def model_profile(self) -> ModelProfile:
        from medsearch.models.profiles import get_profile

        return get_profile(self.profile, self.paths)

    def encoder(self) -> Encoder:
        """The query encoder, and the article encoder on first need (a search encodes
        queries; seconds each; a missing model is a ModelError)."""
        profile = self.model_profile()
        light = self._numpy_encoder(profile)
        return light if light is not None else self._torch_encoder(profile)

    def _torch_encoder(self, profile: ModelProfile) -> Encoder:
        from medsearch.models.encoders import load_encoder

        return load_encoder(profile, device=self.device, paths=self.paths, article_now=False)

    def _numpy_encoder(self, profile: ModelProfile) -> Encoder | None:
        """On a machine's CPU, the query side in NumPy: a search that imports no torch
        (:mod:`medsearch.models.numpy_bert`); None where it cannot stand in."""
        import time

        from medsearch.models.cache import require_model
        from medsearch.models.numpy_bert import cpu_only, load_numpy_query_encoder

        if not cpu_only(self.device):
            return None
        started = time.perf_counter()
        folder = require_model(profile.query_model, self.paths, profile.name)
        light = load_numpy_query_encoder(profile, folder, lambda: self._torch_encoder(profile))
        if light is None:
            return None
        light.load_seconds = time.perf_counter() - started
        return cast("Encoder", light)  # an Encoder for the search's questions; see its doc

    def cross_available(self) -> bool:
        """Whether the profile names a cross-encoder that is on this machine (no load).

        A profile that cannot be read answers False here: reranking is optional, and
        the encoders, which every dense question needs, report the problem.
        """
        from medsearch.models.cache import locate_model

        try:
            model = self.model_profile().cross_model
        except ModelError:
            return False
        return model is not None and locate_model(model, self.paths).available

    def cross(self) -> CrossEncoder | None:
        """The profile's cross-encoder (seconds); None when the profile has none."""
        from medsearch.models.cross import load_cross_encoder

        return load_cross_encoder(
            self.model_profile(), device=self.device, paths=self.paths, quantize=self.rerank_int8
        )
