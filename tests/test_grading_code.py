"""The guard refuses by code (minivit.grading_code, issue 38 item 3): the bypasses of the hunt's rows 6-18 and 32-42
(../shared/reviews/assignments-bypass-hunt.md), each at the function level under the ban list that the assignment's
locked test cell uses, read from the notebook. Each bypass computes the right answer when unguarded (so it would have
scored) and is refused when guarded; the instructor's own solution, run under the same list, passes the notebook's
check. Fast: no nbgrader (tests/test_assignments.py grades the same forms as submissions)."""

import ast
import copy
import dataclasses
import functools
import importlib.util
import inspect
import json
import math
import sys
import types
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from einops import rearrange

import minivit
import minivit.exercises
from minivit.grading import Shortcut, guarded, without
from minivit.grading_code import code_keys

SOURCE = Path(__file__).resolve().parents[1] / "assignments" / "source"
NAMES = {"A": "a_patches_and_attention", "B": "b_higher_resolution", "C": "c_inspecting_vit"}


def _cells(part: str) -> list[dict]:
    name = NAMES[part[0]]
    return json.loads((SOURCE / name / f"{name}.ipynb").read_text())["cells"]


def banned(part: str) -> list[str]:
    """The list BANNED_<k> of assignment part "A1", "B3", ... as its locked test cell assigns it."""
    for cell in _cells(part):
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and f"BANNED_{part[1]} =" in text:
            for node in ast.parse(text).body:
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == f"BANNED_{part[1]}":
                    return ast.literal_eval(node.value)
    raise AssertionError(f"no BANNED_{part[1]} in assignment {part[0]}")


@functools.cache
def solutions(assignment: str) -> dict:
    """The instructor's solution cells of an assignment, run in a namespace with the set-up cell's imports."""
    ns = {"math": math, "torch": torch, "F": F, "rearrange": rearrange, "minivit": minivit, "copy": copy,
          "dataclasses": dataclasses, "functools": functools}
    for cell in _cells(assignment):
        if cell["metadata"].get("nbgrader", {}).get("solution") and cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"<solution of {assignment}>", "exec"), ns)
    return ns


def reloaded(name: str) -> types.ModuleType:
    """The package's module run again from its own file (rows 6-8, 38, 41)."""
    spec = importlib.util.find_spec(name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def remade(*modules: types.ModuleType) -> dict:
    """name -> namespace: every function of `modules` re-made from its saved code object (a decorated one: the
    function it wraps), kwdefaults kept, in copies of the modules' globals wired to each other (rows 9-10, 33, 37,
    39, 40, 42)."""
    spaces = {m.__name__: dict(vars(m)) for m in modules}
    made = {}
    for m in modules:
        for key, value in vars(m).items():
            while getattr(value, "__wrapped__", None) is not None:
                value = value.__wrapped__
            if isinstance(value, types.FunctionType) and value.__globals__ is vars(m):  # defined there
                new = types.FunctionType(value.__code__, spaces[m.__name__], value.__name__, value.__defaults__,
                                         value.__closure__)
                new.__kwdefaults__ = value.__kwdefaults__
                made[id(vars(m)[key])] = made[id(value)] = new
    for space in spaces.values():
        for key, value in list(space.items()):
            if id(value) in made:
                space[key] = made[id(value)]
    return spaces


def refused(fn, part: str, *args):
    with pytest.raises(Shortcut, match="solve it without"):
        guarded(fn, banned(part))(*args)


# ---- Python 3.11: a verbatim source copy compiles to the same code under another file name ---------------------

def test_a_source_copy_compiles_to_equal_code_with_another_file_name():
    namespace: dict = {}
    exec(compile(inspect.getsource(minivit.patching), "<copy>", "exec"), namespace)
    original, copied = minivit.patching.unpatchify.__code__, namespace["unpatchify"].__code__
    assert copied.co_filename == "<copy>" != original.co_filename
    assert (copied.co_code, copied.co_consts, copied.co_names, copied.co_varnames) == \
        (original.co_code, original.co_consts, original.co_names, original.co_varnames)
    assert code_keys(copied)[1] == code_keys(original)[1] and code_keys(copied)[0] is None


# ---- assignment A -----------------------------------------------------------------------------------------------

X = torch.rand(2, 3, 8, 12)
Q, K, V = torch.randn(2, 3, 6, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)


def _patchify_bypasses():
    namespace: dict = {}
    exec(inspect.getsource(minivit.patching), namespace)  # row 13, run when the answer cell runs
    return {"6 module run again": reloaded("minivit.patching").patchify,
            "9 saved code": remade(minivit.patching)["minivit.patching"]["patchify"],
            "13 exec(getsource)": namespace["patchify"]}


@pytest.mark.parametrize("row", list(_patchify_bypasses()))
def test_a1_patchify_bypasses_are_refused(row):
    bypass = _patchify_bypasses()[row]
    assert torch.equal(bypass(X, 4), minivit.patchify(X, 4))  # it would have scored
    refused(bypass, "A1", X, 4)


def _attention_bypasses():
    return {"7 module run again": reloaded("minivit.attention").attention_with_weights,
            "10 saved code": remade(minivit.attention)["minivit.attention"]["attention_with_weights"],
            "14 aten math": lambda q, k, v: torch.ops.aten._scaled_dot_product_attention_math(q, k, v),
            "15 torch math": lambda q, k, v: torch._scaled_dot_product_attention_math(q, k, v),
            "flash for cpu, weights by hand": lambda q, k, v: (
                torch._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0],
                (q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])).softmax(-1))}


