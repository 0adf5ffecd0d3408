"""The trained Delta model as NumPy arrays: scores a query's candidates without torch.

The paper's first convolution reads, for every document word, the difference between
its vector and the nearest query word's vector plus three similarity features. All of
that depends only on the (word, query) pair, so the scorer computes it once per
*distinct* word among the candidates (a few thousand for 500 abstracts) instead of once
per position (25,000), and the first convolution becomes a gather of three projected
rows per position. The result equals :class:`medsearch.training.net.DeltaNet`'s forward
(tests hold the two together); it is why 500 documents cost milliseconds on a CPU.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from medsearch.errors import MedsearchError
from medsearch.rerank.lexmatch import BM25_B, BM25_K1, IdfTable
from medsearch.rerank.text import (
    head_tokens,
    lexical_body,
    lexical_words,
    normalise,
    raw_tokens,
)

FORMAT = 1
PAD, UNK = 0, 1
LEAK = 0.3  # the paper's Leaky ReLU slope
EPS = 1e-6
LAYERS = ("conv1", "conv2", "conv3", "ff1", "ff2", "ff3")
QUERY_TERMS_MAX = 64  # lexical features read the whole query, up to this many words
BM25_MIN_IDF = 0.2


class RerankerError(MedsearchError):
    """The Delta model is missing, unreadable or does not fit this corpus."""


@dataclass(frozen=True)
class DeltaConfig:
    doc_words: int = 50
    """The paper's N: title + abstract truncated to the first 50 words."""
    query_words: int = 7
    """The paper's M: longer queries keep their first 7 distinct words."""
    dim: int = 200
    """Word-vector size (the paper's 300 costs 1.5x the time for no measured gain here)."""
    filters: int = 32
    """Convolution filters per layer (the paper's Delta-32)."""
    hidden: tuple[int, int] = (32, 16)
    """Widths of the first two of the three feed-forward layers."""


@dataclass(frozen=True)
class Featurised:
    """One query's candidates as the network reads them."""

    query_ids: np.ndarray  # (M',) distinct query word ids, M' >= 1
    doc_ids: np.ndarray  # (B, N) word ids, PAD-padded
    lex: np.ndarray  # (B, 3) Lex3 features (BM25 log-scaled)


@dataclass
class Vocabulary:
    """Word ids for the word vectors (0 = padding, 1 = the rare-word UNK vector)."""

    words: Mapping[str, int]

    def id_of(self, raw: str) -> int:
        found = self.words.get(raw)
        if found is not None:
            return found
        return self.words.get(normalise(raw), UNK)


def leaky(x: np.ndarray) -> np.ndarray:
    """Leaky ReLU in place (max(x, 0.3 x) holds for any slope below 1)."""
    out: np.ndarray = np.maximum(x, LEAK * x, out=x)
    return out


def featurise(
    query: str,
    docs: Sequence[tuple[str, str]],
    vocab: Vocabulary,
    idf: IdfTable,
    config: DeltaConfig,
) -> Featurised:
    """Word ids and Lex3 features; one tokenisation of each title and abstract.

    Lexical features use the whole query's raw tokens (numbers as written, no UNK), the
    network the first M distinct words' ids, exactly as the paper separates them.
    """
    terms = list(dict.fromkeys(lexical_words(query)))[:QUERY_TERMS_MAX]
    weight = {t: idf.idf(t) for t in terms}
    # (needle, IDF) for BM25; words in nearly every abstract (IDF < 0.2: "of", "the")
    # add < 0.44 each to a sum of tens and would cost a scan of every abstract
    scans = [(f" {t} ".encode(), w) for t, w in weight.items() if w >= BM25_MIN_IDF]
    query_mass = sum(weight.values())
    words_in = list(dict.fromkeys(raw_tokens(query)))[: config.query_words]
    qids = list(dict.fromkeys(vocab.id_of(t) for t in words_in))
    n = config.doc_words
    flat_ids: list[int] = []  # row-major, PAD-filled to n per document
    lex: list[tuple[float, float, float]] = []
    avg = max(idf.mean_abstract_words, 1.0)
    known = vocab.words.get
    title_idf: dict[str, float] = {}  # this call's cache: titles share words
    k1, b = BM25_K1, BM25_B
    for title, abstract in docs:
        head = head_tokens(title, abstract, n)
        ids = [known(t, -1) for t in head]
        if -1 in ids:  # numbers and rare words: their class, or UNK
            ids = [i if i >= 0 else vocab.id_of(t) for i, t in zip(ids, head, strict=True)]
        flat_ids += ids
        if len(ids) < n:
            flat_ids += [PAD] * (n - len(ids))
        if not terms:
            lex.append((0.0, 0.0, 0.0))
            continue
        bm25 = 0.0
        body = lexical_body(abstract)
        norm = 0.0
        for needle, w in scans:
            tf = body.count(needle)
            if tf:
                # length in space-separated chunks, as the corpus mean was counted
                norm = norm or k1 * (1.0 - b + b * body.count(b" ") / avg)
                bm25 += w * tf * (k1 + 1.0) / (tf + norm)
        in_title = set(lexical_words(title))
        shared = sum(weight[t] for t in weight.keys() & in_title)
        union = query_mass
        for t in in_title.difference(weight):
            seen = title_idf.get(t)
            if seen is None:
                seen = title_idf[t] = idf.idf(t)
            union += seen
        lex.append(
            (
                math.log1p(bm25),
                shared / union if union else 0.0,
                shared / query_mass if query_mass else 0.0,
            )
        )
    return Featurised(
        query_ids=np.array(qids or [UNK], dtype=np.int64),
        doc_ids=np.array(flat_ids, dtype=np.int64).reshape(len(docs), n),
        lex=np.array(lex, dtype=np.float32).reshape(len(docs), 3),
    )


