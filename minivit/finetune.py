"""Fine-tuning from pre-trained weights: new head, new resolution (paper §3.2, Appendix B.1.1).

"Typically, we pre-train ViT on large datasets, and fine-tune to (smaller)
downstream tasks. For this, we remove the pre-trained prediction head and
attach a zero-initialized D × K feedforward layer, where K is the number of
downstream classes. It is often beneficial to fine-tune at higher resolution
than pre-training [...]. When feeding images of higher resolution, we keep the
patch size the same, which results in a larger effective sequence length.
[...] We therefore perform 2D interpolation of the pre-trained position
embeddings, according to their location in the original image." (§3.2)

`load_pretrained(model, source)` does both for a timm `VisionTransformer`
state dict (or a file holding one, or a minivit checkpoint) and a
`minivit.ViT` built at the size and number of classes you fine-tune at:
`pos_embed` is resized with `minivit.resize_pos_embed` (the one piece of code
that resizes, shared with `ViT.set_image_size`), a head of another shape is
replaced by a zero-initialised D x K linear layer (`ViT.reset_classifier`),
and every other tensor must match exactly.

    model = ViT.from_preset("ViT-Ti/16", image_size=384, num_classes=10)
    report = load_pretrained(model, "vit_tiny.safetensors")
    print(report)  # loaded 149 tensors from vit_tiny.safetensors; pos_embed: 14x14 -> 24x24; head: ...

Shape legend: N patches, D width, K classes.

Introduced in 07_finetuning_at_higher_resolution.ipynb.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from .checkpoint import FORMAT, unwrap
from .embeddings import _grid, resize_pos_embed
from .vit import ViT

TORCH_SUFFIXES = (".pth", ".pt", ".bin")
# timm parts minivit.ViT does not have: an MLP pre-logits layer (older checkpoints), a norm after pooling.
NOT_IN_MINIVIT = {"pre_logits.": "timm's MLP pre-logits layer", "fc_norm.": "timm's norm after pooling (fc_norm)"}


@dataclass(frozen=True)
class LoadReport:
    """What `load_pretrained` did: `loaded` tensors copied as they are, `adapted` one line per changed key."""

    source: str  # where the weights came from: a path, or "state dict"
    loaded: int  # tensors copied unchanged
    adapted: tuple[str, ...]  # e.g. "pos_embed: 14x14 -> 24x24", "head: replaced by zero-initialised 192 x 10 ..."

    def __str__(self) -> str:
        return "; ".join([f"loaded {self.loaded} tensors from {self.source}", *self.adapted])


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """The state dict in a timm or minivit weights file, on the CPU.

    `.safetensors` files are read with the `safetensors` package; `.pth`,
    `.pt`, `.bin` (or any other name) with `torch.load(weights_only=True)`,
    unwrapping `{"model": sd}`, `{"state_dict": sd}` and minivit checkpoints.
    """
    return _unwrap_state_dict(_read_raw(path), str(path))


def _read_raw(path: str | os.PathLike):
    """What a weights file holds: a state dict, a wrapper around one, or a minivit checkpoint dict."""
    path = Path(path)
    if path.is_dir():
        raise FileNotFoundError(f"no weights file at {path}: it is a folder (a run's checkpoint is <folder>/checkpoint.pt)")
    if not path.is_file():
        raise FileNotFoundError(f"no weights file at {path}")
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file  # a dependency of minivit (and of timm)

        try:
            return load_file(str(path), device="cpu")
        except Exception as e:
            raise ValueError(f"{path} is not a readable safetensors file ({type(e).__name__}: {e})") from e
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise ValueError(
            f"{path} is not a readable PyTorch weights file (expected a state dict saved with torch.save: "
            f"{', '.join(TORCH_SUFFIXES)}, or .safetensors) ({type(e).__name__}: {e})"
        ) from e
    return state


def _checkpoint_grid(raw) -> tuple[int, int] | None:
    """The patch grid in a minivit checkpoint's config (its image size / patch size), or None."""
    if not isinstance(raw, Mapping) or raw.get("format") != FORMAT or not isinstance(raw.get("config"), Mapping):
        return None
    from .config import ViTConfig
    try:
        return ViTConfig.from_dict(dict(raw["config"])).grid_size
    except (TypeError, ValueError):
        return None


