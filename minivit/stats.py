"""Statistics for comparing trained models: McNemar's paired test and standard errors.

Introduced in 03_transformer_encoder.ipynb, where McNemar's z is derived.

Two models evaluated on the same n test images are *paired*: what matters is where they disagree. Let b be the
number of images only model A gets right and c those only B gets right. If A and B were equally good, each of the
b + c discordant images would be A's with probability 1/2, so b ~ Binomial(b + c, 1/2), with mean (b + c)/2 and
variance (b + c)/4, and

    z = (b - (b + c)/2) / sqrt((b + c)/4) = (b - c) / sqrt(b + c)

is about standard normal (McNemar's test, in its normal approximation). z > 3 says A is right more often than B on
*these images* beyond chance. It tests two trained models, not a method: a second seed of the same training can
land elsewhere. To compare methods, train each with several seeds and use `paired_se` (introduced in
09_masked_patch_prediction.ipynb): the mean paired difference with both sources of error -- how much the training
varies between seeds, and which test images happened to be drawn, a part that all seeds share and that `mean_se`
over the seeds' differences alone never sees.

    r = mcnemar(pred_a == labels, pred_b == labels)     # r.only_a, r.only_b, r.z
    p, se = acc, binomial_se(acc, n)                    # one accuracy's standard error
    z = unpaired_z(acc_a, n_a, acc_b, n_b)              # two accuracies whose answers are not both at hand
    mean, se = mean_se(gains_over_seeds)                # the mean of a few values and its s.e.
    d = paired_se(right_a_by_seed, right_b_by_seed)     # d.mean, d.seed_se, d.test_se, d.se (both parts)
    d.mean > paired_bar(d, seeds) * d.se                # a difference, judged with Student's t
    g = gap_change(a1, b1, a2, b2)                      # does A - B change between two settings? g.change, g.se, g.z
    d = paired_gap_change(a1s, b1s, a2s, b2s)           # the same over seeds (lists): a PairedSE, for paired_bar
    r = new_run_t(acc, accs_over_seeds)                 # is one run what another seed would give? |r.t| < r.bar

A claim that a gap *changes* (with the budget, with the data) is a claim about an interaction: `gap_change` tests it
on the same test images, image by image (introduced in 05_scaling.ipynb), instead of reading it from two verdicts
(one significant, one not), which says nothing about the difference between them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

__all__ = ["GapChange", "McNemar", "NewRun", "PairedSE", "binomial_se", "gap_change", "mcnemar", "mean_se",
           "new_run_t", "paired_bar", "paired_gap_change", "paired_se", "unpaired_z"]


class McNemar(NamedTuple):
    """McNemar's test of model A against model B on the same examples."""

    only_a: int  # examples only A gets right (b)
    only_b: int  # examples only B gets right (c)
    z: float  # (b - c) / sqrt(b + c); 0.0 when the models never disagree


def _as_bool(x, name: str) -> torch.Tensor:
    t = torch.as_tensor(x)
    if t.dtype != torch.bool or t.ndim != 1:
        raise ValueError(f"{name} must be a 1-D bool tensor (one entry per test example: right or not), "
                         f"got {t.dtype} of shape {tuple(t.shape)}")
    return t


def mcnemar(correct_a, correct_b) -> McNemar:
    """McNemar's z of A over B from their per-example correctness, bool (n,) each, on the same n examples."""
    a, b = _as_bool(correct_a, "correct_a"), _as_bool(correct_b, "correct_b")
    if a.shape != b.shape:
        raise ValueError(f"correct_a and correct_b must cover the same examples, got {len(a)} and {len(b)}")
    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    z = (only_a - only_b) / math.sqrt(only_a + only_b) if only_a + only_b else 0.0
    return McNemar(only_a, only_b, z)


def binomial_se(p: float, n: int) -> float:
    """Standard error sqrt(p (1 - p) / n) of an accuracy `p` measured on `n` independent examples."""
    if not 0.0 <= float(p) <= 1.0 or int(n) < 1:
        raise ValueError(f"expected an accuracy p in [0, 1] and n >= 1 examples, got p={p} and n={n}")
    return math.sqrt(float(p) * (1 - float(p)) / int(n))


def unpaired_z(acc_a: float, n_a: int, acc_b: float, n_b: int) -> float:
    """z of accuracy `acc_a` (on `n_a` examples) over `acc_b` (on `n_b` other or unpaired examples): the difference
    over the hypotenuse of the two binomial standard errors. For an anchor whose answers are not kept (a committed
    baseline's accuracy): where both models' answers on the same images are at hand, `mcnemar` is the sharper test."""
    se = math.hypot(binomial_se(acc_a, n_a), binomial_se(acc_b, n_b))
    return (acc_a - acc_b) / se if se > 0 else 0.0 if acc_a == acc_b else math.copysign(math.inf, acc_a - acc_b)


