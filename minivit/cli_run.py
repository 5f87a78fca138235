"""What `python -m minivit.train` does once its arguments are parsed (`minivit.cli` parses them).

Introduced in 03_transformer_encoder.ipynb (with `minivit.cli`). In order, and every refusal before anything is
written: resolve the settings (a recipe, fit's defaults, the flags) and check how they combine; check the run
folder (`--resume`, `--overwrite`); load and split the data; build the model; then evaluate it (`--eval-only`) or
train it with `minivit.train.fit` and write <out>/summary.json (first as "running", at the end "finished").
"""

from __future__ import annotations

import inspect
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import torch

RUN_FILES = ("checkpoint.pt", "summary.json")  # what a run folder holds
# The settings that make a run what it is: --resume refuses when any differs from the run's summary.json.
RUN_SETTINGS = ("preset", "dataset", "recipe", "init_from", "image_size", "patch_size", "dropout", "n_per_class",
                "val_per_class", "batch_size", "lr", "weight_decay", "warmup_epochs", "label_smoothing",
                "clip_grad", "augment", "seed")
# The flags that only training reads (refused with --eval-only).
TRAINING_FLAGS = ("recipe", "epochs", "n_per_class", "val_per_class", "batch_size", "lr", "weight_decay",
                  "warmup_epochs", "label_smoothing", "clip_grad", "augment", "time_budget", "compile", "out",
                  "resume", "overwrite")


def _settings(parser, a) -> dict:
    """The run's settings: the flags given, else the recipe's, else fit's defaults; the combinations checked."""
    from .data import SHAPES
    from .recipes import RECIPES
    from .train import fit
    given = {k for k in TRAINING_FLAGS if getattr(a, k) not in (None, False)}
    if a.eval_only:
        if given:
            parser.error(f"--eval-only trains nothing and writes nothing; leave out "
                         f"{', '.join('--' + k.replace('_', '-') for k in sorted(given))}")
        if a.init_from is None:
            parser.error("--eval-only evaluates the model in --init-from PATH (a run folder or checkpoint)")
    recipe = RECIPES[a.recipe] if a.recipe else None
    dataset = a.dataset or (recipe.dataset if recipe else None)
    if dataset is None:
        parser.error("--dataset is required (or --recipe, which names one)")
    if recipe and recipe.dataset != dataset:
        parser.error(f"--recipe {a.recipe} trains on {recipe.dataset}, not --dataset {dataset}")
    if a.preset is None and a.init_from is None:
        parser.error("--preset is required (or --init-from, a minivit checkpoint to start from)")
    defaults = {k: v.default for k, v in inspect.signature(fit).parameters.items()}
    s = {"preset": a.preset, "dataset": dataset, "recipe": a.recipe, "seed": a.seed,
         "init_from": str(a.init_from) if a.init_from else None,
         "image_size": a.image_size or (64 if (a.recipe or "").startswith("imagenette64") else None),  # its 64 px
         "patch_size": a.patch_size, "dropout": a.dropout, "val_per_class": a.val_per_class,
         "n_per_class": a.n_per_class or (recipe.n_per_class if recipe else None),
         "epochs": a.epochs or (recipe.epochs if recipe else None), "augment": a.augment or (recipe.augment if recipe else "basic")}
    for k in ("batch_size", "lr", "weight_decay", "warmup_epochs", "label_smoothing", "clip_grad"):
        s[k] = getattr(a, k) if getattr(a, k) is not None else getattr(recipe, k) if recipe else defaults[k]
    s["clip_grad"] = s["clip_grad"] or 0.0
    if s["epochs"] is None and not a.eval_only:
        parser.error("--epochs is required (or --recipe, which sets it)")
    if not a.eval_only and s["warmup_epochs"] > s["epochs"]:
        parser.error(f"--warmup-epochs {s['warmup_epochs']:g} is longer than the run (--epochs {s['epochs']}): the "
                     "learning rate would never reach its peak; use at most --epochs")
    if a.resume and a.overwrite:
        parser.error("--resume continues the run in --out, --overwrite replaces it: pick one")
    if a.resume and a.out is None:
        parser.error("--resume needs --out, the folder of the run to continue")
    _check_patch_size(parser, a, s, SHAPES[dataset])
    return s


