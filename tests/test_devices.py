"""The notebook-facing functions move inputs to the model's device, checked without a GPU.

A model on CUDA fed CPU tensors fails with "Expected all tensors to be on the same device" -- a failure no CPU run
can show. PyTorch's FakeTensorMode can: inside it, `.to("cuda")` makes tensors that only carry metadata (shape,
dtype, device), so a CPU machine runs the device logic of a GPU run without computing anything. Functions that read
a value back (`.item()`: `evaluate`, `fit`) cannot run under it and are left to the smoke run and the GPU.
"""

import pytest
import torch

from minivit import MaskedPatchPrediction, ViT
from minivit.inspection import record_attention
from minivit.probe import frozen_features
from minivit.train import predict
from tests.conftest import TINY

FakeTensorMode = pytest.importorskip("torch._subclasses.fake_tensor").FakeTensorMode


def fake_cuda():
    """A fake-tensor mode in which `.to("cuda")` works on a machine without a GPU (build models before entering
    it: their initialisation reads values)."""
    return FakeTensorMode(allow_non_fake_inputs=True)


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_the_harness_shows_a_device_mismatch():
    model = ViT(TINY)
    with fake_cuda():
        model.to("cuda")
        assert {p.device.type for p in model.parameters()} == {"cuda"}
        with pytest.raises(RuntimeError, match="same device"):
            model(torch.zeros(2, 3, 8, 8))  # CPU input, CUDA weights: what notebook 06 cell 24 did
        assert model(torch.zeros(2, 3, 8, 8).to("cuda")).device.type == "cuda"


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_predict_record_attention_and_features_follow_the_model():
    model = ViT(TINY)
    with fake_cuda():
        model.to("cuda")
        _check_predict_record_features(model)


def _check_predict_record_features(model):
    data = (torch.zeros(4, 3, 8, 8, dtype=torch.uint8), torch.zeros(4, dtype=torch.long))  # CPU data
    assert predict(model, data, batch_size=2).device.type == "cpu"  # logits come back to the CPU
    maps = record_attention(model, torch.zeros(3, 3, 8, 8), batch_size=2)
    assert maps.shape == (3, TINY.depth, TINY.heads, 5, 5) and maps.device.type == "cpu"
    assert frozen_features(model, data, batch_size=2).device.type == "cpu"


@pytest.mark.filterwarnings("ignore:CUDA is not available")
def test_mpp_runs_on_the_models_device():
    mpp = MaskedPatchPrediction(ViT(TINY))
    with fake_cuda():
        mpp.to("cuda")
        out = mpp(torch.zeros(2, 3, 8, 8).to("cuda"))
        assert out.logits.device.type == "cuda" and out.mask.device.type == "cuda"
