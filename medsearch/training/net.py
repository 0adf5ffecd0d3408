"""The Delta network in torch, written the way the paper draws it; used for training.

Word vectors are fixed (the paper could not train 200K embeddings from 20K queries, and
we have fewer); the Delta stage has no parameters, so it runs without gradients; the
trainable part is three width-3 convolutions with 32 filters, a masked max-pool, the
Lex3 features, and three feed-forward layers. :class:`~medsearch.rerank.scorer.DeltaScorer`
computes the same function faster and is tested against this one.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from medsearch.rerank.scorer import EPS, LAYERS, LEAK, PAD, DeltaConfig


class DeltaNet(nn.Module):
    def __init__(self, vectors: np.ndarray, config: DeltaConfig, dropout: float = 0.1) -> None:
        super().__init__()
        self.config = config
        self.register_buffer("vectors", torch.from_numpy(np.asarray(vectors, dtype=np.float32)))
        f = config.filters
        v = int(vectors.shape[1])
        self.conv1 = nn.Conv1d(v + 3, f, 3, padding=1)
        self.conv2 = nn.Conv1d(f, f, 3, padding=1)
        self.conv3 = nn.Conv1d(f, f, 3, padding=1)
        self.dropout = nn.Dropout(dropout)  # before the max-pool, as in the paper
        h1, h2 = config.hidden
        self.ff1 = nn.Linear(f + 3, h1)
        self.ff2 = nn.Linear(h1, h2)
        self.ff3 = nn.Linear(h2, 1)
        self.act = nn.LeakyReLU(LEAK)

    @torch.no_grad()
    def delta(self, doc_ids: torch.Tensor, query_ids: torch.Tensor) -> torch.Tensor:
        """The Delta matrix (B, N, V + 3), zero at padding."""
        vectors: torch.Tensor = self.vectors  # type: ignore[assignment]
        d = vectors[doc_ids]
        q = vectors[query_ids]
        dots = torch.einsum("bnv,bmv->bnm", d, q)
        dn = (d * d).sum(-1)
        qn = (q * q).sum(-1)
        dist = (dn[:, :, None] + qn[:, None, :] - 2.0 * dots).clamp_min(0.0).sqrt()
        dist = dist.masked_fill((query_ids == PAD)[:, None, :], float("inf"))
        best, nearest = dist.min(dim=2)
        qsel = torch.gather(q, 1, nearest[:, :, None].expand(-1, -1, q.shape[2]))
        dlen = dn.sqrt()
        qlen = torch.gather(qn, 1, nearest).sqrt()
        cos = torch.gather(dots, 2, nearest[:, :, None])[:, :, 0] / (dlen * qlen + EPS)
        prox = 1.0 - best / (dlen + qlen + EPS)
        out = torch.cat([d - qsel, cos[..., None], best[..., None], prox[..., None]], dim=2)
        return out * (doc_ids != PAD)[:, :, None]

    def forward(
        self, doc_ids: torch.Tensor, query_ids: torch.Tensor, lex: torch.Tensor
    ) -> torch.Tensor:
        mask = (doc_ids != PAD)[:, None, :].float()
        x = self.delta(doc_ids, query_ids).transpose(1, 2)
        for conv in (self.conv1, self.conv2, self.conv3):
            x = self.act(conv(x)) * mask
        x = self.dropout(x)
        x = x.masked_fill(mask == 0, float("-inf")).amax(dim=2)
        x = torch.where(torch.isfinite(x), x, torch.zeros_like(x))
        z = torch.cat([x, lex], dim=1)
        z = self.act(self.ff1(z))
        z = self.act(self.ff2(z))
        out: torch.Tensor = self.ff3(z)[:, 0]
        return out

    def numpy_weights(self) -> dict[str, np.ndarray]:
        state = self.state_dict()
        return {
            f"{name}.{p}": state[f"{name}.{p}"].detach().cpu().numpy().astype(np.float32)
            for name in LAYERS
            for p in ("weight", "bias")
        }


def pairwise_loss(
    positive: torch.Tensor, negative: torch.Tensor, weight: torch.Tensor
) -> torch.Tensor:
    """The paper's weighted max-margin loss: weight * max(0, 1 - s(D+) + s(D-))."""
    return (weight * torch.relu(1.0 - positive + negative)).mean()
