"""Tests for the mixed precision of training (minivit.train.evaluation.autocast_dtype, grad_scaler, train_step with
a GradScaler) and the progress bars of the recipes, on the CPU with the GPU's compute capability patched."""
import copy

import pytest
import torch

import minivit.train.loop as loop
from minivit import recipes
from minivit.train import fit, train_step
from minivit.train.evaluation import autocast_dtype, grad_scaler
from tests.conftest import synthetic, tiny_model


@pytest.mark.parametrize("capability, dtype", [((9, 0), torch.bfloat16), ((8, 0), torch.bfloat16),
                                               ((8, 6), torch.bfloat16), ((7, 5), torch.float16),
                                               ((7, 0), torch.float16)])
def test_bf16_only_with_bf16_tensor_cores_else_fp16(monkeypatch, capability, dtype):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert autocast_dtype("cuda") == dtype
    assert autocast_dtype(torch.device("cuda", 0)) == dtype


def test_no_autocast_and_no_scaler_off_cuda():
    for device in ("cpu", "meta"):
        assert autocast_dtype(device) is None
        assert not grad_scaler(device).is_enabled()


def test_the_scaler_is_asked_for_exactly_where_fp16_is_used(monkeypatch):
    made = []

    class Recorder:
        def __init__(self, device, enabled):
            made.append((device, enabled))
    monkeypatch.setattr(torch.amp, "GradScaler", Recorder)
    for capability, enabled in (((7, 5), True), ((8, 0), False)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None, c=capability: c)
        grad_scaler("cuda")
        assert made[-1] == ("cuda", enabled)


def test_train_step_with_a_scaler_takes_the_same_step():
    """Scaling by a power of two and unscaling before clipping is exact: the same gradient norm and weights."""
    x, y = synthetic()
    x = x[:16].float() / 255
    plain, scaled = tiny_model(), tiny_model()
    scaled.load_state_dict(plain.state_dict())
    results = []
    for model, scaler in ((plain, None), (scaled, torch.amp.GradScaler("cpu", init_scale=2.0 ** 12))):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        results.append(train_step(model, optimizer, x, y[:16], clip_grad=0.5, scaler=scaler))
    assert torch.equal(results[0][0], results[1][0])  # the loss
    assert torch.allclose(results[0][2], results[1][2], rtol=1e-6)  # the unscaled gradient norm, clipped at 0.5
    for a, b in zip(plain.parameters(), scaled.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


def test_train_step_skips_a_step_whose_gradients_are_not_finite():
    x, y = synthetic()
    x = x[:16].float() / 255
    x[0, 0, 0, 0] = float("inf")  # as an fp16 overflow would: non-finite gradients
    model = tiny_model()
    before = copy.deepcopy(model.state_dict())
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    train_step(model, optimizer, x, y[:16], scaler=scaler)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # the step was skipped
    assert scaler.get_scale() == 2.0 ** 15  # and the scale halved


def test_fit_trains_through_the_devices_scaler(monkeypatch):
    steps = []

    def scaler_for(device):
        s = torch.amp.GradScaler("cpu", init_scale=2.0 ** 8)
        step = s.step
        s.step = lambda opt, *a, **k: (steps.append(1), step(opt, *a, **k))[1]
        return s
    monkeypatch.setattr(loop, "grad_scaler", scaler_for)
    x, y = synthetic()
    h = fit(tiny_model(), (x[:64], y[:64]), epochs=2, batch_size=16, device="cpu", progress=False)
    assert len(steps) == 8 and len(h) == 2  # 2 epochs of 4 steps, each through the scaler


def test_recipes_show_progress_in_the_full_profile_only(monkeypatch):
    for name, recipe in recipes.RECIPES.items():
        assert recipe.progress == name.endswith("-full")
    seen = {}
    monkeypatch.setattr("minivit.train.fit", lambda model, train, val, **kw: seen.update(kw))
    x, y = synthetic()
    for profile in ("quick", "full"):
        recipes.get("cifar10", profile).fit(tiny_model(), (x, y))
        assert seen["progress"] is (profile == "full")
    recipes.get("cifar10", "full").fit(tiny_model(), (x, y), progress=False)  # an override still wins
    assert seen["progress"] is False