def _check_patch_size(parser, a, s, shape) -> None:
    """A usage error, with the fix, when the patch size does not divide the image size (before any data loads)."""
    from .config import PRESETS
    if a.preset is None:
        return  # from a checkpoint: checked when the model is built
    p = a.patch_size or PRESETS[a.preset].patch_size
    size = s["image_size"] or shape[1]
    if size % p:
        up, down = -(-size // p) * p, [q for q in range(p, 0, -1) if size % q == 0][0]
        what = f"tokens {p} px apart (its backbone's stride)" if PRESETS[a.preset].backbone else f"patch size {p}"
        parser.error(f"{a.preset} has {what}, which does not divide the {size}x{size} images of {s['dataset']}: "
                     f"pass --image-size {up} (the images are resized to a multiple of {p})"
                     + ("" if PRESETS[a.preset].backbone else f", or --patch-size {down} (it divides {size})"))


def _run_folder(parser, a, s) -> Path:
    """The run folder: --out checked against what it holds, or a new default one."""
    if a.eval_only:
        return None
    if a.out is None:
        model = (a.preset or f"{_checkpoint_path(a.init_from).parent.name}-ft").replace("/", "-")
        base = Path("runs") / f"{model}-{s['dataset']}-{time.strftime('%Y%m%d-%H%M%S')}"
        out, k = base, 1
        while out.exists():
            k += 1
            out = base.with_name(f"{base.name}-{k}")
        return out
    held = [f for f in RUN_FILES if (a.out / f).exists()]
    if a.resume:
        if not (a.out / "checkpoint.pt").exists():
            parser.error(f"--out {a.out} holds no run to resume (no checkpoint.pt); leave out --resume to start one")
        _check_same_run(parser, a, s)
    elif held and not a.overwrite:
        parser.error(f"--out {a.out} already holds a run ({', '.join(held)}); --resume continues it, --overwrite "
                     "replaces it, or choose another --out")
    return a.out


def _check_same_run(parser, a, s) -> None:
    """--resume: the run's settings (its summary.json) equal these, and --epochs covers its finished epochs."""
    from .checkpoint import read_checkpoint
    try:
        done = read_checkpoint(a.out / "checkpoint.pt")["epoch"]
    except ValueError as e:
        parser.error(f"cannot resume: {e}")
    summary = a.out / "summary.json"
    if summary.exists():
        saved = json.loads(summary.read_text()).get("settings", {})
        differ = [f"--{k.replace('_', '-')}: run {saved.get(k)!r}, now {s[k]!r}" for k in RUN_SETTINGS
                  if k in saved and saved[k] != s[k]]
        if differ:
            parser.error(f"--resume continues the run in {a.out} with its own settings, but these differ: "
                         f"{'; '.join(differ)}. Pass them as the run had them, or start a new run")
    if s["epochs"] < done:
        parser.error(f"the run in {a.out} has finished {done} epochs; --epochs {s['epochs']} would end before that. "
                     f"--epochs is the run's total: pass at least {done} to continue it")


def _checkpoint_path(path: Path) -> Path:
    return path / "checkpoint.pt" if path.is_dir() else path


def _load_data(parser, a, s, image_size):
    """(train, val or None, test) at `image_size`: the held-out validation images first, then the training subset
    from the rest of the training split (disjoint); the test split, or a stratified part of it."""
    from . import data as mdata
    try:
        test = mdata.load_dataset(s["dataset"], "test", a.data_root)
        train = None if a.eval_only else mdata.load_dataset(s["dataset"], "train", a.data_root)
        if a.test_per_class:
            test = mdata.stratified_subset(test, a.test_per_class, seed=s["seed"])
        val = None
        if train is not None and s["val_per_class"]:
            train, val = _hold_out(train, s["val_per_class"], s["n_per_class"], s["seed"])
        elif train is not None and s["n_per_class"]:
            train = mdata.stratified_subset(train, s["n_per_class"], seed=s["seed"])
    except ValueError as e:  # e.g. more images per class than a class has
        parser.error(f"{e} (--n-per-class, --val-per-class and --test-per-class count images per class)")
    resize = (lambda ds: ds if ds is None else ds.resized(image_size))
    return resize(train), resize(val), resize(test)


def _hold_out(train, n_val: int, n_train, seed: int):
    """(training subset, validation subset) of one split, disjoint: per class, a `seed` permutation's first
    `n_val` images validate, the next `n_train` (default: all the rest) train."""
    g = torch.Generator().manual_seed(seed)
    picked_train, picked_val = [], []
    for c in range(len(train.classes)):
        idx = (train.labels == c).nonzero().squeeze(1)  # (n_c,)
        need = n_val + (n_train or 1)
        if len(idx) < need:
            raise ValueError(f"class {c} ({train.classes[c]!r}) has {len(idx)} training images, fewer than "
                             f"{n_val} held out + {n_train or 'at least 1'} to train on")
        idx = idx[torch.randperm(len(idx), generator=g)]
        picked_val.append(idx[:n_val])
        picked_train.append(idx[n_val:n_val + n_train] if n_train else idx[n_val:])
    shuffle = lambda i: i[torch.randperm(len(i), generator=g)]  # noqa: E731  (classes mixed)
    return train.subset(shuffle(torch.cat(picked_train))), train.subset(shuffle(torch.cat(picked_val)))


def _build_model(parser, a, s, shape, num_classes):
    """(model, what was loaded or None): a preset, or a checkpoint's model (load_pretrained) at the data's size."""
    from .checkpoint import read_checkpoint
    from .config import ViTConfig, get_preset
    from .finetune import load_pretrained
    from .vit import ViT
    c, h, w = shape
    overrides = {"image_size": h if h == w else (h, w), "in_channels": c, "num_classes": num_classes}
    overrides.update({k: s[k] for k in ("patch_size", "dropout") if s[k] is not None})
    source = _checkpoint_path(a.init_from) if a.init_from else None
    try:
        if a.preset:
            config = get_preset(a.preset, **overrides)
        else:
            stored = read_checkpoint(source).get("config")  # ValueError: not a minivit checkpoint
            if stored is None:
                raise ValueError(f"{source} stores no model config; pass --preset to say which model it holds")
            config = ViTConfig.from_dict(stored)
            if config.in_channels != c:
                raise ValueError(f"{source} takes {config.in_channels}-channel images, {s['dataset']} has {c}")
            config = replace(config, **overrides)
        torch.manual_seed(s["seed"])
        model = ViT(config)
        report = load_pretrained(model, source) if source else None
    except (ValueError, FileNotFoundError) as e:
        hint = "" if a.preset or source is None else " (for a timm or plain state dict, pass --preset)"
        parser.error(f"cannot build the model: {e}{hint}")
    if a.eval_only and any(x.startswith("head:") for x in report.adapted):
        parser.error(f"{source} has a head for another number of classes than {s['dataset']}'s {num_classes}: "
                     "there is nothing to evaluate (fine-tune it first, without --eval-only)")
    return model, report


def _eval_image_size(parser, a, shape) -> int | tuple:
    """--eval-only without --image-size: the size the checkpoint was trained at."""
    from .checkpoint import read_checkpoint
    if a.image_size or a.preset:
        return a.image_size or shape[1:]
    try:
        stored = read_checkpoint(_checkpoint_path(a.init_from)).get("config") or {}
    except (ValueError, FileNotFoundError) as e:
        parser.error(f"cannot evaluate: {e}")
    size = stored.get("image_size", shape[1])
    return tuple(size) if isinstance(size, list) else size


def _write_json(path: Path, obj) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2))
    os.replace(tmp, path)