def nearest_query_word(words: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of each word's nearest query word, and the three Delta features."""
    wn = np.einsum("uv,uv->u", words, words)
    qn = np.einsum("mv,mv->m", query, query)
    dots = words @ query.T
    dist = np.sqrt(np.maximum(wn[:, None] + qn[None, :] - 2.0 * dots, 0.0))
    nearest = dist.argmin(axis=1)
    rows = np.arange(len(words))
    d = dist[rows, nearest]
    wlen = np.sqrt(wn)
    qlen = np.sqrt(qn)[nearest]
    cos = dots[rows, nearest] / (wlen * qlen + EPS)
    prox = 1.0 - d / (wlen + qlen + EPS)
    return nearest, np.stack([cos, d, prox], axis=1).astype(np.float32)


@dataclass
class DeltaScorer:
    """A trained model: vectors, weights, IDF table and what it was trained on."""

    config: DeltaConfig
    vocab: Vocabulary
    vectors: np.ndarray  # (words + 2, V) float32
    weights: dict[str, np.ndarray]
    idf: IdfTable
    meta: dict[str, Any] = field(default_factory=dict)
    _projected: np.ndarray | None = field(default=None, init=False, repr=False)

    def projected(self) -> np.ndarray:
        """Every word vector through the first convolution's three taps: (words, 3 * F).

        The first layer is linear in (word - nearest query word), so each candidate
        word's contribution is a row lookup minus its query word's row (computed once
        per model: ~0.1 s and 77 MB for a 200K-word vocabulary).
        """
        if self._projected is None:
            conv1 = self.weights["conv1.weight"]  # (F, V + 3, 3)
            v = self.vectors.shape[1]
            taps = conv1[:, :v, :].transpose(1, 2, 0).reshape(v, -1)  # (V, 3 * F)
            self._projected = np.ascontiguousarray(self.vectors @ taps, dtype=np.float32)
        return self._projected

    @property
    def blend(self) -> float:
        """Weight of the Delta order against the first stage's, chosen on held-out queries."""
        return float(self.meta.get("blend", 1.0))

    def score(self, query: str, docs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Relevance scores for (title, abstract) pairs; higher is better."""
        if not docs:
            return np.zeros(0, dtype=np.float32)
        return self.forward(featurise(query, docs, self.vocab, self.idf, self.config))

    def forward(self, batch: Featurised) -> np.ndarray:
        w = self.weights
        ids = batch.doc_ids
        distinct, inverse = np.unique(ids, return_inverse=True)
        inverse = inverse.reshape(ids.shape)
        query_ids = batch.query_ids
        nearest, feats = nearest_query_word(self.vectors[distinct], self.vectors[query_ids])
        conv1 = w["conv1.weight"]  # (F, V + 3, 3)
        f, v = conv1.shape[0], self.vectors.shape[1]
        projected = self.projected()
        on_feats = conv1[:, v:, :].transpose(1, 2, 0).reshape(3, -1)  # (3 features, 3 * F)
        rows = projected[distinct]
        rows -= projected[query_ids[nearest]]
        rows += feats @ on_feats
        rows[distinct == PAD] = 0.0
        taps = rows.reshape(len(distinct), 3, f)
        x = taps[inverse, 1]  # each position's own tap, plus its neighbours' (zero outside)
        x[:, 1:] += taps[inverse[:, :-1], 0]
        x[:, :-1] += taps[inverse[:, 1:], 2]
        mask = (ids != PAD)[:, :, None].astype(np.float32)
        x = leaky(x + w["conv1.bias"]) * mask
        for name in ("conv2", "conv3"):
            x = leaky(_conv_same(x, w[f"{name}.weight"]) + w[f"{name}.bias"]) * mask
        pooled = np.where(mask > 0, x, -np.inf).max(axis=1)
        pooled[~np.isfinite(pooled)] = 0.0
        z = np.concatenate([pooled, batch.lex], axis=1)
        z = leaky(z @ w["ff1.weight"].T + w["ff1.bias"])
        z = leaky(z @ w["ff2.weight"].T + w["ff2.bias"])
        out: np.ndarray = (z @ w["ff3.weight"].T + w["ff3.bias"])[:, 0].astype(np.float32)
        return out

    # -- persistence -------------------------------------------------------------------

    def save(self, directory: Path) -> None:
        """Install the model as ``directory`` (see :mod:`medsearch.rerank.install`): a
        reader sees the old model or the new, never half, and a kill at any moment
        leaves one of them in place."""
        from medsearch.rerank.install import install

        install(directory, self._write)

    def _write(self, target: Path) -> None:
        """Every file of the model into the empty directory ``target``, ``meta.json`` last."""
        words = sorted(self.vocab.words, key=self.vocab.words.__getitem__)
        (target / "words.txt").write_text("\n".join(words), encoding="utf-8")
        np.save(target / "vectors.npy", self.vectors.astype(np.float16))
        np.savez(target / "weights.npz", **self.weights)  # type: ignore[arg-type]
        df_words = list(self.idf.df)
        (target / "df_words.txt").write_text("\n".join(df_words), encoding="utf-8")
        np.save(target / "df.npy", np.array([self.idf.df[t] for t in df_words], dtype=np.int32))
        meta = {
            **self.meta,
            "format": FORMAT,
            "config": {**self.config.__dict__, "hidden": list(self.config.hidden)},
            "idf_docs": self.idf.docs,
            "mean_abstract_words": self.idf.mean_abstract_words,
        }
        (target / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path) -> DeltaScorer:
        try:
            meta = json.loads((directory / "meta.json").read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT:
                raise RerankerError(
                    f"the Delta model in {directory} has format {meta.get('format')},"
                    f" this medsearch reads {FORMAT}: run `medsearch rerank train`"
                )
            raw = dict(meta["config"])
            raw["hidden"] = tuple(raw["hidden"])
            config = DeltaConfig(**raw)
            words = (directory / "words.txt").read_text(encoding="utf-8").split("\n")
            vocab = Vocabulary({w: i for i, w in enumerate(words) if w})
            vectors = np.load(directory / "vectors.npy").astype(np.float32)
            with np.load(directory / "weights.npz") as npz:
                weights = {k: npz[k].astype(np.float32) for k in npz.files}
            df_words = (directory / "df_words.txt").read_text(encoding="utf-8").split("\n")
            df = np.load(directory / "df.npy")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RerankerError(
                f"cannot read the Delta model in {directory} ({exc}); run"
                " `medsearch rerank train` to rebuild it"
            ) from exc
        missing = [
            f"{n}.{p}" for n in LAYERS for p in ("weight", "bias") if f"{n}.{p}" not in weights
        ]
        if missing or vectors.shape[0] != max(vocab.words.values(), default=UNK) + 1:
            raise RerankerError(
                f"the Delta model in {directory} is incomplete; run `medsearch rerank train`"
            )
        idf = IdfTable(
            docs=int(meta["idf_docs"]),
            df=dict(zip(df_words, df.tolist(), strict=True)) if df_words != [""] else {},
            mean_abstract_words=float(meta["mean_abstract_words"]),
        )
        return cls(config=config, vocab=vocab, vectors=vectors, weights=weights, idf=idf, meta=meta)


BLEND_K = 60  # the reciprocal-rank constant used to blend the Delta and first-stage orders


def blend_order(scores: np.ndarray, blend: float) -> list[int]:
    """Candidates (given in first-stage order) re-ordered by Delta, blended with that order.

    ``blend`` = 1 is Delta alone, 0 the first stage unchanged; in between, the two ranks
    are combined as reciprocal ranks, so a model that is unsure cannot sink a document
    the first stage placed well. Ties keep the first-stage order.
    """
    n = len(scores)
    delta_rank = np.empty(n, dtype=np.float64)
    delta_rank[np.argsort(-scores, kind="stable")] = np.arange(1, n + 1)
    first_rank = np.arange(1, n + 1, dtype=np.float64)
    combined = blend / (BLEND_K + delta_rank) + (1.0 - blend) / (BLEND_K + first_rank)
    return [int(i) for i in np.argsort(-combined, kind="stable")]


def _conv_same(x: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """1-D convolution, width 3, 'same' zero padding: (B, N, C) -> (B, N, F)."""
    b, n, c = x.shape
    f = weight.shape[0]
    # one product for the three taps, then each output position adds its neighbours' taps
    taps = (x.reshape(b * n, c) @ weight.transpose(1, 2, 0).reshape(c, 3 * f)).reshape(b, n, 3, f)
    out: np.ndarray = taps[:, :, 1].copy()
    out[:, 1:] += taps[:, :-1, 0]
    out[:, :-1] += taps[:, 1:, 2]
    return out
