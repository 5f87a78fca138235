"""The optimisation recipe's pieces: AdamW parameter groups and the learning-rate schedules.

- `param_groups`: weight decay on weight matrices only (not on norms, biases, the [class] token or the
  position embeddings);
- `lr_factor`: linear warm-up, then cosine decay to 0, over a number of steps;
- `budget_lr_factor`: the same shape laid over a wall-clock budget instead of steps.

`minivit.train.fit` uses them; they are pure functions, so a notebook can draw or check them. Introduced in
03_transformer_encoder.ipynb (the first training run); 04_training_a_vit.ipynb takes the recipe apart.
"""

from __future__ import annotations

import math

from torch import nn


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW groups: decay on weight matrices; none on norms, biases, [class] token, position embeddings."""
    skip = set(getattr(model, "no_weight_decay", lambda: set())())
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            plain = name.split(".")[-1]
            (no_decay if p.ndim <= 1 or name in skip or plain in ("cls_token", "pos_embed") else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def budget_lr_factor(progress: float, warmup_fraction: float) -> float:
    """Multiplier of the base lr when the schedule runs on the clock: `progress` = elapsed / time budget in [0, 1].
    Linear warm-up over the first `warmup_fraction` of the budget, then cosine to 0 when the budget is spent."""
    if progress < warmup_fraction:
        return max(progress / warmup_fraction, 1e-3)
    rest = (progress - warmup_fraction) / max(1e-12, 1.0 - warmup_fraction)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, rest)))


def lr_factor(step: int, total_steps: int, warmup_steps: int) -> float:
    """Multiplier of the base lr at `step`: linear warm-up 1/w .. 1 over `warmup_steps`, then cosine to 0."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


def step_epochs(phases: list[dict], n_steps: int) -> list[float]:
    """Where each of a run's first `n_steps` optimizer steps ends on the epoch axis (1.0: the end of the first
    epoch), for a run in `phases`: dicts with "epochs" and "steps_per_epoch" (`History.phases`), each phase with its
    own steps per epoch (e.g. fewer images in a fine-tuning phase)."""
    out, start = [], 0.0
    for p in phases:
        per = p["steps_per_epoch"] or 1
        out.extend(start + (i + 1) / per for i in range(min(n_steps - len(out), round(p["epochs"] * per))))
        start += p["epochs"]
    return out
