"""Tests for minivit.train: schedule, parameter groups, fit, evaluate, predict, History."""
import json
import math

import pytest
import torch
from torch import nn

from minivit import data as mdata
from minivit.train import History, evaluate, fit, lr_factor, param_groups, predict
from tests.conftest import TINY, synthetic, tiny_model

def test_lr_factor_warmup_then_cosine():
    total, warm = 100, 10
    f = [lr_factor(s, total, warm) for s in range(total)]
    assert f[0] == pytest.approx(0.1) and f[9] == pytest.approx(1.0)
    assert all(a < b for a, b in zip(f[:10], f[1:10]))  # rising during warm-up
    assert all(a >= b for a, b in zip(f[9:], f[10:]))  # then never rising
    assert f[10] == pytest.approx(1.0) and lr_factor(total, total, warm) == pytest.approx(0.0)
    assert f[55] == pytest.approx(0.5 * (1 + math.cos(math.pi * 45 / 90)))
    assert lr_factor(0, 10, 0) == pytest.approx(1.0)


def test_param_groups_skip_norms_biases_and_tokens():
    model = tiny_model()
    decay, no_decay = param_groups(model, 0.1)
    names = {id(p): n for n, p in model.named_parameters()}
    skipped = {names[id(p)] for p in no_decay["params"]}
    decayed = {names[id(p)] for p in decay["params"]}
    assert decay["weight_decay"] == 0.1 and no_decay["weight_decay"] == 0.0
    assert {"cls_token", "pos_embed", "norm.weight", "norm.bias", "blocks.0.attn.qkv.bias"} <= skipped
    assert {"patch_embed.proj.weight", "blocks.0.attn.qkv.weight", "blocks.0.mlp.fc1.weight", "head.weight"} <= decayed
    assert len(skipped) + len(decayed) == len(list(model.parameters()))


def test_fit_learns_and_records_history():
    x, y = synthetic()
    model = tiny_model()
    before = evaluate(model, (x, y))
    h = fit(model, (x, y), (x[:48], y[:48]), epochs=6, batch_size=16, lr=3e-3, warmup_epochs=1,
            device="cpu", progress=False)
    assert len(h) == 6 and h.epoch == [1, 2, 3, 4, 5, 6] and h.stopped is None
    assert h.final["val_acc"] > 0.9 > before["acc"]
    assert h.train_loss[-1] < h.train_loss[0]
    assert h.lr[0] > h.lr[-1] > 0 and all(v > 0 for v in h.images_per_s + h.epoch_time)
    assert evaluate(model, (x[:48], y[:48]))["acc"] == pytest.approx(h.final["val_acc"])


def test_same_seed_same_run_different_seed_different_run():
    x, y = synthetic()
    aug = mdata.Augment(padding=1, flip=True)
    runs = [fit(tiny_model(0, dropout=0.1), (x, y), epochs=2, batch_size=16, augment=aug, device="cpu",
                seed=s, progress=False).train_loss for s in (7, 7, 8)]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


def test_non_finite_loss_stops_with_clear_error():
    class NaNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(1))

        def forward(self, x):  # (B, C, H, W) -> (B, 3)
            return x.flatten(1)[:, :3] * self.w * float("nan")

    x, y = synthetic(32)
    with pytest.raises(FloatingPointError, match="loss is nan at epoch 1, step 1"):
        fit(NaNModel(), (x, y), epochs=1, batch_size=8, device="cpu", progress=False)


def test_time_budget_stops_and_records_partial_epoch():
    x, y = synthetic()
    h = fit(tiny_model(), (x, y), epochs=3, batch_size=16, time_budget=0.0, device="cpu", progress=False)
    assert len(h) == 1 and "time budget" in h.stopped
    assert h.final["train_acc"] is not None


def test_on_epoch_end_can_stop():
    x, y = synthetic()
    seen = []
    h = fit(tiny_model(), (x, y), epochs=5, batch_size=32, device="cpu", progress=False,
            on_epoch_end=lambda hist: seen.append(len(hist)) or len(hist) == 2)
    assert seen == [1, 2] and len(h) == 2 and "after epoch 2" in h.stopped