@pytest.mark.parametrize("row", list(_attention_bypasses()))
def test_a2_attention_bypasses_are_refused(row):
    bypass = _attention_bypasses()[row]
    out, weights = bypass(Q, K, V)
    want_out, want_weights = minivit.attention_with_weights(Q, K, V)
    assert torch.allclose(out, want_out, atol=1e-5) and torch.allclose(weights, want_weights, atol=1e-5)
    refused(bypass, "A2", Q, K, V)


def _mha_case():
    layer = minivit.Attention(8, 2, fused=False)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    x = torch.randn(2, 5, 8)
    weights = tuple(t.detach() for t in (layer.qkv.weight, layer.qkv.bias, layer.proj.weight, layer.proj.bias))
    with torch.no_grad():
        return (x, *weights, 2), layer(x)


def _state(qkv_w, qkv_b, proj_w, proj_b):
    return {"qkv.weight": qkv_w, "qkv.bias": qkv_b, "proj.weight": proj_w, "proj.bias": proj_b}


def _loaded(cls, *args, **kwargs):
    def mha(x, qkv_w, qkv_b, proj_w, proj_b, heads):
        layer = cls(x.shape[-1], heads, *args, **kwargs)
        layer.load_state_dict(_state(qkv_w, qkv_b, proj_w, proj_b))
        with torch.no_grad():
            return layer(x)
    return mha


def _subclass_with_remade_methods():
    """Row 12: Attention's methods re-made from their code objects in a subclass of Attention."""
    base = minivit.Attention

    class Remade(base):
        pass
    for name, f in vars(base).items():
        if not isinstance(f, types.FunctionType):
            continue
        # the closure as it is: super() still means Attention's base, so Attention.__init__ is never called
        setattr(Remade, name, types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__))
    return Remade


def _mha_bypasses():
    bypasses = {
        "8 module run again": _loaded(reloaded("minivit.attention").Attention, fused=False),
        "12 subclass, methods from code": _loaded(_subclass_with_remade_methods(), fused=False),
        "16 _native_multi_head_attention": lambda x, qw, qb, pw, pb, h: torch._native_multi_head_attention(
            x, x, x, x.shape[-1], h, qw, qb, pw, pb, need_weights=False)[0],
        "18 exercises._mha": lambda *args: minivit.exercises._mha(*args)[0],
    }
    if importlib.util.find_spec("timm") is not None:
        import timm.layers
        bypasses["17 timm.layers.Attention"] = _loaded(timm.layers.Attention, qkv_bias=True)
    return bypasses


@pytest.mark.parametrize("row", list(_mha_bypasses()))
def test_a3_multi_head_attention_bypasses_are_refused(row):
    bypass = _mha_bypasses()[row]
    args, want = _mha_case()
    assert torch.allclose(bypass(*args), want, atol=1e-5)
    refused(bypass, "A3", *args)


def test_a_honest_answers_pass_the_notebooks_checks_under_the_same_lists():
    from minivit.exercises import check_attention, check_multi_head_attention, check_patchify
    ns = solutions("A")
    assert check_patchify(guarded(ns["my_patchify"], banned("A1")), verbose=False)
    assert check_attention(guarded(ns["attention"], banned("A2")), verbose=False)
    assert check_multi_head_attention(guarded(ns["multi_head_attention"], banned("A3")), verbose=False)


# ---- assignment B -----------------------------------------------------------------------------------------------

PE = torch.randn(1, 1 + 15, 8, generator=torch.Generator().manual_seed(3))
OLD, NEW = (3, 5), (4, 6)


def _resize_bypasses():
    bypasses = {"33 saved code": remade(minivit.embeddings)["minivit.embeddings"]["resize_pos_embed"],
                "module run again": reloaded("minivit.embeddings").resize_pos_embed}
    if importlib.util.find_spec("timm") is not None:
        import timm.layers
        bypasses["32 timm resample_abs_pos_embed"] = lambda pe, old, new: timm.layers.resample_abs_pos_embed(
            pe, list(new), list(old), num_prefix_tokens=1)
    return bypasses


