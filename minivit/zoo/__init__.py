"""The course's model zoo: long-trained course models, committed with the package, checked by SHA-256.

    model = minivit.zoo.load("vit-nano4-cifar10")        # a ViT-Nano/4 trained 50 epochs on CIFAR-10, eval mode
    minivit.zoo.record("vit-nano4-cifar10")["test"]      # its measured test accuracy, time, machine, file hash

    model, right = minivit.zoo.right_answers("vit-nano4-cifar10", test)   # (N,) bool, checked against the record

    python -m minivit.zoo list [--json]                  # every entry: model, data, recipe, accuracy, SHA-256
    python -m minivit.zoo verify [NAME ...]              # re-measure on the full test split; exit 1 when more
                                                         # than 1 in 10,000 predictions differ from the record
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

import json
from pathlib import Path

import torch
from torch import nn

from .files import FORMAT, file_sha256, read_weights, save_weights
from .registry import ENTRIES, RUNS, Entry, Run, entries_of, get_entry
from . import training
from .training import build, load_file, measure

WEIGHTS = Path(__file__).parent / "weights"  # the committed files
RECORDS = Path(__file__).parent / "records.json"  # {name: what its run measured}
# A re-measurement may differ from the record in at most this share of its predictions (1 in 10,000): floating
# point differs between CPUs, and one prediction in 320,000 was seen to flip on another machine of the same kind.
# The file's SHA-256 is compared exactly; the tolerance is only for what the CPU computes from it.
FLIP_TOLERANCE = 1e-4
# On another copy of the data (a user's download of the official files: other pixels, another order) the images
# differ, so predictions cannot be compared one by one: a model's accuracy is re-measured on that copy and may differ
# from its record by at most COPY_SHIFT (accuracy, as a fraction). Measured (benchmarks/results/zoo_other_copy.json,
# benchmarks/zoo_other_copy.py), every zoo model: CIFAR-10 re-encoded at JPEG quality 90 moved none by more than 0.7
# points, Imagenette's JPEG copy for its WebP one 0.1 (the mosaics 1.6: another order also draws other mosaics), and
# a copy much lossier than the course's own (CIFAR-10 at JPEG quality 50; the course's is 75) at most 9.0. What the
# bound is there to catch -- a split that is not the test split, labels of other images -- falls to chance (10%),
# 31.9 points or more below every zoo classifier's record. 15 points lies between the two.
COPY_SHIFT = 0.15


def allowed_flips(n: int) -> int:
    """How many of n predictions may differ from the record (`FLIP_TOLERANCE`, rounded down)."""
    return int(n * FLIP_TOLERANCE)


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


def _same_copy(data, test: dict) -> bool:
    """Whether `data` is the recorded test split itself (the same images and labels, by fingerprint)."""
    return len(data) == test["n"] and training.fingerprint(data) == test.get("data")


def right_answers(name: str, data, *, log=print) -> tuple[nn.Module, torch.Tensor]:
    """A classifier of the zoo and which images of `data` it gets right: (the model, on the CPU in eval mode;
    bool (N,)). On the recorded test split itself (the same images and labels, by fingerprint) these are the
    record's right answers, kept when it was measured and re-measured exactly by `verify`; on other data they are
    predicted on the CPU in batches of `training.EVAL_BATCH` as `verify` measures. Where `data` is a whole test
    split of another copy of the data (as long as the recorded one, other images), `log` gets both accuracies, and
    a ValueError says the data is not that test split (or the file not the recorded model) only when they differ by
    more than a change of copy explains (`COPY_SHIFT`). For the paired tests (McNemar) of the notebooks that load it."""
    from ..train import predict
    entry, rec = get_entry(name), record(name)
    if entry.arch == "mpp":
        raise ValueError(f"zoo model {name!r} is a masked-patch-prediction model, not a classifier; "
                         f"measure it with minivit.pretrain.evaluate_mpp")
    model, t = load(name), rec["test"]
    if "right" in t and _same_copy(data, t):
        return model, training.unpack_right(t["right"], t["n"])  # the file's SHA-256 was checked by `load`
    right = predict(model, data, training.EVAL_BATCH, "cpu").argmax(-1) == data.labels  # (N,)
    if len(data) == t["n"]:  # the whole test split of another copy
        acc = right.float().mean().item()
        shift = acc - t["accuracy"]
        text = (f"zoo model {name!r} on this copy of the test split: {acc:.2%}; its record, on the course's copy "
                f"({_copy_name(t)}): {t['accuracy']:.2%} ({100 * shift:+.2f} points")
        if abs(shift) > COPY_SHIFT:
            raise ValueError(f"{text}, more than the {100 * COPY_SHIFT:.0f} points a change of copy explains): "
                             f"not the recorded model, or not its test split")
        log(f"{text}; a change of copy explains up to {100 * COPY_SHIFT:.0f})")
    return model, right


def _describe(info: dict) -> str:
    """A copy of the data in words: its origin and file (`minivit.data.copy_info`)."""
    return f"{info.get('origin') or 'unknown'} files, {info.get('file') or 'torchvision files'}"


def _copy_name(test: dict) -> str:
    """The copy a record was measured on, in words."""
    c = test.get("copy") or {}
    return c.get("file") or f"fingerprint {test.get('data')}"


def verify(names=None, *, log=print) -> list[dict]:
    """Load each committed model (all of them by default), re-measure it on its full test split on the CPU and
    compare with its record: [{"name", "recorded", "measured", "copy", "differ", "allowed", "ok"}].

    On the recorded copy of the data (`copy` "recorded": the same test images, by fingerprint; for an MPP model,
    whose record keeps no fingerprint, assumed) a classifier's `differ` counts the test images whose
    right-or-wrong changed, else the difference of the counts of right answers; "ok" when at most
    `allowed_flips(n)` differ (`FLIP_TOLERANCE`: floating point differs between CPUs). On another copy (`copy`
    "other": other pixels and order) images cannot be paired: `differ` is the difference of the counts, and "ok"
    when the accuracies differ by at most `COPY_SHIFT` (`allowed` is then that many images)."""
    from ..data import copy_info
    names = list(names) if names else sorted(records())
    out, tests = [], {}
    for name in names:
        entry, rec = get_entry(name), record(name)
        key = (entry.run.dataset, entry.run.image_size, entry.run.train_images == "mosaics")  # the same test images
        if key not in tests:
            tests[key] = training._data(entry.run, "test")
        m, t = measure(entry, load(name), tests[key]), rec["test"]
        differ = abs(m["correct"] - t["correct"])
        if m["n"] != t["n"]:
            copy, allowed, ok, differ = "other", 0, False, m["n"]  # not the recorded test split at all
        elif m.get("data", t.get("data")) == t.get("data"):
            copy, allowed = "recorded", allowed_flips(t["n"])
            if "right" in t:  # a classifier's record keeps which images it gets right: compare them one by one
                flipped = training.unpack_right(m["right"], m["n"]) != training.unpack_right(t["right"], t["n"])
                differ = max(differ, int(flipped.sum()))
            ok = differ <= allowed
        else:
            copy, allowed = "other", int(COPY_SHIFT * t["n"])
            ok = differ <= allowed
        out.append({"name": name, "recorded": t, "measured": m, "copy": copy, "differ": differ, "allowed": allowed,
                    "ok": ok})
        where = ("the recorded copy" if copy == "recorded" else
                 f"another copy ({_describe(copy_info(entry.run.dataset, 'test'))}, test fingerprint "
                 f"{m.get('data')}; recorded on the course's {_copy_name(t)})")
        log(f"{'ok ' if ok else 'MISMATCH'} {name}: {m['correct']:,}/{m['n']:,} = {m['accuracy']:.2%} "
            f"(recorded {t['correct']:,}/{t['n']:,} = {t['accuracy']:.2%}) on {where}; {differ:,} of {m['n']:,} "
            f"{'predictions' if copy == 'recorded' else 'right answers'} differ, at most {allowed:,} may")
    return out


__all__ = ["COPY_SHIFT", "ENTRIES", "FLIP_TOLERANCE", "FORMAT", "RUNS", "Entry", "Run", "allowed_flips", "build", "entries_of", "file_sha256", "get_entry", "load",
           "load_file", "measure", "path_of", "read_weights", "record", "records", "right_answers", "save_weights",
           "verify"]