def test_dataset_input_uses_its_normalisation():
    x, y = synthetic(30)
    ds = mdata.ImageDataset(x, y, ("a", "b", "c"), "cifar10", "train")
    model = tiny_model()
    nn.init.normal_(model.head.weight)  # the head starts at zero: make the logits depend on the input
    a = evaluate(model, ds, batch_size=7)
    b = evaluate(model, (x, y), batch_size=30, normalize=lambda im: mdata.normalize(im, "cifar10"))
    c = evaluate(model, (x, y))  # uint8 pair: scaled to [0, 1] only
    assert a["loss"] == pytest.approx(b["loss"], rel=1e-5) and a["acc"] == b["acc"] and a["n"] == 30
    assert c["loss"] != pytest.approx(a["loss"], rel=1e-5)


def test_predict_matches_model_and_evaluate():
    x, y = synthetic(20)
    model = tiny_model()
    nn.init.normal_(model.head.weight)
    logits = predict(model, (x, y), batch_size=6)
    assert logits.shape == (20, 3) and logits.dtype == torch.float32
    with torch.no_grad():
        torch.testing.assert_close(logits, model.eval()(x.float() / 255))
    acc = (logits.argmax(1) == y).float().mean().item()
    assert evaluate(model, (x, y))["acc"] == pytest.approx(acc)


def test_evaluation_batch_default_and_bad_batches():
    from minivit.train.evaluation import eval_batch_size
    assert eval_batch_size("cpu") == 128 and eval_batch_size(torch.device("cuda", 0)) == 512
    x, y = synthetic(20)
    model = tiny_model()
    torch.testing.assert_close(predict(model, (x, y)), predict(model, (x, y), batch_size=7))
    for bad in (0, -4, 2.5, True):
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            predict(model, (x, y), batch_size=bad)
        with pytest.raises(ValueError, match="batch_size must be a positive int"):
            evaluate(model, (x, y), batch_size=bad)


def test_bad_inputs_are_clear_errors():
    x, y = synthetic(12)
    model = tiny_model()
    with pytest.raises(TypeError, match="ImageDataset or an \\(images, labels\\) pair"):
        fit(model, x, epochs=1, device="cpu", progress=False)
    with pytest.raises(ValueError, match="expected images \\(N, C, H, W\\)"):
        fit(model, (x[0], y), epochs=1, device="cpu", progress=False)
    with pytest.raises(ValueError, match="num_classes=3"):
        fit(model, (x, y + 5), epochs=1, device="cpu", progress=False)
    with pytest.raises(ValueError, match="epochs and batch_size"):
        fit(model, (x, y), epochs=0, device="cpu", progress=False)


def test_fit_restores_the_train_eval_mode():
    x, y = synthetic(32)
    model = tiny_model().eval()
    fit(model, (x, y), (x, y), epochs=1, batch_size=16, device="cpu", progress=False)
    assert not model.training
    model.train()
    fit(model, (x, y), epochs=1, batch_size=16, device="cpu", progress=False)
    assert model.training


def test_step_lr_records_warmup_and_cosine():
    x, y = synthetic(64)
    h = fit(tiny_model(), (x, y), epochs=2, batch_size=16, warmup_epochs=0.5, lr=1e-2, device="cpu", progress=False)
    assert h.steps_per_epoch == 4 and len(h.step_lr) == 8
    assert h.step_lr[:2] == pytest.approx([5e-3, 1e-2])  # linear warm-up over 2 steps
    assert h.step_lr[2] == h.step_lr[1] and all(a > b for a, b in zip(h.step_lr[2:], h.step_lr[3:]))  # cosine
    assert h.lr == [h.step_lr[3], h.step_lr[7]]  # the per-epoch value is the epoch's last step


def test_progress_bar_only_when_asked(capsys):
    x, y = synthetic(32)
    fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=True)
    err = capsys.readouterr().err
    assert "epoch 1/1" in err and "loss=" in err and "acc=" in err and "img_s=" in err