@pytest.mark.parametrize("row", list(_resize_bypasses()))
def test_b1_resize_bypasses_are_refused(row):
    bypass = _resize_bypasses()[row]
    assert torch.allclose(bypass(PE, OLD, NEW), minivit.resize_pos_embed(PE, OLD, NEW), atol=1e-6)
    refused(bypass, "B1", PE, OLD, NEW)


def test_b1_honest_answer_passes_the_notebooks_check():
    from minivit.exercises import check_resize_pos_embed
    assert check_resize_pos_embed(guarded(solutions("B")["my_resize_pos_embed"], banned("B1")), verbose=False)


def _small_vit():
    return minivit.ViT.from_preset("ViT-Nano/4", num_classes=10).eval()


def test_b2_set_image_size_from_its_saved_code_is_refused():
    """Row 34: ViT.set_image_size's code object, saved, applied to a copy of the model."""
    saved = types.FunctionType(minivit.ViT.set_image_size.__code__, vars(minivit.vit))

    def at_resolution(model, size):
        return saved(copy.deepcopy(model), size).eval()
    model = _small_vit()
    assert at_resolution(model, 48).pos_embed.shape == (1, 1 + 144, model.config.dim)
    refused(at_resolution, "B2", model, 48)
    ns = solutions("B")
    made = guarded(ns["at_resolution"], banned("B2"))
    with minivit.grading.graded_with(ns["at_resolution"], my_resize_pos_embed=minivit.resize_pos_embed):
        new = made(model, 48)
    assert torch.equal(new.pos_embed, at_resolution(model, 48).pos_embed)


def _authors(pe, old, new):
    return minivit.resize_pos_embed(pe, old, new, mode="bilinear", antialias=False, align_corners=True)


def _with_zoom(zoom_grid):
    """An authors' resize that resizes the (h, w, D) grid with `zoom_grid(array, new_h, new_w)` in numpy."""
    def resize(pe, old, new):
        grid = pe[0, 1:].reshape(*old, -1).double().numpy()
        zoomed = torch.from_numpy(zoom_grid(grid, *new)).to(pe.dtype)
        return torch.cat([pe[:, :1], zoomed.reshape(1, new[0] * new[1], -1)], dim=1)
    return resize


def _zoom_shift(grid, new_h, new_w):
    """Row 35: scipy's C routine under zoom, called directly."""
    import numpy as np
    from scipy.ndimage import _nd_image, _ni_support
    h, w, d = grid.shape
    output = np.zeros((new_h, new_w, d))
    zoom = np.ascontiguousarray([(h - 1) / (new_h - 1), (w - 1) / (new_w - 1), 1.0])
    _nd_image.zoom_shift(grid, zoom, None, output, 1, _ni_support._extend_mode_to_code("constant"), 0.0, 0, False)
    return output


def _remade_zoom():
    """Row 37: scipy.ndimage's functions re-made from saved code (before the guard runs), keyword-only defaults
    kept."""
    import scipy.ndimage._interpolation as interpolation
    zoom = remade(interpolation)[interpolation.__name__]["zoom"]
    return lambda grid, new_h, new_w: zoom(grid, (new_h / grid.shape[0], new_w / grid.shape[1], 1), order=1)


@pytest.mark.parametrize("row", ["35 zoom_shift", "37 remade zoom"])
def test_b3_authors_resize_bypasses_are_refused(row):
    bypass = _with_zoom(_zoom_shift if row.startswith("35") else _remade_zoom())
    pe = torch.randn(1, 1 + 64, 4, generator=torch.Generator().manual_seed(4))
    assert torch.allclose(bypass(pe, (8, 8), (12, 12)), _authors(pe, (8, 8), (12, 12)), atol=1e-5)
    refused(bypass, "B3", pe, (8, 8), (12, 12))
    honest = guarded(solutions("B")["authors_resize_pos_embed"], banned("B3"))
    assert torch.allclose(honest(pe, (8, 8), (12, 12)), _authors(pe, (8, 8), (12, 12)), atol=1e-5)


def _with_train_step(step):
    def fine_tune(model, images, labels, steps, batch_size, lr, generator):
        optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        model.train()
        losses = []
        for _ in range(steps):
            idx = torch.randint(len(images), (batch_size,), generator=generator)
            losses.append(step(model, optimizer, images[idx], labels[idx], clip_grad=None)[0].item())
        return losses
    return fine_tune


