"""Attention: written-out == fused SDPA == nn.MultiheadAttention; weights are distributions."""

import pytest
import torch
import torch.nn.functional as F

from minivit import Attention, attention_with_weights
from tests.conftest import randomize_


def test_manual_equals_fused_sdpa(gen):
    q, k, v = torch.randn(3, 2, 4, 10, 8, generator=gen)
    out, weights = attention_with_weights(q, k, v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-6, rtol=1e-5)
    assert weights.shape == (2, 4, 10, 10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 10))


def test_dropout_only_when_training(gen):
    q, k, v = torch.randn(3, 2, 6, 8, generator=gen)
    ref, _ = attention_with_weights(q, k, v)
    evaluated, _ = attention_with_weights(q, k, v, dropout_p=0.5)  # training=False: no dropout
    torch.testing.assert_close(evaluated, ref)
    torch.manual_seed(0)
    trained, weights = attention_with_weights(q, k, v, dropout_p=0.5, training=True)
    assert not torch.allclose(trained, ref)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6))  # the weights returned are before dropout
    with pytest.raises(ValueError, match=r"dropout_p must be in \[0, 1\)"):
        attention_with_weights(q, k, v, dropout_p=1.0)


def test_module_paths_agree(gen):
    attn = randomize_(Attention(dim=32, heads=4), seed=1)
    x = torch.randn(2, 17, 32, generator=gen)
    fused = attn(x)
    manual, weights = attn(x, return_attention=True)
    attn.fused = False
    torch.testing.assert_close(fused, manual, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(attn(x), manual)
    assert fused.shape == (2, 17, 32) and weights.shape == (2, 4, 17, 17)


def test_equals_nn_multihead_attention(gen):
    attn = randomize_(Attention(dim=24, heads=3), seed=2).eval()
    mha = torch.nn.MultiheadAttention(24, 3, batch_first=True).eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(attn.qkv.weight)
        mha.in_proj_bias.copy_(attn.qkv.bias)
        mha.out_proj.weight.copy_(attn.proj.weight)
        mha.out_proj.bias.copy_(attn.proj.bias)
    x = torch.randn(3, 11, 24, generator=gen)
    ref, ref_weights = mha(x, x, x, need_weights=True, average_attn_weights=False)
    out, weights = attn(x, return_attention=True)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, ref_weights, atol=1e-6, rtol=1e-5)


def test_attend_hook_records_maps(gen):
    attn = Attention(dim=16, heads=2, fused=False)
    seen = []
    attn.attend.register_forward_hook(lambda m, i, o: seen.append(o))
    attn(torch.randn(1, 5, 16, generator=gen))
    assert len(seen) == 1 and seen[0].shape == (1, 2, 5, 5)


def test_errors():
    with pytest.raises(ValueError, match="dim 30 must be divisible by heads 4"):
        Attention(30, 4)
    with pytest.raises(ValueError, match=r"expected tokens of shape \(B, N, 16\)"):
        Attention(16, 2)(torch.zeros(2, 5, 8))