def test_history_round_trip_best_final_plot():
    x, y = synthetic()
    h = fit(tiny_model(), (x, y), (x, y), epochs=3, batch_size=32, device="cpu", progress=False)
    d = json.loads(json.dumps(h.to_dict()))
    h2 = History.from_dict(d)
    assert h2 == h and h2.final == h.final
    best = h.best("val_acc")
    assert best["val_acc"] == max(h.val_acc)
    assert h.best("val_loss")["val_loss"] == min(h.val_loss)
    with pytest.raises(ValueError, match="unknown metric"):
        h.best("accuracy")
    with pytest.raises(ValueError, match="empty"):
        History().final
    with pytest.raises(ValueError, match="unknown History fields"):
        History.from_dict({"loss": []})
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure
    fig = h.plot(title="tiny")
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert list(fig.axes[1].lines[1].get_ydata()) == h.val_acc
    lr_line = fig.axes[2].lines[0]  # one point per optimizer step, placed at fractional epochs
    assert list(lr_line.get_ydata()) == h.step_lr and len(h.step_lr) == 3 * h.steps_per_epoch
    assert lr_line.get_xdata()[-1] == 3.0
    assert all(float(t).is_integer() for t in fig.axes[0].get_xticks())  # whole-epoch ticks
    plt.close(fig)
    no_val = fit(tiny_model(), (x, y), epochs=1, batch_size=32, device="cpu", progress=False)
    assert no_val.val_acc == [None]
    plt.close(no_val.plot())