def mean_se(values) -> tuple[float, float]:
    """(mean, standard error of the mean) of a few values, e.g. paired differences over seeds: std (n - 1) / sqrt(n)."""
    v = torch.as_tensor(values, dtype=torch.float64).flatten()
    if len(v) < 2 or not torch.isfinite(v).all():
        raise ValueError(f"expected at least 2 finite values, got {v.tolist()}")
    return v.mean().item(), (v.std() / math.sqrt(len(v))).item()


class PairedSE(NamedTuple):
    """A method's mean paired difference in accuracy over seeds, with its standard error in two parts."""

    mean: float  # mean over seeds of accuracy(A) - accuracy(B), A and B trained with the same seed
    seed_se: float  # the part from the training itself: one seed's model better or worse on every image
    test_se: float  # the part from the test images: which images were drawn, and each one's luck per seed
    se: float  # sqrt(seed_se^2 + test_se^2)


def paired_se(right_a, right_b) -> PairedSE:
    """The paired difference of method A over method B, from per-seed correctness on the same n test images.

    right_a, right_b: one bool (n,) tensor per seed each (seed s of A paired with seed s of B), on the same images.
    Write d[s, i] = (A right) - (B right) for seed s on image i. The test part is sd over images of d averaged over
    seeds, / sqrt(n): it holds both which images were drawn (shared by every seed, so `mean_se` over the seeds'
    differences never sees it) and each image's seed-to-seed luck, and it is estimated from n values. The seed part
    is the variance of the per-seed means of d less what that luck already explains (the within-image variance
    over seeds / n), / S: a seed whose model is better on all images. Estimated from only S values, it is
    the rougher of the two; it is usually the smaller too."""
    if len(right_a) != len(right_b) or len(right_a) < 2:
        raise ValueError(f"expected the same number (>= 2) of seeds for A and B, got {len(right_a)} and {len(right_b)}")
    a = torch.stack([_as_bool(r, "right_a[s]") for r in right_a]).double()  # (S, n)
    b = torch.stack([_as_bool(r, "right_b[s]") for r in right_b]).double()  # (S, n)
    if a.shape != b.shape:
        raise ValueError(f"right_a and right_b must cover the same test images, got {tuple(a.shape)} and {tuple(b.shape)}")
    return _over_seeds(a - b)


def _over_seeds(d: torch.Tensor) -> PairedSE:
    """`paired_se`'s mean and two-part standard error of d (S, n): one paired difference per seed and test image."""
    seeds, n = d.shape
    per_seed = d.mean(dim=1)  # (S,)
    luck = d.var(dim=0).mean().item()  # within-image variance over seeds, averaged over images
    seed_se = math.sqrt(max(0.0, per_seed.var().item() - luck / n) / seeds)
    test_se = (d.mean(dim=0).std() / math.sqrt(n)).item()
    return PairedSE(per_seed.mean().item(), seed_se, test_se, math.hypot(seed_se, test_se))


def paired_bar(d: PairedSE, seeds: int, level: float = 0.975) -> float:
    """How many standard errors `d.mean` must clear for a one-sided test at `level`: Student's t quantile with the
    Welch-Satterthwaite degrees of freedom of se^2 = seed_se^2 + test_se^2, the seed part estimated from `seeds`
    values (seeds - 1 degrees of freedom), the test part from thousands of images (taken as known). With no seed
    part it is the normal quantile (1.96 at 0.975); where the seed part is all of it, t with seeds - 1 degrees of
    freedom (4.30 for 3 seeds): a few seeds cannot carry a claim that their spread decides."""
    from scipy.stats import norm, t
    if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 2:
        raise ValueError(f"seeds must be an int >= 2 (the seeds behind d's seed part), got {seeds!r}")
    if not 0.5 < level < 1:
        raise ValueError(f"level must lie in (0.5, 1), the one-sided confidence, got {level!r}")
    if d.seed_se == 0:
        return float(norm.ppf(level))
    df = d.se ** 4 / (d.seed_se ** 4 / (seeds - 1))
    return float(t.ppf(level, df))


class GapChange(NamedTuple):
    """The change of a paired gap, accuracy(A) - accuracy(B), from a first setting to a second, on the same images."""

    first: float  # the gap in the first setting (a fraction: 0.05 is 5 points)
    second: float  # the gap in the second setting
    change: float  # second - first
    se: float  # its standard error over the n test images
    z: float  # change / se; 0.0 when no image changes sides


