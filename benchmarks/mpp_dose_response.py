"""MPP dose-response: how much fine-tuning gains from masked patch prediction, against pre-training length.

    python benchmarks/mpp_dose_response.py                 # the zoo's MPP checkpoints (5, 10, 20, 40 epochs), 5 seeds
    python benchmarks/mpp_dose_response.py --seeds 0 1 2 --lengths 10 40

Notebook 09's fine-tuning comparison, run from every MPP checkpoint of the zoo's one long pre-training
(`python -m minivit.zoo list`: mpp-vit-nano4-cifar10-e5 ... -e40; the weights after epochs 5, 10, 20 of a 40-epoch
schedule, so those are mid-schedule, not short schedules of their own) and from scratch. Each start is fine-tuned
with notebook 09's quick recipe (ViT-Nano/4 on 500 labelled CIFAR-10 images, 240 steps of 32, AdamW lr 2e-3, flips)
for every seed, and scored on the whole 10,000-image test split. The gain of each start over scratch is paired by
seed and image: `minivit.stats.paired_se` gives its standard error with both parts (seeds, test images). The
pretext colour accuracy of each checkpoint (on 500 held-out test images, as 09) is listed beside it.

Notebook 09 runs the 40-epoch arm itself (in the quick profile seed 0, with this script's start, recipe and seed; in
the full profile 5 seeds, from its own pre-training); this script gives the whole curve, which takes ~25 fine-tuning
runs (about 7 min on 2 quiet CPU cores). Prints a table and writes benchmarks/results/mpp_dose_response.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import minivit  # noqa: E402
from minivit import zoo  # noqa: E402
from minivit.data import load_dataset, stratified_subset  # noqa: E402
from minivit.pretrain import evaluate_mpp  # noqa: E402
from minivit.stats import paired_se  # noqa: E402
from minivit.train import predict  # noqa: E402
from minivit.vit import ViT  # noqa: E402

from results_io import save_result  # noqa: E402


def finetune_recipe():
    """Notebook 09's quick fine-tuning recipe (its section 6)."""
    return minivit.recipes.get("cifar10", "quick").with_(n_per_class=50, epochs=15, batch_size=32, lr=2e-3,
                                                         warmup_epochs=1.0, augment="flip")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--lengths", type=int, nargs="+", default=list(zoo.RUNS["mpp-vit-nano4-cifar10"].keep))
    parser.add_argument("--out", default="mpp_dose_response", help="result name under benchmarks/results/")
    a = parser.parse_args(argv)
    if len(a.seeds) < 2:
        parser.error("at least 2 seeds (the gain's standard error needs them)")
    recipe = finetune_recipe()
    train, test = load_dataset("cifar10", "train"), load_dataset("cifar10", "test")
    labelled, held_out = recipe.training_set(train), stratified_subset(test, 50)
    starts = {0: None, **{e: zoo.load(f"mpp-vit-nano4-cifar10-e{e}") for e in a.lengths}}
    right, rows, t0 = {}, [], time.perf_counter()
    load0 = os.getloadavg()
    for epochs, mpp in starts.items():
        right[epochs] = []
        for seed in a.seeds:
            torch.manual_seed(seed)
            model = ViT.from_preset("ViT-Nano/4")
            if mpp is not None:
                model.load_state_dict(mpp.vit.state_dict())
            recipe.fit(model, labelled, None, seed=seed, device="cpu")
            right[epochs].append(predict(model, test, device="cpu").argmax(-1) == test.labels)  # (10000,)
        acc = [r.float().mean().item() for r in right[epochs]]
        row = {"mpp_epochs": epochs, "acc_by_seed": acc, "mean_acc": sum(acc) / len(acc),
               "pretext_acc": evaluate_mpp(mpp, held_out, device="cpu")["acc"] if mpp is not None else None}
        if epochs:
            d = paired_se(right[epochs], right[0])
            row.update(gain=d.mean, gain_se=d.se, gain_seed_se=d.seed_se, gain_test_se=d.test_se)
        rows.append(row)
        gain = f"{row['gain']:+.2%} ± {row['gain_se']:.2%}" if epochs else "(baseline)"
        pretext = f"{row['pretext_acc']:.1%}" if mpp is not None else "-"
        print(f"MPP {epochs:>2} epochs: pretext colour acc {pretext:>6}; fine-tuned {row['mean_acc']:.2%} "
              f"(seeds {', '.join(f'{x:.2%}' for x in acc)}); gain over scratch {gain}", flush=True)
    out = {"benchmark": "mpp_dose_response", "seeds": a.seeds, "test_images": len(test),
           "labelled_images": len(labelled), "recipe": recipe.to_dict(), "rows": rows,
           "seconds": round(time.perf_counter() - t0, 1), "threads": torch.get_num_threads(),
           "loadavg_before": load0, "loadavg_after": os.getloadavg(), "torch": torch.__version__,
           "machine": platform.machine(), "zoo": {f"e{e}": zoo.record(f"mpp-vit-nano4-cifar10-e{e}")["sha256"]
                                                   for e in a.lengths}}
    save_result(a.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