class _FakeClock:
    """Stands in for the `time` module in minivit.train.loop: every reading advances 5 ms, so a test of the clock-driven
    schedule sees the same ~200 steps on a fast machine and a busy one."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        self.now += 0.005
        return self.now


def test_budget_schedule_runs_the_lr_on_the_clock(monkeypatch):
    import minivit.train.loop
    from minivit.train import budget_lr_factor
    assert budget_lr_factor(0.05, 0.1) == pytest.approx(0.5) and budget_lr_factor(0.1, 0.1) == pytest.approx(1.0)
    assert budget_lr_factor(0.55, 0.1) == pytest.approx(0.5) and budget_lr_factor(1.0, 0.1) == pytest.approx(0.0)
    monkeypatch.setattr(minivit.train.loop, "time", _FakeClock())
    x, y = synthetic(64)
    h = fit(tiny_model(), (x, y), epochs=10_000, batch_size=16, lr=1e-2, warmup_epochs=1000, device="cpu",
            progress=False, time_budget=1.0, schedule="budget")  # warm-up: 10% of the budget
    assert h.stopped and "time budget" in h.stopped  # the budget, not the epochs, ended it
    lrs = torch.tensor(h.step_lr)
    assert lrs[0] < 0.3e-2 and lrs.max() > 0.9e-2  # warmed up to the base lr ...
    assert lrs[-1] < 0.1e-2  # ... and decayed to about 0 when the budget was spent
    peak = int(lrs.argmax())
    assert peak < 0.3 * len(lrs) and (lrs[peak:].diff() <= 1e-12).all()  # a monotone decay after the warm-up


def test_budget_schedule_needs_a_budget_and_cannot_resume(tmp_path):
    x, y = synthetic(16)
    with pytest.raises(ValueError, match="schedule must be 'epochs' or 'budget'"):
        fit(tiny_model(), (x, y), epochs=1, device="cpu", progress=False, schedule="time")
    with pytest.raises(ValueError, match="needs a positive time_budget"):
        fit(tiny_model(), (x, y), epochs=1, device="cpu", progress=False, schedule="budget")
    with pytest.raises(ValueError, match="cannot resume"):
        fit(tiny_model(), (x, y), epochs=1, device="cpu", progress=False, schedule="budget", time_budget=1.0,
            checkpoint=tmp_path / "c.pt", resume=True)


def test_per_image_transform_in_workers_and_mixing_are_reproducible():
    from minivit.augment import mixup_cutmix
    x, y = synthetic(48)

    def transform(img):  # a per-image random shift, drawn from torch's RNG (per worker)
        return torch.roll(img, shifts=int(torch.randint(-1, 2, (1,))), dims=-1)
    runs = [fit(tiny_model(), (x, y), epochs=2, batch_size=16, transform=transform, workers=w,
                mix=mixup_cutmix(3), device="cpu", progress=False, seed=0) for w in (0, 0, 2, 2)]
    same = lambda a, b: a.train_loss == b.train_loss and a.step_grad_norm == b.step_grad_norm  # timings differ
    assert same(runs[0], runs[1]) and same(runs[2], runs[3])  # same seed and number of workers: the same run
    assert not same(runs[0], runs[2])  # the workers draw their own random numbers
    assert all(0 < r.final["train_acc"] <= 1 and r.final["train_loss"] > 0 for r in runs)
    assert len(runs[0].step_grad_norm) == 2 * 3 and all(g > 0 for g in runs[0].step_grad_norm)
    with pytest.raises(ValueError, match="needs a per-image transform"):
        fit(tiny_model(), (x, y), epochs=1, workers=2, device="cpu", progress=False)


@pytest.mark.parametrize("kwargs, message", [
    (dict(lr=float("nan")), "lr must be a finite number >= 0"),
    (dict(lr=-1.0), "lr must be a finite number >= 0"),
    (dict(lr=float("inf")), "lr must be a finite number >= 0"),
    (dict(clip_grad=-1.0), "clip_grad must be a max gradient norm > 0, or None or 0"),
    (dict(label_smoothing=1.5), r"label_smoothing must lie in \[0, 1\)"),
    (dict(label_smoothing=-0.1), r"label_smoothing must lie in \[0, 1\)"),
    (dict(warmup_epochs=5), r"warmup_epochs must lie in \[0, epochs\] = \[0, 2\]"),
    (dict(weight_decay=-0.1), "weight_decay must be a finite number >= 0"),
    (dict(time_budget=-5.0), "time_budget must be a number of seconds >= 0"),
])
def test_out_of_range_arguments_are_refused_before_training(kwargs, message):
    x, y = synthetic(16)
    model = tiny_model()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(ValueError, match=message):
        fit(model, (x, y), epochs=2, batch_size=8, device="cpu", progress=False, **kwargs)
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # not a step was taken


def test_clip_grad_zero_means_no_clipping():
    x, y = synthetic(32)
    a = fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, clip_grad=0)
    b = fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, clip_grad=None)
    assert a.train_loss == b.train_loss and a.step_grad_norm == b.step_grad_norm


def _sha(path):
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_fit_refuses_to_replace_another_runs_checkpoint(tmp_path):
    """T2 of the instructor trial: fit(checkpoint=another model's file) replaced it. Now it refuses, unchanged."""
    x, y = synthetic(32)
    path = tmp_path / "other.pt"
    fit(tiny_model(dim=32), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, checkpoint=path)
    sha = _sha(path)
    with pytest.raises(FileExistsError, match=r"holds another run \(config.dim: checkpoint 32, now 16.*"
                                              r"overwrite=True to replace it"):
        fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, checkpoint=path)
    with pytest.raises(FileExistsError, match=r"n_train: checkpoint 32, now 16"):  # same model, other data
        fit(tiny_model(dim=32), (x[:16], y[:16]), epochs=1, batch_size=16, device="cpu", progress=False,
            checkpoint=path)
    (tmp_path / "notes.pt").write_text("my notes")
    with pytest.raises(FileExistsError, match="is not a minivit checkpoint"):
        fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False,
            checkpoint=tmp_path / "notes.pt")
    with pytest.raises(IsADirectoryError, match="is a folder"):
        fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, checkpoint=tmp_path)
    assert _sha(path) == sha and (tmp_path / "notes.pt").read_text() == "my notes"
    fit(tiny_model(dim=32), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, checkpoint=path)  # same run
    fit(tiny_model(), (x, y), epochs=1, batch_size=16, device="cpu", progress=False, checkpoint=path, overwrite=True)
    from minivit.checkpoint import read_checkpoint
    assert read_checkpoint(path)["config"]["dim"] == 16


def test_training_loop_reads_in_parts():
    """fit is the run around train_one_epoch, which calls train_step: each part is short and documented."""
    import inspect

    from minivit.train import loop, train_one_epoch, train_step
    for fn, most in ((train_step, 25), (train_one_epoch, 60), (fit, 150)):
        assert fn.__doc__ and len(inspect.getsource(fn).splitlines()) <= most, fn.__name__
    assert "train_one_epoch(" in inspect.getsource(fit) and "train_step(" in inspect.getsource(train_one_epoch)
    assert loop.fit is fit


def test_train_step_is_one_adamw_step():
    x, y = synthetic(8)
    model = tiny_model()
    nn.init.normal_(model.head.weight)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    before = model.head.weight.detach().clone()
    from minivit.train import train_step
    loss, logits, norm = train_step(model, opt, x.float() / 255, y, clip_grad=1.0)
    assert loss.ndim == 0 and logits.shape == (8, 3) and norm > 0 and not loss.requires_grad
    assert not torch.equal(before, model.head.weight)
