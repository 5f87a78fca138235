"""Training: `fit`, `evaluate`, `predict` and the `History` of a run -- and the command line.

Introduced in 03_transformer_encoder.ipynb (the first training run).

    history = fit(model, train, val, epochs=10, batch_size=256, lr=1e-3)
    history.final["val_acc"], history.plot()

Read it in three parts, as timm's `train.py` splits its loop:
- `train_step` (`minivit/train/loop.py`): one optimisation step on one batch -- forward, loss, backward,
  gradient clipping, AdamW step;
- `train_one_epoch`: one pass over the shuffled training set -- augmentation and normalisation on the device,
  `train_step` for every batch, the learning-rate schedule, the time budget, the running loss and accuracy;
- `fit`: the run around them -- its arguments checked, the optimizer and schedule built, a checkpoint resumed or
  guarded, then epochs of `train_one_epoch`, each followed by `evaluate` on the validation set and a checkpoint.

`evaluate` and `predict` (`minivit/train/evaluation.py`) run a model over a data set in batches.

The command line (`minivit.cli`) trains, fine-tunes and evaluates with `fit`:

    python -m minivit.train --preset ViT-Nano/4 --dataset fashion-mnist --epochs 2
    python -m minivit.train --help        # every option, its default, and how runs are named and protected

Shape legend: B batch, C channels, H W image size, K classes.
"""

from ..history import History
from ..optim import budget_lr_factor, lr_factor, param_groups
from .evaluation import _all_sum, _autocast, _dist, _unpack, evaluate, predict
from .loop import fit, train_one_epoch, train_step

__all__ = ["History", "evaluate", "fit", "lr_factor", "budget_lr_factor", "param_groups", "predict",
           "train_one_epoch", "train_step"]
