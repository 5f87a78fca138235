"""Mlp, the pre-norm Block (Eq. 2-3) and the Encoder stack."""

import torch
import torch.nn.functional as F

from minivit import Block, Encoder, Mlp
from tests.conftest import randomize_


def test_mlp_is_two_linears_with_gelu(gen):
    mlp = randomize_(Mlp(8, 32))
    x = torch.randn(2, 5, 8, generator=gen)
    ref = F.linear(F.gelu(F.linear(x, mlp.fc1.weight, mlp.fc1.bias)), mlp.fc2.weight, mlp.fc2.bias)
    torch.testing.assert_close(mlp(x), ref)


def test_block_is_pre_norm_residual(gen):
    block = randomize_(Block(dim=16, heads=2, mlp_dim=32))
    x = torch.randn(2, 7, 16, generator=gen)
    z = x + block.attn(block.norm1(x))  # Eq. 2
    z = z + block.mlp(block.norm2(z))  # Eq. 3
    torch.testing.assert_close(block(x), z)
    out, weights = block(x, return_attention=True)
    torch.testing.assert_close(out, z, atol=1e-6, rtol=1e-5)
    assert weights.shape == (2, 2, 7, 7)


def test_encoder_stack(gen):
    enc = randomize_(Encoder(dim=16, depth=3, heads=4, mlp_dim=32))
    x = torch.randn(2, 7, 16, generator=gen)
    out, maps = enc(x, return_attention=True)
    torch.testing.assert_close(out, enc(x), atol=1e-6, rtol=1e-5)
    assert len(enc) == 3 and len(maps) == 3 and all(m.shape == (2, 4, 7, 7) for m in maps)
    assert [n for n, _ in enc.named_parameters()][:2] == ["0.norm1.weight", "0.norm1.bias"]
