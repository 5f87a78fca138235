"""The Transformer encoder: `Mlp`, the pre-norm `Block` and the `Encoder` stack (paper §3.1, Eq. 2–3).

    z'_l = MSA(LN(z_{l-1})) + z_{l-1}        (2)
    z_l  = MLP(LN(z'_l)) + z'_l              (3)

"The MLP contains two layers with a GELU non-linearity." LayerNorm comes
*before* each sub-block (pre-norm) and a residual connection after it.

Parameter names follow timm (`norm1`, `attn.qkv`, `attn.proj`, `norm2`,
`mlp.fc1`, `mlp.fc2`), and the stack is an `nn.Sequential` so a ViT's blocks
are `blocks.{i}`, as in timm.

Introduced in 03_transformer_encoder.ipynb.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import Attention

LAYER_NORM_EPS = 1e-6  # as in the paper's JAX code and timm


class Mlp(nn.Module):
    """Two Linear layers with GELU between: (B, N, D) -> (B, N, hidden) -> (B, N, D)."""

    def __init__(self, dim: int, hidden_dim: int, dropout: float = 0.0):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden_dim)
        self.act = nn.GELU()
        self.drop1 = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden_dim, dim)
        self.drop2 = nn.Dropout(dropout)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """As the paper's JAX code (`MlpBlock`): Xavier-uniform weights, biases N(0, 1e-6²)."""
        for fc in (self.fc1, self.fc2):
            nn.init.xavier_uniform_(fc.weight)
            nn.init.normal_(fc.bias, std=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop1(self.act(self.fc1(x)))  # (B, N, hidden)
        return self.drop2(self.fc2(x))  # (B, N, D)


class Block(nn.Module):
    """One pre-norm encoder layer, Eq. 2–3: (B, N, D) -> (B, N, D)."""

    def __init__(self, dim: int, heads: int, mlp_dim: int, dropout: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=LAYER_NORM_EPS)
        self.attn = Attention(dim, heads, dropout=dropout)
        self.norm2 = nn.LayerNorm(dim, eps=LAYER_NORM_EPS)
        self.mlp = Mlp(dim, mlp_dim, dropout=dropout)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """x: (B, N, D) -> (B, N, D); with `return_attention` also the weights (B, heads, N, N)."""
        if return_attention:
            a, weights = self.attn(self.norm1(x), return_attention=True)
            x = x + a  # Eq. 2
            return x + self.mlp(self.norm2(x)), weights  # Eq. 3
        x = x + self.attn(self.norm1(x))  # Eq. 2
        return x + self.mlp(self.norm2(x))  # Eq. 3


class Encoder(nn.Sequential):
    """`depth` Blocks in sequence: (B, N, D) -> (B, N, D). Indexable like a list (`encoder[0]`)."""

    def __init__(self, dim: int, depth: int, heads: int, mlp_dim: int, dropout: float = 0.0):
        super().__init__(*[Block(dim, heads, mlp_dim, dropout) for _ in range(depth)])

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        """With `return_attention`, also a list of `depth` weight tensors (B, heads, N, N)."""
        if not return_attention:
            return super().forward(x)
        maps = []
        for block in self:
            x, weights = block(x, return_attention=True)
            maps.append(weights)
        return x, maps
