"""Multi-head self-attention, written out and fused (paper §3.1, Eq. 2; Appendix A).

    [q, k, v] = z U_qkv,   A = softmax(q kᵀ / √D_h),   SA(z) = A v
    MSA(z) = [SA_1(z); ...; SA_k(z)] U_msa

`attention_with_weights` is the equation line by line, with the softmax as a
named step (`Attention.attend`) so the maps can be recorded; unlike PyTorch's
`F.scaled_dot_product_attention` it returns the weights A too. `Attention` runs
the fused `F.scaled_dot_product_attention` by default (faster; its fused kernels
need not hold A in memory) and the written-out path when the weights are asked
for (`return_attention=True`) or when `fused=False`; tests pin the two equal.

Shape legend: B batch, N tokens, D width, heads, Dh = D / heads.

Introduced in 03_transformer_encoder.ipynb.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn


def attention_with_weights(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax: nn.Module | None = None,
    dropout_p: float = 0.0, training: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q kᵀ / √Dh) v, written out, and the weights.

    q: (..., N, Dh), k: (..., M, Dh), v: (..., M, Dv) -> output (..., N, Dv), weights (..., N, M) (rows sum to 1).
    `softmax`: the module applying the softmax over the last axis (a named step that can be hooked), default
    `Tensor.softmax`. `dropout_p` drops attention weights only when `training` is True (pass `self.training`),
    so a model in eval mode is deterministic. The weights returned are those before dropout.
    """
    if q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise ValueError(f"expected q (..., N, Dh), k (..., M, Dh), v (..., M, Dv); got {q.shape}, {k.shape}, {v.shape}")
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), got {dropout_p!r}")
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., N, M)
    weights = softmax(scores) if softmax is not None else scores.softmax(dim=-1)  # (..., N, M), rows sum to 1
    dropped = F.dropout(weights, dropout_p, training=training) if dropout_p else weights  # (..., N, M)
    return dropped @ v, weights  # (..., N, Dv), (..., N, M)


class Attention(nn.Module):
    """Multi-head self-attention: (B, N, D) -> (B, N, D), optionally with weights (B, heads, N, N).

    timm's names: `qkv` (one Linear D -> 3D for queries, keys and values of
    every head) and `proj` (U_msa, D -> D).

    The layout of `qkv`'s output (B, N, 3D), as timm's: (3, heads, Dh) -- the first D
    columns are the queries of all heads, then the keys, then the values; within each,
    head h has the Dh columns [h*Dh, (h+1)*Dh). So `qkv.weight` (3D, D) stacks U_q, U_k,
    U_v, each (D, D), and `rearrange(qkv(x), "b n (three h dh) -> three b h n dh")`
    splits it. `minivit.exercises.check_multi_head_attention` checks a written-out MSA.
    """

    def __init__(self, dim: int, heads: int, dropout: float = 0.0, fused: bool = True):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim {dim} must be divisible by heads {heads}")
        self.heads = heads
        self.fused = fused  # speed switch only: both paths compute the same function
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attend = nn.Softmax(dim=-1)  # the named step: hook it to record attention maps
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As the paper's JAX code: Xavier-uniform on each of the query, key and value maps (D x D each,
        the three blocks of `qkv`) and on `proj`; zero biases."""
        for w in self.qkv.weight.detach().chunk(3):  # (D, D) each: queries, keys, values of all heads
            nn.init.xavier_uniform_(w)
        nn.init.xavier_uniform_(self.proj.weight)
        nn.init.zeros_(self.qkv.bias)
        nn.init.zeros_(self.proj.bias)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """x: (B, N, D). Returns (B, N, D), or ((B, N, D), (B, heads, N, N)) with `return_attention`."""
        if x.ndim != 3 or x.shape[-1] != self.qkv.in_features:
            raise ValueError(f"expected tokens of shape (B, N, {self.qkv.in_features}), got {tuple(x.shape)}")
        q, k, v = rearrange(self.qkv(x), "b n (three h dh) -> three b h n dh", three=3, h=self.heads)  # 3 x (B, heads, N, Dh)
        if self.fused and not return_attention:
            out, weights = F.scaled_dot_product_attention(q, k, v), None  # (B, heads, N, Dh)
        else:
            out, weights = attention_with_weights(q, k, v, self.attend)  # (B, heads, N, Dh), (B, heads, N, N)
        out = rearrange(out, "b h n dh -> b n (h dh)")  # (B, N, D): heads concatenated
        out = self.proj_drop(self.proj(out))  # (B, N, D)
        return (out, weights) if return_attention else out
