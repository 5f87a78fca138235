"""The paper's few-shot linear evaluation: a closed-form ridge regression on frozen features.

Introduced in 09_masked_patch_prediction.ipynb.

§4.1, *Metrics*: "Few-shot accuracies are obtained by solving a regularized least-squares regression problem that
maps the (frozen) representation of a subset of training images to {−1, 1}^K target vectors. This formulation
allows us to recover the exact solution in closed form." The paper uses it where fine-tuning would be too costly
(Fig. 4, Fig. 8, Table 8) and to choose the settings of masked patch prediction (App. B.1.2).

    f_train = frozen_features(model, few_labelled)             # (n, D)
    f_test = frozen_features(model, test)                      # (m, D)
    predicted = few_shot_linear(f_train, few_labelled.labels, f_test, num_classes=10)   # (m,)

Our choices, where the paper says no more: features are standardised with the training subset's mean and
standard deviation; the intercept is not penalised (so the {−1, 1}^K targets give exactly the predictions of
one-hot {0, 1}^K targets: the two differ by an affine map of the targets); the penalty `l2` is 1.

Shape legend: n labelled (training) examples, m test examples, D features, K classes.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

__all__ = ["few_shot_linear", "frozen_features", "pixel_baseline", "pixel_baseline_path"]

# benchmarks/linear_pixels.py's committed results: they come with a clone of the course, not with an installed wheel
RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"


@torch.no_grad()
def frozen_features(model, data, *, pool: str = "model", batch_size: int = 512, device=None,
                    normalize=None) -> torch.Tensor:
    """Features float32 (N, D) on the CPU of a `minivit.ViT`'s frozen representation of `data` (an ImageDataset
    or an (images, labels) pair, normalised as `minivit.train.fit` does).

    pool: "model" -- the model's own pooled representation before its head (`forward_head(pre_logits=True)`:
    the [class] token, or the mean of the patch tokens for `pool="mean"` models); "patch-mean" -- the mean of the
    output patch tokens whatever the model pools (a model whose [class] token was never trained, e.g. after
    masked patch prediction). The model ends in the train/eval mode it started in.
    """
    from .train import _autocast, _unpack
    if pool not in ("model", "patch-mean"):
        raise ValueError(f"pool must be 'model' or 'patch-mean', got {pool!r}")
    if not hasattr(model, "forward_features"):
        raise ValueError(f"expected a minivit.ViT (with forward_features), got {type(model).__name__}")
    images, _, norm = _unpack(data, normalize)
    device = torch.device(device) if device is not None else next(model.parameters()).device
    prefix = getattr(model, "num_prefix_tokens", 1)
    was_training = model.training
    model.eval()
    try:
        out = []
        for i in range(0, len(images), batch_size):
            x = norm(images[i:i + batch_size].to(device))  # (b, C, H, W) float
            with _autocast(device):
                tokens = model.forward_features(x)  # (b, 1 + N, D)
                f = model.forward_head(tokens, pre_logits=True) if pool == "model" else tokens[:, prefix:].mean(1)
            out.append(f.float().cpu())  # (b, D)
    finally:
        model.train(was_training)
    return torch.cat(out)


def few_shot_linear(f_train: torch.Tensor, y_train: torch.Tensor, f_test: torch.Tensor, *,
                    num_classes: int | None = None, l2: float = 1.0) -> torch.Tensor:
    """Predicted classes int64 (m,) of the test features from a ridge regression of the training features
    (n, D), labels int64 (n,), onto {−1, 1}^K targets, solved in closed form (float64).

    num_classes: K (default: the largest training label + 1). l2: the ridge penalty (> 0) on the weights of the
    standardised features; the intercept is not penalised.
    """
    if f_train.ndim != 2 or f_test.ndim != 2 or f_train.shape[1] != f_test.shape[1]:
        raise ValueError(f"expected features (n, D) and (m, D), got {tuple(f_train.shape)} and {tuple(f_test.shape)}")
    if y_train.ndim != 1 or len(y_train) != len(f_train) or y_train.dtype != torch.int64:
        raise ValueError(f"expected int64 labels ({len(f_train)},), got {y_train.dtype} {tuple(y_train.shape)}")
    k = int(y_train.max()) + 1 if num_classes is None else int(num_classes)
    if not l2 > 0 or int(y_train.min()) < 0 or int(y_train.max()) >= k:
        raise ValueError(f"expected l2 > 0 and labels in [0, {k}), got l2={l2} and labels "
                         f"{int(y_train.min())}..{int(y_train.max())}")
    a, b = f_train.double(), f_test.double()
    mu, sd = a.mean(0), a.std(0, unbiased=False).clamp_min(1e-6)  # (D,)
    a, b = (a - mu) / sd, (b - mu) / sd  # standardised; a's columns have mean 0
    targets = 2 * torch.nn.functional.one_hot(y_train, k).double() - 1  # (n, K) in {-1, 1}
    t_mean = targets.mean(0)  # (K,): the unpenalised intercept
    n, d = a.shape
    if n >= d:  # the primal system, D x D
        w = torch.linalg.solve(a.T @ a + l2 * torch.eye(d, dtype=torch.float64), a.T @ (targets - t_mean))  # (D, K)
        return (b @ w + t_mean).argmax(-1)  # (m,)
    # fewer examples than features (raw pixels): the same weights from the n x n system, w = aᵀ (a aᵀ + l2 I)⁻¹ t
    alpha = torch.linalg.solve(a @ a.T + l2 * torch.eye(n, dtype=torch.float64), targets - t_mean)  # (n, K)
    return ((b @ a.T) @ alpha + t_mean).argmax(-1)  # (m,)


def pixel_baseline_path(data: str, folder: str | Path | None = None) -> Path:
    """Where benchmarks/linear_pixels.py writes, and `pixel_baseline` reads, `data`'s linear map of the pixels."""
    return Path(folder if folder is not None else RESULTS) / (
        "linear_pixels.json" if data == "cifar10" else f"linear_pixels_{data}.json")


def pixel_baseline(data: str, *, side: int | None = None, train_images: int | None = None,
                   folder: str | Path | None = None) -> dict | None:
    """The committed linear map of `data`'s raw pixels, the anchor of a notebook's accuracies: a row of
    benchmarks/linear_pixels.py's results (`few_shot_linear` on the pixels in [0, 1], its penalty chosen on held-out
    training images, scored on the whole test split): {"side", "train_images", "test_acc", "test_images", "l2", ...}.

    side: the images' side in pixels (default: as stored); train_images: the training set's size (default: the
    largest row, the whole split). None where the results are not in this installation (they come with a clone of
    the course) or hold no such row. Not a measurement of this run: its accuracy is kept, not its answers.
    """
    from .data import SHAPES
    if data not in SHAPES:
        raise ValueError(f"expected one of {sorted(SHAPES)}, got {data!r}")
    path = pixel_baseline_path(data, folder)
    if not path.exists():
        return None
    native = SHAPES[data][-1]
    rows = [{"side": native, **r} for r in json.loads(path.read_text())["rows"]]  # rows of a native-size run lack it
    rows = [r for r in rows if r["side"] == (native if side is None else side)
            and (train_images is None or r["train_images"] == train_images)]
    return max(rows, key=lambda r: r["train_images"]) if rows else None