def _setup_distributed(device_arg):
    """Initialise torch.distributed when launched by torchrun; return (rank, world, device)."""
    from .profile import default_device
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1, torch.device(device_arg) if device_arg else default_device()
    cuda = torch.cuda.is_available() and (device_arg or "cuda").startswith("cuda")
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    torch.distributed.init_process_group("nccl" if cuda else "gloo")
    return torch.distributed.get_rank(), world, device


def run(parser, a) -> int:
    """The command after parsing (see the module docstring); returns the exit status."""
    from .data import SHAPES
    s = _settings(parser, a)
    out = _run_folder(parser, a, s)
    c, h, w = SHAPES[s["dataset"]]
    size = _eval_image_size(parser, a, (c, h, w)) if a.eval_only else (s["image_size"] or (h, w))
    size = (size, size) if isinstance(size, int) else tuple(size)
    train, val, test = _load_data(parser, a, s, size)
    model, report = _build_model(parser, a, s, (c, *size), len(test.classes))
    rank, world, device = _setup_distributed(a.device)
    say = print if rank == 0 else (lambda *_, **__: None)
    try:
        if report is not None:
            say(f"minivit: {report}")
        if a.eval_only:
            return _evaluate_only(a, s, model, test, device, say)
        return _train(a, s, out, model, report, train, val, test, rank, world, device, say)
    finally:
        if world > 1:
            torch.distributed.destroy_process_group()