def gap_change(right_a1, right_b1, right_a2, right_b2) -> GapChange:
    """Does model A's lead over model B change between two settings (two budgets, two data sizes)? Four bool (n,)
    tensors: which of the same n test images A and B get right in the first setting, then in the second.

    Per image i, g_i = [(A2 right) - (B2 right)] - [(A1 right) - (B1 right)]; the change of the gap is the mean of
    g and its standard error sd(g) / sqrt(n), the same images in every term, so what is shared cancels. It tests
    these four trained models on these images (one seed each), not the methods behind them; and like McNemar's z,
    it says nothing about a second seed."""
    a1, b1, a2, b2 = (_as_bool(r, name).double() for r, name in
                      ((right_a1, "right_a1"), (right_b1, "right_b1"), (right_a2, "right_a2"), (right_b2, "right_b2")))
    if not a1.shape == b1.shape == a2.shape == b2.shape:
        raise ValueError("expected the four tensors on the same test images, got shapes "
                         f"{[tuple(t.shape) for t in (a1, b1, a2, b2)]}")
    if len(a1) < 2:
        raise ValueError(f"expected at least 2 test images, got {len(a1)}")
    first, second = a1 - b1, a2 - b2  # (n,) each
    g = second - first  # (n,)
    se = (g.std() / math.sqrt(len(g))).item()
    change = g.mean().item()
    return GapChange(first.mean().item(), second.mean().item(), change, se, change / se if se > 0 else 0.0)


def paired_gap_change(right_a1, right_b1, right_a2, right_b2) -> PairedSE:
    """`gap_change` over seeds: does method A's lead over method B change between two settings? Four lists of one
    bool (n,) tensor per seed (seed s of every list trained with the same seed), all on the same n test images.

    Per seed s and image i, d[s, i] = [(A2 right) - (B2 right)] - [(A1 right) - (B1 right)]; the result is
    `paired_se`'s: the mean change of the gap with a seed part and a test part of its standard error, so that
    `paired_bar(result, seeds)` judges it with Student's t. Introduced in 05_scaling.ipynb."""
    lists = {"right_a1": right_a1, "right_b1": right_b1, "right_a2": right_a2, "right_b2": right_b2}
    if len({len(v) for v in lists.values()}) != 1 or len(right_a1) < 2:
        raise ValueError("expected the same number (>= 2) of seeds in all four lists, got "
                         f"{[len(v) for v in lists.values()]}")
    a1, b1, a2, b2 = (torch.stack([_as_bool(r, f"{k}[s]") for r in v]).double() for k, v in lists.items())
    if not a1.shape == b1.shape == a2.shape == b2.shape:
        raise ValueError("expected all four on the same test images, got shapes "
                         f"{[tuple(t.shape) for t in (a1, b1, a2, b2)]}")
    return _over_seeds((a2 - b2) - (a1 - b1))


class NewRun(NamedTuple):
    """Where a new run's value lies among a few earlier seeds' values of the same training."""

    t: float  # (value - mean) / (sd * sqrt(1 + 1/k)): Student's t with k - 1 degrees of freedom if the run is alike
    df: int  # k - 1
    bar: float  # the two-sided 99% bound on |t| for a run like the earlier ones: t quantile 0.995 with df


def new_run_t(value: float, earlier) -> NewRun:
    """Is `value` (one run's accuracy, say on another machine) what another seed of the same training would give?
    `earlier`: that training's values over k >= 2 seeds. The prediction interval's t: a new draw from the seeds'
    normal distribution lies within mean +- bar * sd * sqrt(1 + 1/k) 99 times in 100. Floating point that differs
    between machines changes a run as another seed does, so this is how a run is checked against a record
    (introduced in 05_scaling.ipynb)."""
    from scipy.stats import t as student_t
    v = torch.as_tensor(earlier, dtype=torch.float64).flatten()
    if len(v) < 2 or not torch.isfinite(v).all() or not math.isfinite(float(value)):
        raise ValueError(f"expected a finite value and at least 2 finite earlier values, got {value} and {v.tolist()}")
    k, sd = len(v), v.std().item()
    scale = sd * math.sqrt(1 + 1 / k)
    diff = float(value) - v.mean().item()
    t = diff / scale if scale > 0 else (0.0 if diff == 0 else math.copysign(math.inf, diff))
    return NewRun(t, k - 1, float(student_t.ppf(0.995, k - 1)))
