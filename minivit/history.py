"""The `History` of a training run: per-epoch metrics and the learning rate and gradient norm of every step.

Introduced in 03_transformer_encoder.ipynb (returned by `minivit.train.fit`); JSON-friendly, so a run's
history travels in checkpoints and result files.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

_METRICS = ("epoch", "train_loss", "train_acc", "val_loss", "val_acc", "lr", "images_per_s", "epoch_time")


@dataclass
class History:
    """Per-epoch metrics of a run; `val_*` are None without a validation set. JSON-friendly."""

    epoch: list = field(default_factory=list)  # 1-based epoch number
    train_loss: list = field(default_factory=list)  # mean training loss (with label smoothing)
    train_acc: list = field(default_factory=list)  # training top-1 accuracy, on augmented images
    val_loss: list = field(default_factory=list)  # validation cross-entropy (no smoothing)
    val_acc: list = field(default_factory=list)  # validation top-1 accuracy
    lr: list = field(default_factory=list)  # learning rate of the epoch's last step
    images_per_s: list = field(default_factory=list)  # training throughput, all ranks together
    epoch_time: list = field(default_factory=list)  # seconds of training (validation excluded)
    stopped: str | None = None  # why the run ended before `epochs` ("time budget", ...) or None
    step_lr: list = field(default_factory=list)  # learning rate of every optimizer step, in order
    steps_per_epoch: int | None = None  # optimizer steps in a full epoch (to place step_lr on the epoch axis)
    step_grad_norm: list = field(default_factory=list)  # global gradient norm of every step, before clipping
    loaded_from: str | None = None  # the checkpoint this run was loaded from (fit_or_load), None if trained now
    phases: list = field(default_factory=list)  # a run in phases (`then`): one dict per phase, [] for one phase

    def append(self, **row) -> None:
        for k in _METRICS:
            getattr(self, k).append(row[k])

    def __len__(self) -> int:
        return len(self.epoch)

    def rows(self) -> list[dict]:
        return [{k: getattr(self, k)[i] for k in _METRICS} for i in range(len(self))]

    @property
    def final(self) -> dict:
        """The last epoch's metrics."""
        if not len(self):
            raise ValueError("history is empty: no epoch has finished")
        return self.rows()[-1]

    def best(self, metric: str = "val_acc") -> dict:
        """The epoch with the highest `metric` (lowest for a `*loss`)."""
        if metric not in _METRICS[1:]:
            raise ValueError(f"unknown metric {metric!r}; expected one of {_METRICS[1:]}")
        rows = [r for r in self.rows() if r[metric] is not None]
        if not rows:
            raise ValueError(f"history has no {metric} values (no epochs, or no validation set)")
        sign = 1 if metric.endswith("loss") else -1
        return min(rows, key=lambda r: sign * r[metric])

    def then(self, other: "History") -> "History":
        """This run followed by `other`, a later phase of the same training (e.g. fine-tuning at a higher
        resolution, `minivit.recipes.Recipe.then`): epochs numbered on, every list concatenated, `phases` joined
        (each phase's epochs and steps per epoch, and what its recipe recorded, e.g. image_size); `steps_per_epoch`
        stays the first phase's, `stopped` is the last one's."""
        out = History.from_dict({**self.to_dict(), "phases": self.phase_list() + other.phase_list(),
                                 "loaded_from": None})
        for k in _METRICS[1:] + ("step_lr", "step_grad_norm"):
            getattr(out, k).extend(getattr(other, k))
        out.epoch.extend(len(self) + e for e in other.epoch)
        out.stopped = other.stopped
        return out

    def phase_list(self) -> list[dict]:
        """`phases`, or for a run of one phase the one dict it would have (its epochs and steps per epoch)."""
        return self.phases or [{"epochs": len(self), "steps_per_epoch": self.steps_per_epoch}]

    def step_epochs(self) -> list[float]:
        """Where each optimizer step ends on the epoch axis (1.0: the end of the first epoch), phase by phase."""
        from .optim import step_epochs
        return step_epochs(self.phase_list(), len(self.step_lr))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "History":
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown History fields {sorted(unknown)}; expected {[f.name for f in fields(cls)]}")
        return cls(**{k: list(v) if isinstance(v, (list, tuple)) else v for k, v in d.items()})

    def plot(self, **kwargs):
        """Loss, accuracy and learning-rate curves (a matplotlib Figure, drawn by `minivit.viz.plot_history`)."""
        from .viz import plot_history
        return plot_history(self, **kwargs)
