"""Time to accuracy: train a minivit ViT from scratch under a budget in reference seconds, then evaluate.

    python benchmarks/time_to_accuracy.py cifar10          # target: >= 70% test top-1 in 300 reference s (CPU)
    python benchmarks/time_to_accuracy.py fashion-mnist    # target: >= 90% test top-1 in 60 reference s (CPU)
    python benchmarks/time_to_accuracy.py cifar10-hybrid   # target: >= 75% test top-1 in 300 reference s (CPU)
    python benchmarks/time_to_accuracy.py cifar10-hybrid-lowres   # the same, 75% of the budget at 16 px (a trial)
    python benchmarks/time_to_accuracy.py cifar10-gpu      # target: >= 90% in 10 min on one H100 (wall-clock)
    python benchmarks/time_to_accuracy.py --calibrate-only # measure this machine's reference rate, train nothing

Budgets are in reference seconds, so that a result does not depend on how fast the shared machine happens to be
that hour. Before training, the run measures a fixed reference workload (`reference_workload.py`: training steps
of a plain-PyTorch ViT-Nano/4, none of minivit's code) on the training's device with its threads, and scales the
budget to wall-clock seconds: budget_wall = budget_ref * reference_rate / measured_rate, with the rate recorded on
the reference machine (`reference_workload.REFERENCE_RATES`, or `--reference-rate`). It measures the workload again
after training and records both; the budget comes from the measurement before training, the one after only shows
how much the machine's speed drifted during the run. A device without a reference rate (e.g. CUDA, for now) keeps
the budget in wall-clock seconds unless --reference-rate is given.

Each recipe is fixed and seeded: a `minivit.recipes.Recipe` (data, optimisation, augmentation), a model
config, a budget and optional resolution phases. Its learning-rate schedule runs on the clock
(`fit(schedule="budget")`): the warm-up and cosine decay are laid over the (wall-clock) budget, so the rate reaches
0 when the budget is spent whatever the machine's speed, and the budget is a hard stop; the recipe's `epochs`
is only an upper bound. With phases, the budget is split: e.g. most of it at 16 px (16 tokens with 4x4
patches), then 24 px, then the full 32 px -- between phases `ViT.set_image_size` interpolates the position
embedding in 2D, as the paper does to fine-tune at a higher resolution (§3.2), and each phase has its own
warm-up and cosine. The model is then evaluated on the full test split at the full resolution.

Timing starts when training starts (loading the cached data set, about a second, one-time library imports and
the calibration are not counted) and includes everything between: resizing the data for each phase,
`torch.compile`, the DataLoader workers' start. The final test evaluation is timed separately (`eval_s`). The
machine's load (os.getloadavg) is recorded before and after, since other processes change the result.
Prints a table and writes benchmarks/results/time_to_accuracy_<recipe>.json.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minivit import data as mdata  # noqa: E402
from minivit.config import ViTConfig  # noqa: E402
from collections import OrderedDict  # noqa: E402

from torch import nn  # noqa: E402

from minivit.cnn import init_resnet_, make_stage  # noqa: E402
from minivit.hybrid import HybridEmbed, resnet_s4_backbone  # noqa: E402
from minivit.profile import default_device, get_profile  # noqa: E402
from minivit.recipes import Recipe  # noqa: E402
from minivit.train import evaluate, fit  # noqa: E402
from minivit.vit import ViT  # noqa: E402

import reference_workload  # noqa: E402  (benchmarks/ is on sys.path when a script runs)
from reference_workload import measure_rate, scaled_budget  # noqa: E402
from results_io import save_result  # noqa: E402


# Each benchmark: a training recipe, a model, the budget in reference seconds, the target accuracy and the resolution
# phases (fraction of the budget, image size), last phase at the data set's own size; `build` makes the model
# from the config (default: the pure ViT).


def _hybrid(config: ViTConfig) -> ViT:
    """The hybrid of 06_hybrid.ipynb: a ResNet stem (stride 4, 8x8 grid of 64 channels) instead of 4x4 patches."""
    return ViT(config, patch_embed=HybridEmbed(resnet_s4_backbone(config.in_channels), image_size=config.image_size,
                                               in_channels=config.in_channels, dim=config.dim))


def _light_stem(in_channels: int) -> nn.Sequential:
    """A lighter stride-4 stem (a trial for the hybrid): (B, C, 32, 32) -> (B, 64, 8, 8).

    conv1 3x3 stride 2 (32 channels), bn1, relu         (B, 32, 16, 16)
    layer1: two BasicBlocks 32 -> 64, the first stride 2 (B, 64, 8, 8)

    Nothing runs at the full 32 x 32 but the first conv, where `resnet_s4_backbone` runs a conv and a block.
    """
    layers = OrderedDict(conv1=nn.Conv2d(in_channels, 32, kernel_size=3, stride=2, padding=1, bias=False),
                         bn1=nn.BatchNorm2d(32), relu=nn.ReLU(inplace=True),
                         layer1=make_stage(32, 64, num_blocks=2, stride=2))
    return init_resnet_(nn.Sequential(layers))


def _hybrid_light(config: ViTConfig) -> ViT:
    """The same Transformer behind `_light_stem` (its 1x1 projection to D is HybridEmbed's)."""
    return ViT(config, patch_embed=HybridEmbed(_light_stem(config.in_channels), image_size=config.image_size,
                                               in_channels=config.in_channels, dim=config.dim))


class _PatchDropoutViT(ViT):
    """PatchDropout (Liu et al., 2023, "PatchDropout: Economizing Vision Transformers Using Patch Dropout"): in
    training, each image keeps a random `keep` share of its patch tokens after the position embeddings are added (so
    a kept token still says where it came from), the [class] token always; evaluation sees every token. Applied only
    to images of the sizes in `at_sizes` (a trial for issue 39: the 32-px phase at about half the cost per step)."""

    def __init__(self, config: ViTConfig, keep: float, at_sizes: tuple[int, ...]):
        super().__init__(config)
        self.keep, self.at_sizes = keep, at_sizes

    def forward_features(self, images: torch.Tensor) -> torch.Tensor:
        x = self.embed(images)  # (B, N+1, D)
        if self.training and self.keep < 1 and images.shape[-1] in self.at_sizes:
            b, t, d = x.shape
            k = max(1, round((t - 1) * self.keep))
            kept = torch.rand(b, t - 1, device=x.device).argsort(dim=1)[:, :k] + 1  # (B, k): patch tokens, 1-based
            x = torch.cat([x[:, :1], x.gather(1, kept[..., None].expand(-1, -1, d))], dim=1)  # (B, k+1, D)
        return self.norm(self.blocks(x))  # (B, k+1, D) in training, (B, N+1, D) otherwise


BENCHMARKS = {
    "cifar10": dict(
        # since 2026-12-02 notebook 04's findings: flips only (random crops slowed a run this short) and batch 256
        # (until then batch 512, lr 6e-3, crop + flip: 59.00% on 2026-11-27)
        recipe=Recipe("tta-cifar10", "cifar10", n_per_class=None, epochs=1000, batch_size=256, lr=3e-3,
                      warmup_epochs=50, label_smoothing=0.1, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.70, phases=[(0.75, 16), (0.25, 32)]),
    # Two trials of "cifar10" (issue 39's candidates; benchmarks/README.md reports them): progressive resizing with
    # a third phase, and PatchDropout in the 32-px phase, which then gets a larger share of the budget.
    "cifar10-3phase": dict(
        recipe=Recipe("tta-cifar10-3phase", "cifar10", n_per_class=None, epochs=1000, batch_size=256, lr=3e-3,
                      warmup_epochs=50, label_smoothing=0.1, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.70, phases=[(0.55, 16), (0.25, 24), (0.2, 32)]),
    "cifar10-patchdrop": dict(
        recipe=Recipe("tta-cifar10-patchdrop", "cifar10", n_per_class=None, epochs=1000, batch_size=256, lr=3e-3,
                      warmup_epochs=50, label_smoothing=0.1, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.70, phases=[(0.6, 16), (0.4, 32)],
        build=lambda config: _PatchDropoutViT(config, keep=0.5, at_sizes=(32,))),
    # A trial of the scaling sweep's finding (notebook 05, minivit.sweep): at about 5 TFLOPs of training the most
    # accurate of its models is the narrowest ViT (D 32, 4 layers), trained for more epochs; the same recipe as
    # "cifar10" with that model.
    "cifar10-narrow": dict(
        recipe=Recipe("tta-cifar10-narrow", "cifar10", n_per_class=None, epochs=1000, batch_size=256, lr=3e-3,
                      warmup_epochs=50, label_smoothing=0.1, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=32, depth=4, heads=2, mlp_dim=64),
        budget=300.0, target=0.70, phases=[(0.75, 16), (0.25, 32)]),
    "fashion-mnist": dict(
        # batch 128 since 2026-12-02 (more steps in the minute; until then batch 256: 87.01% on 2026-11-27)
        recipe=Recipe("tta-fashion-mnist", "fashion-mnist", n_per_class=None, epochs=100, batch_size=128, lr=3e-3,
                      warmup_epochs=5, label_smoothing=0.0, augment="none"),
        config=ViTConfig(image_size=28, patch_size=7, in_channels=1, num_classes=10, dim=64, depth=2, heads=4,
                         mlp_dim=128),
        budget=60.0, target=0.90, phases=[(1.0, 28)]),
    "cifar10-hybrid": dict(  # the same Transformer as "cifar10", its patches replaced by a CNN stem (06_hybrid)
        recipe=Recipe("tta-cifar10-hybrid", "cifar10", n_per_class=None, epochs=1000, batch_size=512, lr=4e-3,
                      warmup_epochs=50, label_smoothing=0.0, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.75, phases=[(1.0, 32)], build=_hybrid),
    # Two trials for the hybrid (benchmarks/README.md reports both): a lighter stem, and the pure ViT's
    # low-resolution phase (75% of the budget at 16 px, where the stem gives a 4 x 4 grid, then 32 px).
    "cifar10-hybrid-light": dict(
        recipe=Recipe("tta-cifar10-hybrid-light", "cifar10", n_per_class=None, epochs=1000, batch_size=512, lr=4e-3,
                      warmup_epochs=50, label_smoothing=0.0, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.75, phases=[(1.0, 32)], build=_hybrid_light),
    "cifar10-hybrid-lowres": dict(  # batch 256 since 2026-12-02, as "cifar10" (until then 512, lr 4e-3: 67.67%)
        recipe=Recipe("tta-cifar10-hybrid-lowres", "cifar10", n_per_class=None, epochs=1000, batch_size=256, lr=3e-3,
                      warmup_epochs=50, label_smoothing=0.1, augment="flip"),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=64, depth=4, heads=2, mlp_dim=128),
        budget=300.0, target=0.75, phases=[(0.75, 16), (0.25, 32)], build=_hybrid),
    "cifar10-gpu": dict(  # one H100: RandAugment in 12 DataLoader workers, MixUp/CutMix, bf16, torch.compile
        recipe=Recipe("tta-cifar10-gpu", "cifar10", n_per_class=None, epochs=2000, batch_size=500, lr=1e-3,
                      warmup_epochs=100, label_smoothing=0.1, rand_augment=(2, 9), mixup=True, workers=12,
                      extra={"compile": True}),
        config=ViTConfig(image_size=32, patch_size=4, num_classes=10, dim=384, depth=7, heads=8, mlp_dim=768),
        budget=600.0, target=0.90, phases=[(1.0, 32)]),
}


def reference_rate_for(device: torch.device, override: float | None) -> dict | None:
    """The reference rate to scale the budget by: `override` (--reference-rate) if given, else the one recorded
    for this device type in `reference_workload.REFERENCE_RATES`, else None (the budget stays wall-clock)."""
    if override is not None:
        return {"steps_per_s": override, "source": "--reference-rate on the command line"}
    known = reference_workload.REFERENCE_RATES.get(device.type)
    if known is None:
        return None
    return {**known, "source": f"reference_workload.REFERENCE_RATES[{device.type!r}]"}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("benchmark", nargs="?", choices=sorted(BENCHMARKS))
    p.add_argument("--budget", type=float, default=None, help="override the budget (reference seconds)")
    p.add_argument("--reference-rate", type=float, default=None,
                   help="the reference workload's steps/s on the reference machine (default: the recorded one)")
    p.add_argument("--calibrate-only", action="store_true",
                   help="measure this machine's reference rate (steps/s), print it and exit")
    p.add_argument("--calibration-seconds", type=float, default=7.0,
                   help="seconds of timed reference steps per measurement (default 7)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="default: CUDA > MPS > CPU")
    p.add_argument("--progress", action="store_true", help="show progress bars")
    p.add_argument("--no-save", action="store_true", help="do not write benchmarks/results/")
    a = p.parse_args(argv)
    if a.benchmark is None and not a.calibrate_only:
        p.error("name a benchmark, or give --calibrate-only")
    if a.reference_rate is not None and not a.reference_rate > 0:
        p.error("--reference-rate must be > 0")
    if not a.calibration_seconds > 0:
        p.error("--calibration-seconds must be > 0")
    device = torch.device(a.device) if a.device else default_device()
    # AdamW imports torch._dynamo on first use: a one-time ~2 s library import, not training. (importlib: an
    # `import torch._dynamo` statement here would make `torch` a local name of main.)
    importlib.import_module("torch._dynamo")
    if a.calibrate_only:
        c = measure_rate(device, seconds=a.calibration_seconds)
        print(f"reference workload on {device.type}, {c['threads']} thread(s): {c['steps_per_s']:.3f} steps/s "
              f"(median of {c['rounds']} rounds of {c['steps_per_round']} steps: {c['round_steps_per_s']}); "
              f"load(1m) {os.getloadavg()[0]:.2f}")
        return 0
    b = BENCHMARKS[a.benchmark]
    recipe, config, phases = b["recipe"], b["config"], b["phases"]
    budget_ref = a.budget if a.budget is not None else b["budget"]
    fit_args = recipe.fit_kwargs(config.num_classes)
    if device.type != "cuda":
        fit_args.pop("compile", None)
    train = mdata.load_dataset(recipe.dataset, "train")
    test = mdata.load_dataset(recipe.dataset, "test")
    # The machine's speed now sets the wall-clock budget (the measurement after training only reports drift).
    reference = reference_rate_for(device, a.reference_rate)
    before = measure_rate(device, seconds=a.calibration_seconds)
    budget = (scaled_budget(budget_ref, reference["steps_per_s"], before["steps_per_s"]) if reference is not None
              else budget_ref)
    if reference:
        print(f"budget: {budget_ref:g} reference s x {reference['steps_per_s']:.3f} (reference) / "
              f"{before['steps_per_s']:.3f} (measured now) steps/s = {budget:.1f} wall-clock s; "
              f"reference rate from {reference['source']}")
        if reference.get("threads") not in (None, before["threads"]):
            print(f"note: the reference rate was measured with {reference['threads']} thread(s), this run has "
                  f"{before['threads']}")
    else:
        print(f"budget: {budget:g} wall-clock s (no reference rate for {device.type}; give --reference-rate)")
    torch.manual_seed(a.seed)
    model = b.get("build", ViT)(config)
    load_before = os.getloadavg()
    t0, done, histories = time.perf_counter(), 0.0, []
    for fraction, size in phases:  # e.g. most of the budget at a low resolution, then the full one (§3.2)
        done += fraction
        model.set_image_size(size)  # resizes the position embedding (2D interpolation) when the grid changes
        histories.append(fit(model, train.resized(size), None, device=device, seed=a.seed, progress=a.progress,
                             schedule="budget", time_budget=t0 + done * budget - time.perf_counter(), **fit_args))
    train_s = time.perf_counter() - t0
    after = measure_rate(device, seconds=a.calibration_seconds)
    t1 = time.perf_counter()
    result = evaluate(model, test, batch_size=1024, device=device)
    eval_s = time.perf_counter() - t1
    load_after = os.getloadavg()
    ok = result["acc"] >= b["target"] and train_s <= budget * 1.01
    drift = after["steps_per_s"] / before["steps_per_s"] - 1
    calibration = {
        "workload": before["workload"], "threads": before["threads"], "device": before["device"],
        "steps_per_s_before": round(before["steps_per_s"], 4), "steps_per_s_after": round(after["steps_per_s"], 4),
        "drift": round(drift, 4), "budget_from": "the measurement before training",
        **{when: {k: v for k, v in m.items() if k not in ("workload", "threads", "device")}
           for when, m in (("before", before), ("after", after))},
    }
    out = {
        "benchmark": a.benchmark, "recipe": recipe.to_dict(), "config": config.to_dict(), "seed": a.seed,
        "phases": [[f, s] for f, s in phases], "budget_s": round(budget, 1), "budget_ref_s": budget_ref,
        "budget_wall_s": round(budget, 1), "budget_unit": "reference seconds" if reference else "wall-clock seconds",
        "reference_rate": reference, "calibration": calibration,
        "train_s": round(train_s, 1),
        "eval_s": round(eval_s, 1), "test_acc": result["acc"], "test_loss": result["loss"], "target_acc": b["target"],
        "met_target": ok, "epochs_done": [len(h) for h in histories], "stopped": [h.stopped for h in histories],
        "images_per_s": [[round(x) for x in h.images_per_s] for h in histories],
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "device": get_profile(device=device).describe(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "history": [h.to_dict() for h in histories],
        "command": "python benchmarks/time_to_accuracy.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    print(f"{'benchmark':<14} {'params':>10} {'epochs':>6} {'train s':>8} {'budget':>14} {'test acc':>8} "
          f"{'target':>6}  load(1m) before/after")
    budgets = f"{budget_ref:.0f} ref = {budget:.0f}" if reference else f"{budget:.0f} wall"
    print(f"{a.benchmark:<14} {sum(q.numel() for q in model.parameters()):>10,} {sum(len(h) for h in histories):>6} "
          f"{train_s:>8.1f} {budgets:>14} {result['acc']:>8.4f} {b['target']:>6.2f}  "
          f"{load_before[0]:.2f}/{load_after[0]:.2f}  {'MET' if ok else 'NOT MET'}")
    print(f"reference workload: {before['steps_per_s']:.3f} steps/s before training, {after['steps_per_s']:.3f} "
          f"after (drift {drift:+.1%}), {before['threads']} thread(s)")
    for (fraction, size), h in zip(phases, histories):
        print(f"phase: {fraction:.0%} of the budget at {size} px, {len(h)} epoch(s); {h.stopped or 'all epochs done'}")
    if not a.no_save:
        save_result(f"time_to_accuracy_{a.benchmark}" + (f"-seed{a.seed}" if a.seed else ""), out)  # seed 0: no suffix
    return 0


if __name__ == "__main__":
    sys.exit(main())
