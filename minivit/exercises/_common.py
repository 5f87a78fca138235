"""The helpers that the checks of `minivit.exercises` share: `_as_int` (an int, or a float or 0-d tensor with an
exact integer value), `_Shortcut`, `_without(fn, paths, hint)` (the package's own solution refuses to run while the
answer does) and `_images` (seeded random images). Importable from `minivit.exercises` as before the split."""

from __future__ import annotations

import math
import numbers
from contextlib import contextmanager

import torch

from ..grading import Shortcut, without


def _as_int(value) -> int | None:
    """`value` as an int when it is one, or a float (or 0-d tensor) with an exact integer value; else None."""
    if isinstance(value, torch.Tensor) and value.ndim == 0 and value.dtype != torch.bool:
        value = value.item()
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return int(value)
    return None


_Shortcut = Shortcut  # the name the notebooks' and the kit's checks have used


@contextmanager
def _without(fn, paths, hint: str):
    """Within the block, the callables at `paths` ("module.name", e.g. "minivit.optim.param_groups") refuse to run:
    a call raises `Shortcut("solve it without <path>: <hint>")`, which `_run` reports as a failed case -- an
    exercise whose answer is one call to the package's own solution is not solved. The refusal is made on the
    callables themselves (see `minivit.grading.without`), so it holds however the answer `fn` holds them: a name,
    a default argument, a `functools.partial`, a container, an object. Put only the answer's call in the block: a
    check's expected values may come from these very functions."""
    with without(paths, hint):
        yield


def _images(b: int, c: int, h: int, w: int, seed: int) -> torch.Tensor:
    return torch.rand(b, c, h, w, generator=torch.Generator().manual_seed(seed))