@pytest.mark.parametrize("row", ["38 module run again", "39 every minivit.train module re-made"])
def test_b4_training_step_bypasses_are_refused(row):
    import minivit.train.evaluation
    import minivit.train.loop
    if row.startswith("38"):
        step = reloaded("minivit.train.loop").train_step
    else:
        modules = [m for name, m in sys.modules.items() if name.startswith("minivit.train.")]
        step = remade(*modules)["minivit.train.loop"]["train_step"]
    bypass = _with_train_step(step)
    images, labels = torch.randn(8, 3, 32, 32), torch.randint(10, (8,))

    def run(fn):
        torch.manual_seed(0)
        model = _small_vit()
        return fn(model, images, labels, 2, 4, 0.01, torch.Generator().manual_seed(0))
    assert run(bypass) == pytest.approx(run(solutions("B")["fine_tune"]), rel=1e-4)  # the same training
    refused(lambda: run(bypass), "B4")
    assert len(run(guarded(solutions("B")["fine_tune"], banned("B4")))) == 2


# ---- assignment C -----------------------------------------------------------------------------------------------

MAPS = [(3 * torch.randn(2, 3, 5, 5, generator=torch.Generator().manual_seed(i))).softmax(-1) for i in range(3)]


def test_c1_rollout_from_saved_code_is_refused():
    """Row 40: minivit.inspection re-made from saved code (attention_rollout)."""
    bypass = remade(minivit.inspection)["minivit.inspection"]["attention_rollout"]
    assert torch.allclose(bypass(MAPS), minivit.attention_rollout(MAPS))
    refused(bypass, "C1", MAPS)
    assert torch.allclose(guarded(solutions("C")["rollout"], banned("C1"))(MAPS), minivit.attention_rollout(MAPS),
                          atol=1e-6)


def test_c2_mean_distance_from_the_module_run_again_is_refused():
    """Row 41: minivit.inspection run again from its file (mean_attention_distance)."""
    from minivit.exercises import check_mean_attention_distance
    bypass = reloaded("minivit.inspection").mean_attention_distance
    maps = torch.stack(MAPS, dim=1)[..., :5, :5]  # (B, L, heads, T, T), T = 1 + 2 x 2
    assert torch.allclose(bypass(maps, (2, 2), 4), minivit.mean_attention_distance(maps, (2, 2), 4))
    refused(bypass, "C2", maps, (2, 2), 4)
    assert check_mean_attention_distance(guarded(solutions("C")["mean_distance"], banned("C2")), verbose=False)


def test_c3_unpatchify_from_saved_code_is_refused():
    """Row 42: minivit.patching re-made from saved code (unpatchify), with minivit.patchify."""
    unpatchify = remade(minivit.patching)["minivit.patching"]["unpatchify"]

    def hide_patches(images, scores, k, patch_size):
        patches = minivit.patchify(images, patch_size)  # (B, N, P*P*C)
        keep = torch.ones_like(scores).scatter_(1, scores.topk(k, dim=1).indices, 0.0)  # (B, N)
        return unpatchify(patches * keep[..., None], patch_size, tuple(images.shape[-2:]))
    images, scores = torch.rand(2, 2, 4, 6), torch.rand(2, 6)
    want = solutions("C")["hide_patches"](images, scores, 2, 2)
    assert torch.equal(hide_patches(images, scores, 2, 2), want)
    refused(hide_patches, "C3", images, scores, 2, 2)
    assert torch.equal(guarded(solutions("C")["hide_patches"], banned("C3"))(images, scores, 2, 2), want)


# ---- the hook itself --------------------------------------------------------------------------------------------

def test_the_hook_is_removed_and_an_existing_profiler_chained_and_put_back():
    seen = []

    def profiler(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)
    bypass = reloaded("minivit.patching").patchify
    sys.setprofile(profiler)
    try:
        with pytest.raises(Shortcut, match="its code ran under another function object"):
            with without(["minivit.patching"], ""):
                bypass(X, 4)
        inside = list(seen)
        assert sys.getprofile() is profiler  # put back
    finally:
        sys.setprofile(None)
    assert "patchify" in inside  # the existing profiler saw the block's calls
    with without(["minivit.patching"], ""):
        assert sys.getprofile() is not None
    assert sys.getprofile() is None  # and with no profiler before, none after
    assert torch.equal(bypass(X, 4), minivit.patchify(X, 4))  # outside the block, nothing is refused


def test_an_answer_that_removes_the_hook_is_refused():
    def answer(x, p):
        sys.setprofile(None)
        return bypass(x, p)
    bypass = reloaded("minivit.patching").patchify
    with pytest.raises(Shortcut, match="changed the profile function"):
        guarded(answer, ["minivit.patching"])(X, 4)
    assert sys.getprofile() is None


def test_a_refusal_caught_by_the_answer_is_raised_at_the_end():
    bypass = reloaded("minivit.patching").patchify

    def answer(x, p):
        out = bypass(x, p)  # recorded, not raised: the answer goes on with its result
        return out * 0
    with pytest.raises(Shortcut, match="minivit.patching.patchify"):
        guarded(answer, ["minivit.patching"])(X, 4)