def _evaluate_only(a, s, model, test, device, say) -> int:
    from .train import evaluate
    result = evaluate(model.to(device), test, device=device, progress=not a.no_progress)
    say(f"test top-1 {result['acc']:.4f}, loss {result['loss']:.4f} on {result['n']} images of {s['dataset']} "
        f"({model.config.image_hw[0]}x{model.config.image_hw[1]} px); nothing written")
    return 0


def _train(a, s, out, model, report, train, val, test, rank, world, device, say) -> int:
    from .recipes import RECIPES, Recipe
    from .train import evaluate, fit
    fields = {k: s[k] for k in ("epochs", "batch_size", "lr", "weight_decay", "warmup_epochs", "label_smoothing",
                                "augment")}
    fields["clip_grad"] = s["clip_grad"] or None
    base = RECIPES[s["recipe"]] if s["recipe"] else Recipe("cli", s["dataset"], None, **fields)
    recipe = base.with_(n_per_class=s["n_per_class"], **fields)
    summary = {"status": "running", "preset": s["preset"], "dataset": s["dataset"], "config": model.config.to_dict(),
               "settings": s, "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(a).items()},
               "recipe": recipe.to_dict(), "init_from": str(report) if report else None}
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        if a.overwrite:
            for f in RUN_FILES:
                (out / f).unlink(missing_ok=True)
        _write_json(out / "summary.json", summary)
    held_out = f"{len(val)} held out for validation" if val is not None else "no validation"
    say(f"minivit: {s['preset'] or 'the model of ' + s['init_from']} ({sum(p.numel() for p in model.parameters()):,} "
        f"parameters) on {s['dataset']} ({len(train)} training images, {held_out}), {world} process(es) on {device}, "
        f"out {out}")
    t0 = time.perf_counter()
    history = fit(model, train, val, **recipe.fit_kwargs(len(train.classes)), device=device, compile=a.compile,
                  seed=s["seed"], checkpoint=out / "checkpoint.pt", resume=a.resume, overwrite=a.overwrite,
                  progress=not a.no_progress and rank == 0, time_budget=a.time_budget)
    seconds = time.perf_counter() - t0
    result = evaluate(model, test, device=device, distributed=world > 1)  # the test split: once, at the end
    summary.update(status="finished", test=result, val=({"loss": history.final["val_loss"], "acc": history.final[
        "val_acc"], "n": len(val)} if val is not None else None), fit_seconds=seconds, world_size=world,
        device=str(device), torch=torch.__version__, history=history.to_dict())
    if rank == 0:
        _write_json(out / "summary.json", summary)
        fmt = lambda v, f: "-" if v is None else format(v, f)  # noqa: E731
        say(f"{'epoch':>5} {'train loss':>10} {'train acc':>9} {'val loss':>9} {'val acc':>8} {'img/s':>7}")
        for r in history.rows():
            say(f"{r['epoch']:>5} {r['train_loss']:>10.4f} {r['train_acc']:>9.4f} {fmt(r['val_loss'], '>9.4f'):>9} "
                f"{fmt(r['val_acc'], '>8.4f'):>8} {r['images_per_s']:>7.0f}")
        if history.stopped:
            say(f"stopped early: {history.stopped}")
        say(f"test top-1 {result['acc']:.4f}, loss {result['loss']:.4f} on {result['n']} test images; "
            f"fit took {seconds:.1f} s; wrote {out / 'checkpoint.pt'} and {out / 'summary.json'}")
    return 0
