"""The course's model zoo: long-trained course models, committed with the package, checked by SHA-256.

    model = minivit.zoo.load("vit-nano4-cifar10")        # a ViT-Nano/4 trained 50 epochs on CIFAR-10, eval mode
    minivit.zoo.record("vit-nano4-cifar10")["test"]      # its measured test accuracy, time, machine, file hash

    python -m minivit.zoo list [--json]                  # every entry: model, data, recipe, accuracy, SHA-256
    python -m minivit.zoo verify [NAME ...]              # re-measure on the full test split; exit 1 on a mismatch
    python -m minivit.zoo train NAME [--out DIR]         # reproduce an entry's run into a new folder

The notebooks train their own models live, within minutes on a CPU; such models are too weak to show some of
the paper's effects (08's attention distances, 09's pre-training gain). The zoo holds the same course models
trained for an hour: the notebooks load them to draw those lessons, saying which model each number comes from.

Files: `minivit/zoo/weights/<name>.safetensors` (safetensors: tensors only, nothing executable), inside the
package so that an installed minivit has them offline. `records.json` beside this file holds what each was
measured at. `load` refuses a file whose SHA-256 differs from its record, and never downloads anything.

Introduced in 08_inspecting_vit.ipynb (then 09_masked_patch_prediction.ipynb).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path

import torch
from torch import nn

from .registry import ENTRIES, RUNS, Entry, Run, entries_of, get_entry

WEIGHTS = Path(__file__).parent / "weights"  # the committed files
RECORDS = Path(__file__).parent / "records.json"  # {name: what its run measured}
FORMAT = "minivit-zoo/1"  # the "format" entry of every file's metadata


def file_sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def records() -> dict[str, dict]:
    """{name: record} of every entry with committed weights: accuracy, SHA-256, time and machine of its run."""
    return json.loads(RECORDS.read_text()) if RECORDS.exists() else {}


def record(name: str) -> dict:
    """The record of entry `name`; a clear error if it has none yet (not trained and committed)."""
    get_entry(name)
    recs = records()
    if name not in recs:
        raise FileNotFoundError(f"zoo model {name!r} has no committed weights yet; train it with "
                                f"`python -m minivit.zoo train {name}` (see `python -m minivit.zoo list`)")
    return recs[name]


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


def load_file(path, entry: Entry, sha256: str | None = None) -> nn.Module:
    """The model of `entry` filled with the weights at `path` (eval mode, CPU). With `sha256`, the file's bytes
    must hash to it, or nothing is loaded (ValueError)."""
    from safetensors.torch import load
    from .training import build
    data = Path(path).read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path}: SHA-256 {hashlib.sha256(data).hexdigest()} differs from the recorded {sha256} "
                         f"for zoo model {entry.name!r}; the file was changed or replaced, so it is not loaded "
                         "(restore it with `git checkout`, or retrain the entry)")
    model = build(entry)
    model.load_state_dict(load(data))
    return model


def path_of(name: str) -> Path:
    """Where entry `name`'s committed file lies."""
    return WEIGHTS / record(name)["file"]


def load(name: str, device=None) -> nn.Module:
    """The zoo model `name` in eval mode on `device` (default CPU): a `ViT`, a `CifarResNet`, or for an MPP entry a
    `MaskedPatchPrediction` (its ViT is `.vit`). Reads only the committed file, after checking its SHA-256."""
    rec = record(name)
    path = WEIGHTS / rec["file"]
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing (zoo model {name!r}); restore it with `git checkout`")
    return load_file(path, get_entry(name), rec["sha256"]).to(device or "cpu")


def verify(names=None, *, log=print) -> list[dict]:
    """Load each committed model (all of them by default), re-measure it on its full test split on the CPU and
    compare with its record: [{"name", "recorded", "measured", "ok"}]. The count of right answers must be equal."""
    from .training import measure
    names = list(names) if names else sorted(records())
    out, tests = [], {}
    for name in names:
        entry, rec = get_entry(name), record(name)
        key = (entry.run.dataset, entry.run.image_size)
        if key not in tests:
            from .training import _data
            tests[key] = _data(entry.run, "test")
        m = measure(entry, load(name), tests[key])
        ok = m["correct"] == rec["test"]["correct"] and m["n"] == rec["test"]["n"]
        out.append({"name": name, "recorded": rec["test"], "measured": m, "ok": ok})
        log(f"{'ok ' if ok else 'MISMATCH'} {name}: {m['correct']:,}/{m['n']:,} = {m['accuracy']:.2%} "
            f"(recorded {rec['test']['correct']:,}/{rec['test']['n']:,} = {rec['test']['accuracy']:.2%})")
    return out


__all__ = ["ENTRIES", "RUNS", "Entry", "Run", "entries_of", "file_sha256", "get_entry", "load", "load_file",
           "path_of", "record", "records", "save_weights", "verify"]