def _unwrap_state_dict(state, label: str) -> dict[str, torch.Tensor]:
    if isinstance(state, Mapping) and state.get("format") == FORMAT:  # minivit.checkpoint.save_checkpoint
        state = state["model"]
    elif isinstance(state, Mapping):
        for wrapper in ("model", "state_dict"):  # the common wrappers {"model": sd} and {"state_dict": sd}
            if isinstance(state.get(wrapper), Mapping):
                state = state[wrapper]
                break
    if not isinstance(state, Mapping) or not state:
        got = "an empty dict" if isinstance(state, Mapping) else f"a {type(state).__name__}"
        raise ValueError(f"{label} holds {got}, not a state dict (a mapping from parameter names to tensors)")
    bad = [str(k) for k, v in state.items() if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
    if bad:
        raise ValueError(f"{label} is not a state dict: these entries are not name -> tensor: {', '.join(bad[:8])}")
    return dict(state)


def _source_grid(num_patches: int, source_grid) -> tuple[tuple[int, int] | None, str | None]:
    """(rows, cols) of the source's patch grid, or (None, the reason it cannot be known)."""
    if num_patches < 1:
        return None, f"the source's pos_embed holds {num_patches} patch positions after the [class] entry"
    if source_grid is not None:
        gh, gw = _grid(source_grid)
        if gh * gw != num_patches:
            return None, f"source_grid {gh}x{gw} has {gh * gw} cells but the source's pos_embed has {num_patches}"
        return (gh, gw), None
    side = math.isqrt(num_patches)
    if side * side == num_patches:
        return (side, side), None
    return None, (f"the source's pos_embed has {num_patches} patch positions, not a square grid; pass "
                  "source_grid=(rows, cols) with rows * cols = " + str(num_patches))


def _structure_hints(own: dict, source: dict) -> list[str]:
    """One line each when the depth L or the width D differ, before the per-key list."""
    def depth(sd):
        return len({m.group(1) for k in sd if (m := re.match(r"blocks\.(\d+)\.", k))})

    hints = []
    if depth(own) != depth(source):
        hints.append(f"depth: source has {depth(source)} blocks, model {depth(own)}")
    if "cls_token" in source and source["cls_token"].shape[-1] != own["cls_token"].shape[-1]:
        hints.append(f"width D: source {source['cls_token'].shape[-1]}, model {own['cls_token'].shape[-1]}")
    return hints


def load_pretrained(model: ViT, source, *, source_grid: int | tuple[int, int] | None = None,
                    verbose: bool = False) -> LoadReport:
    """Load timm ViT weights into `model`, built at the image size and K you fine-tune at (§3.2).

    source: a state dict (name -> tensor, timm's names), or the path of a file
        holding one (see `read_state_dict`): timm `.pth`/`.pt`/`.bin`,
        `.safetensors`, or a minivit checkpoint.
    source_grid: (rows, cols) of the source's patch grid; needed only for a
        state dict or timm file whose number of patches is not a perfect square
        (a square grid is assumed when it is, as timm does: pass it for e.g. a
        4x16 source). A minivit checkpoint's grid is read from its config.
    Hybrids load like pure ViTs: build the target from the same hybrid preset
    (or backbone) at the new size; the backbone's weights are copied as they are.
    verbose: print the report (one line). Off by default; the report is returned.

    - `pos_embed` (1, N_src+1, D) is 2D-interpolated to the model's grid with
      `resize_pos_embed` (bicubic, antialiased; the [class] entry is kept).
    - `head`: loaded when its names and shapes match the model's; otherwise
      (another K, or no head in the source) the model's head is replaced by a
      zero-initialised D x K linear layer (`model.reset_classifier(K)`).
    - Everything else must match exactly; a ValueError names every missing or
      unexpected key and every shape that differs, and the model is unchanged.
      timm's MLP `pre_logits` and `fc_norm` (norm after pooling) are not
      guessed at: a source with them is refused, naming the keys.

    Returns a `LoadReport`. With internet, real ImageNet-21k weights
    (fine-tuned on ImageNet-1k) from timm's hub, for CIFAR-10 at 384 px
    (these weights expect images normalised with mean = std = 0.5, see the timm
    model's `pretrained_cfg`):

        import timm
        model = ViT.from_preset("ViT-Ti/16", image_size=384, num_classes=10)
        load_pretrained(model, timm.create_model("vit_tiny_patch16_224", pretrained=True).state_dict())
    """
    target = unwrap(model)
    if not isinstance(target, ViT):
        raise ValueError(f"expected a minivit.ViT to load into, got {type(target).__name__}")
    if isinstance(source, torch.nn.Module):
        raise ValueError(f"expected a state dict or a path, got a {type(source).__name__}; pass its .state_dict()")
    stored_grid = None
    if isinstance(source, (str, os.PathLike)):
        raw = _read_raw(source)
        label, sd, stored_grid = str(source), _unwrap_state_dict(raw, str(source)), _checkpoint_grid(raw)
    elif isinstance(source, Mapping):
        label, sd = "state dict", _unwrap_state_dict(source, "the source")
    else:
        raise ValueError(f"expected a state dict (name -> tensor) or a file path, got {type(source).__name__}")

    own = target.state_dict()
    problems = _structure_hints(own, sd)
    extra = {k for k in sd if k.startswith(tuple(NOT_IN_MINIVIT)) and k not in own}
    for prefix, what in NOT_IN_MINIVIT.items():
        keys = sorted(k for k in extra if k.startswith(prefix))
        if keys:
            problems.append(f"{what} is not part of minivit.ViT and is not converted: {', '.join(keys)}")

    # pos_embed: resized from the source's grid to the model's.
    adapted = []
    npt, new_grid = target.num_prefix_tokens, tuple(target.patch_embed.grid_size)
    pos = sd.get("pos_embed")
    if pos is not None and pos.ndim == 3 and pos.shape[0] == 1 and pos.shape[2] == own["pos_embed"].shape[2]:
        if stored_grid is not None and source_grid is not None and _grid(source_grid) != stored_grid:
            problems.append(f"pos_embed: source_grid {_grid(source_grid)} contradicts the {stored_grid[0]}x"
                            f"{stored_grid[1]} grid in the checkpoint's config; leave source_grid out")
        old_grid, why = _source_grid(pos.shape[1] - npt, source_grid if source_grid is not None else stored_grid)
        if why:
            problems.append(f"pos_embed: {why}")
        else:
            sd = {**sd, "pos_embed": resize_pos_embed(pos, old_grid, new_grid, num_prefix_tokens=npt)}
            if old_grid != new_grid:
                adapted.append(f"pos_embed: {old_grid[0]}x{old_grid[1]} -> {new_grid[0]}x{new_grid[1]}")

    # The head: loaded when it matches, else replaced (decided now, applied only once all else matches).
    own_head = {k: tuple(v.shape) for k, v in own.items() if k.startswith("head.")}
    src_head = {k: tuple(v.shape) for k, v in sd.items() if k.startswith("head.")}
    keep_head = own_head == src_head
    if not keep_head:
        dim, k = target.config.dim, target.config.num_classes
        src_k = next((sd[n].shape[0] for n in ("head.weight", "head.fc.weight") if n in sd), None)
        mlp = "head.fc.weight" in sd and "head.fc.weight" not in own  # §3.2: the pre-training MLP head goes
        had = (f"source had an MLP head, with {src_k} classes" if mlp else f"source had {src_k} classes"
               ) if src_k is not None else "source had no head"
        adapted.append(f"head: replaced by zero-initialised {dim} x {k} linear layer ({had})")

    # Everything else: the same names and shapes (the style of minivit.checkpoint.check_compatible).
    mine = {k: tuple(v.shape) for k, v in own.items() if not k.startswith("head.")}
    theirs = {k: tuple(v.shape) for k, v in sd.items() if not k.startswith("head.") and k not in extra}
    missing, unexpected = sorted(set(mine) - set(theirs)), sorted(set(theirs) - set(mine))
    if missing:
        problems.append(f"missing from the source: {', '.join(missing)}")
    if unexpected:
        problems.append(f"not in the model: {', '.join(unexpected)}")
    problems += [f"{k}: source shape {theirs[k]}, model shape {mine[k]}"
                 for k in sorted(set(mine) & set(theirs)) if mine[k] != theirs[k]]
    if problems:
        raise ValueError(f"{label} does not match the model:\n  " + "\n  ".join(problems))

    loaded = len(mine) - (1 if any(a.startswith("pos_embed") for a in adapted) else 0)
    if keep_head:
        loaded += len(own_head)
    else:
        target.reset_classifier(target.config.num_classes)
        sd = {k: v for k, v in sd.items() if not k.startswith("head.")}
        sd.update({k: v for k, v in target.state_dict().items() if k.startswith("head.")})
    target.load_state_dict(sd, strict=True)
    report = LoadReport(source=label, loaded=loaded, adapted=tuple(adapted))
    if verbose:
        print(report)
    return report


__all__ = ["LoadReport", "load_pretrained", "read_state_dict"]
