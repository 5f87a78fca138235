"""Time to accuracy: train a minivit ViT from scratch under a wall-clock budget, then evaluate.

    python benchmarks/time_to_accuracy.py cifar10          # target: >= 60% test top-1 in 5 min, 2-core CPU
    python benchmarks/time_to_accuracy.py fashion-mnist    # target: >= 88% test top-1 in 1 min, 2-core CPU
    python benchmarks/time_to_accuracy.py cifar10-gpu      # target: >= 90% in 10 min on one H100 (not yet measured)

Each recipe is fixed and seeded: the schedule is planned for `epochs` epochs; the budget is a hard
stop (`fit(time_budget=...)`), after which the model is evaluated on the full test split as it is.
Timing starts when training starts (data loading, which reads a cache in ~1 s, is not counted) and
includes everything fit does (the test split is not evaluated during training). The machine's load
(os.getloadavg) is recorded before and after, since other processes change the result.
Prints a table and writes benchmarks/results/time_to_accuracy_<recipe>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from minivit import data as mdata  # noqa: E402
from minivit.config import ViTConfig  # noqa: E402
from minivit.profile import default_device, get_profile  # noqa: E402
from minivit.train import evaluate, fit  # noqa: E402
from minivit.vit import ViT  # noqa: E402

from results_io import save_result  # noqa: E402  (benchmarks/ is on sys.path when a script runs)


# Each recipe: the data set, the model, fit's arguments, the budget in seconds and the target accuracy.
RECIPES = {
    "cifar10": dict(
        dataset="cifar10", budget=300.0, target=0.60, augment="flip",
        config=ViTConfig(image_size=32, patch_size=4, in_channels=3, num_classes=10,
                         dim=64, depth=4, heads=2, mlp_dim=128),
        fit=dict(epochs=5, batch_size=512, lr=4e-3, weight_decay=0.05, warmup_epochs=0.3,
                 label_smoothing=0.0, clip_grad=1.0)),
    "fashion-mnist": dict(
        dataset="fashion-mnist", budget=60.0, target=0.88, augment="none",
        config=ViTConfig(image_size=28, patch_size=7, in_channels=1, num_classes=10,
                         dim=64, depth=2, heads=4, mlp_dim=128),
        fit=dict(epochs=6, batch_size=256, lr=5e-3, weight_decay=0.05, warmup_epochs=0.3,
                 label_smoothing=0.0, clip_grad=1.0)),
    "cifar10-gpu": dict(  # the full recipe for one H100: NOT YET MEASURED
        dataset="cifar10", budget=600.0, target=0.90, augment="basic",
        config=ViTConfig(image_size=32, patch_size=4, in_channels=3, num_classes=10,
                         dim=384, depth=8, heads=6, mlp_dim=1152, dropout=0.0),
        fit=dict(epochs=200, batch_size=512, lr=1e-3, weight_decay=0.05, warmup_epochs=5,
                 label_smoothing=0.1, clip_grad=1.0, compile=True)),
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recipe", choices=sorted(RECIPES))
    p.add_argument("--budget", type=float, default=None, help="override the recipe's budget (seconds)")
    p.add_argument("--no-budget", action="store_true",
                   help="run the planned epochs to the end (checks the recipe's accuracy on a slow or busy machine)")
    p.add_argument("--epochs", type=int, default=None, help="override the recipe's planned epochs")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default=None, help="default: CUDA > MPS > CPU")
    p.add_argument("--progress", action="store_true", help="show progress bars")
    p.add_argument("--no-save", action="store_true", help="do not write benchmarks/results/")
    a = p.parse_args(argv)
    r = RECIPES[a.recipe]
    device = torch.device(a.device) if a.device else default_device()
    budget = None if a.no_budget else (a.budget or r["budget"])
    fit_args = dict(r["fit"], **({"epochs": a.epochs} if a.epochs else {}))
    if device.type != "cuda":
        fit_args.pop("compile", None)
    train = mdata.load_dataset(r["dataset"], "train")
    test = mdata.load_dataset(r["dataset"], "test")
    torch.manual_seed(a.seed)
    model = ViT(r["config"])
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    history = fit(model, train, None, augment=mdata.make_augment(r["dataset"], r["augment"]), device=device,
                  seed=a.seed, time_budget=budget, progress=a.progress, **fit_args)
    train_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    result = evaluate(model, test, batch_size=1024, device=device)
    eval_s = time.perf_counter() - t1
    load_after = os.getloadavg()
    ok = result["acc"] >= r["target"] and budget is not None and train_s <= budget * 1.01
    out = {
        "recipe": a.recipe, "dataset": r["dataset"], "config": r["config"].to_dict(),
        "fit": fit_args, "augment": r["augment"], "seed": a.seed, "budget_s": budget,
        "train_s": round(train_s, 1), "eval_s": round(eval_s, 1), "test_acc": result["acc"],
        "test_loss": result["loss"], "target_acc": r["target"], "met_target": ok,
        "epochs_done": len(history), "stopped": history.stopped,
        "images_per_s": [round(x) for x in history.images_per_s],
        "loadavg_before": [round(x, 2) for x in load_before], "loadavg_after": [round(x, 2) for x in load_after],
        "device": get_profile(device=device).describe(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "history": history.to_dict(),
        "command": "python benchmarks/time_to_accuracy.py " + " ".join(sys.argv[1:] if argv is None else argv),
    }
    print(f"{'recipe':<14} {'params':>8} {'epochs':>6} {'train s':>8} {'budget s':>8} {'test acc':>8} {'target':>6}  load(1m) before/after")
    print(f"{a.recipe:<14} {sum(q.numel() for q in model.parameters()):>8,} {len(history):>6} {train_s:>8.1f} {budget or float('inf'):>8.0f} "
          f"{result['acc']:>8.4f} {r['target']:>6.2f}  {load_before[0]:.2f}/{load_after[0]:.2f}  {'MET' if ok else 'NOT MET'}")
    if history.stopped:
        print("stopped early:", history.stopped)
    if not a.no_save:
        save_result(f"time_to_accuracy_{a.recipe}", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
