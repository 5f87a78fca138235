"""The zoo's files: safetensors weights written atomically, never replacing a file, and checked by SHA-256.

Introduced in 08_inspecting_vit.ipynb (then 09_masked_patch_prediction.ipynb).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

from torch import nn

from ..sources import sha256 as _sha256
from .registry import Entry

FORMAT = "minivit-zoo/1"  # the format named in every file's metadata


file_sha256 = _sha256  # a weights file's SHA-256 (hex), compared exactly with its record


def save_weights(path, model: nn.Module, entry: Entry) -> Path:
    """Write `model`'s weights as a safetensors file at `path` (atomically; refuses to replace a file)."""
    from safetensors.torch import save
    path = Path(path)
    if path.exists():
        raise FileExistsError(f"{path} exists; the zoo never replaces a file: remove it or write elsewhere")
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    # one metadata key: safetensors writes several in no fixed order, which would change the file's SHA-256
    meta = {"minivit": json.dumps({"format": FORMAT, "entry": entry.to_dict()}, sort_keys=True)}
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(save(tensors, metadata=meta))
        os.chmod(tmp, 0o644)
        os.link(tmp, path)  # fails if `path` appeared meanwhile: never replaces
    finally:
        Path(tmp).unlink(missing_ok=True)
    return path


def read_weights(path, sha256: str | None = None, name: str = "") -> dict:
    """The state dict in the safetensors file at `path`. With `sha256`, the file's bytes must hash to it, or nothing
    is read (ValueError)."""
    from safetensors.torch import load
    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path}: SHA-256 {hashlib.sha256(data).hexdigest()} differs from the recorded {sha256} "
                         f"for zoo model {name!r}; the file was changed or replaced, so it is not loaded "
                         "(restore it with `git checkout`, or retrain the entry)")
    return load(data)
