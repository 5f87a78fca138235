"""Checkpoints: save and restore a training run, atomically and `weights_only`-safe.

Introduced in 03_transformer_encoder.ipynb (the CLI and checkpoints reuse `fit`; see README).

A checkpoint is a dict of tensors and plain containers only (so `torch.load(...,
weights_only=True)` reads it): the model's state dict, its config as a plain dict,
the optimizer and scheduler state, the History as a dict, the number of finished
epochs, the RNG states (torch, CUDA, the shuffling generator) and `run`, the facts
a resumed run must share (batch size, training-set size, number of processes).
It is written to a temporary file in the same folder, then renamed over the target,
so an interrupted save never leaves a truncated checkpoint.

    save_checkpoint("runs/x/last.pt", model, optimizer=opt, history=h.to_dict(), epoch=3)
    state = load_checkpoint("runs/x/last.pt", model, optimizer=opt)  # restores in place
    model = load_model("runs/x/last.pt")                              # a ViT from the stored config

A leaf of the package: it imports no other minivit module at import time (`load_model` imports the model
classes when called), so every other module may import it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch
from torch import nn

FORMAT = "minivit-checkpoint/1"  # the "format" entry of every checkpoint this module writes


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module inside DistributedDataParallel and/or torch.compile wrappers."""
    while hasattr(model, "module") or hasattr(model, "_orig_mod"):  # DDP / torch.compile wrappers
        model = getattr(model, "module", None) or model._orig_mod
    return model


def _config_dict(model: nn.Module):
    config = getattr(unwrap(model), "config", None)
    if config is None:
        return None
    if hasattr(config, "to_dict"):
        return config.to_dict()
    from dataclasses import asdict
    return asdict(config)


def atomic_save(obj, path) -> Path:
    """`torch.save(obj)` to `path` via a temp file in the same folder + os.replace: never a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp creates 0600
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _differences(ours: dict, theirs: dict, prefix: str = "", ours_label: str = "now") -> list[str]:
    """'<prefix><key>: checkpoint <theirs>, <ours_label> <ours>' for every key whose values differ."""
    return [f"{prefix}{k}: checkpoint {theirs.get(k)!r}, {ours_label} {ours.get(k)!r}"
            for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)]


def get_rng_state(generator: torch.Generator | None = None) -> dict:
    """torch's global CPU RNG, every CUDA device's RNG and `generator`'s state, as tensors."""
    state = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if generator is not None:
        state["generator"] = generator.get_state()
    return state


def set_rng_state(state: dict, generator: torch.Generator | None = None) -> None:
    """Restore what `get_rng_state` saved (CUDA only when present here and in `state`)."""
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    if generator is not None and "generator" in state:
        generator.set_state(state["generator"])


def save_checkpoint(path, model: nn.Module, *, optimizer=None, scheduler=None, history: dict | None = None,
                    epoch: int = 0, rng: dict | None = None, run: dict | None = None) -> Path:
    """Write a checkpoint to `path` atomically (temp file in the same folder + os.replace)."""
    path = Path(path)
    state = {
        "format": FORMAT,
        "model": unwrap(model).state_dict(),
        "config": _config_dict(model),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "history": history,
        "epoch": int(epoch),
        "rng": rng,
        "run": run,
    }
    return atomic_save(state, path)


def read_checkpoint(path, map_location="cpu") -> dict:
    """The raw checkpoint dict, loaded with `weights_only=True`; a clear error for other files."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint at {path}")
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as e:
        raise ValueError(f"{path} is not a readable checkpoint ({type(e).__name__}: {e})") from e
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        got = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path} is not a minivit checkpoint: expected format {FORMAT!r}, got {got!r}")
    return state


def check_compatible(model: nn.Module, state: dict, path="checkpoint") -> None:
    """Raise ValueError naming the config fields, parameter names or shapes that differ."""
    problems = []
    mine, theirs = _config_dict(model), state.get("config")
    if mine is not None and theirs is not None:
        problems += _differences(mine, theirs, prefix="config.", ours_label="model")
    own = unwrap(model).state_dict()
    saved = state["model"]
    missing, unexpected = sorted(set(own) - set(saved)), sorted(set(saved) - set(own))
    if missing:
        problems.append(f"missing from the checkpoint: {', '.join(missing)}")
    if unexpected:
        problems.append(f"not in the model: {', '.join(unexpected)}")
    for k in sorted(set(own) & set(saved)):
        if tuple(own[k].shape) != tuple(saved[k].shape):
            problems.append(f"{k}: checkpoint shape {tuple(saved[k].shape)}, model shape {tuple(own[k].shape)}")
    if problems:
        raise ValueError(f"{path} does not match the model:\n  " + "\n  ".join(problems))


def load_checkpoint(path, model: nn.Module | None = None, *, optimizer=None, scheduler=None,
                    run: dict | None = None, map_location="cpu") -> dict:
    """Read `path` and restore it into `model`, `optimizer`, `scheduler` (those given); return the dict.

    Raises ValueError naming what differs when the model's config, parameter names or shapes, or the
    `run` facts (batch size, data size, processes) do not match the checkpoint's.
    """
    state = read_checkpoint(path, map_location)
    if run is not None and state.get("run") is not None and state["run"] != run:
        raise ValueError(f"cannot resume from {path}: the run differs ({'; '.join(_differences(run, state['run']))})")
    if model is not None:
        check_compatible(model, state, path)
        unwrap(model).load_state_dict(state["model"])
    if optimizer is not None:
        if state.get("optimizer") is None:
            raise ValueError(f"{path} holds no optimizer state")
        optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        if state.get("scheduler") is None:
            raise ValueError(f"{path} holds no scheduler state")
        scheduler.load_state_dict(state["scheduler"])
    return state


def load_model(path, device=None) -> nn.Module:
    """A `ViT` built from the checkpoint's config, with its weights, in eval mode.

    Hybrids too, when their config names the backbone (the hybrid presets, or `HybridEmbed` around one of
    `minivit.hybrid.BACKBONES`). For any other model -- a hybrid around a CNN of your own, a `CifarResNet` --
    build the model yourself and call `load_checkpoint(path, model)`; the error says so.
    """
    from .config import ViTConfig
    from .vit import ViT
    state = read_checkpoint(path)
    fix = "build the model yourself and call minivit.load_checkpoint(path, model)"
    if state.get("config") is None:
        raise ValueError(f"{path} stores no model config; {fix}")
    try:
        config = ViTConfig.from_dict(state["config"])
    except (TypeError, ValueError) as e:
        raise ValueError(f"{path} stores a config minivit.ViT cannot take ({e}); {fix}") from e
    model = ViT(config)
    try:
        check_compatible(model, state, path)
    except ValueError as e:
        custom = config.backbone is None and any(k.startswith("patch_embed.backbone.") for k in state["model"])
        why = "it holds a hybrid whose config names no backbone (a CNN of your own), so " if custom else ""
        raise ValueError(f"{e}\n{why}load_model cannot rebuild it: {fix}") from e
    model.load_state_dict(state["model"])
    return model.to(device or "cpu").eval()
