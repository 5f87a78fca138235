"""Assignment B's part 3 is the paper's authors' interpolation of the position embeddings.

The authors' code (google-research/vision_transformer, vit_jax/checkpoint.py, `interpolate_posembed`) resizes the
grid of patch embeddings with

    zoom = (gs_new / gs_old, gs_new / gs_old, 1)
    posemb_grid = scipy.ndimage.zoom(posemb_grid, zoom, order=1)

linear, with the corner entries of the two grids pinned together. The assignment asks for it in PyTorch, for any
(h, w) -> (h', w') grid. Two things stand for it and are checked here against scipy itself, on random grids,
square and not, enlarged and shrunk: the reference answer in the kit's source notebook (its cell `authors`:
F.interpolate, bilinear, align_corners=True), and what the part's checks grade against
(`minivit.resize_pos_embed(..., mode="bilinear", antialias=False, align_corners=True)`).

Tolerance: scipy is given the float32 grid cast to float64 (exactly) and computes in float64; PyTorch computes in
float32, the sampling coordinate i (h - 1) / (h' - 1) included. The coordinate's rounding (2**-24 of it, below
5e-7 for coordinates up to 7: no old grid here is longer than 8) times the difference between two neighbouring
inputs (below 7 for these standard-normal draws) bounds the difference near 3e-6; measured: 1.4e-6 at most (8x8 ->
12x12). atol = 1e-5 leaves room for that and is 10,000 times smaller than the difference between the two
conventions (above 0.1 on every case here, checked below, so the comparison can fail).

Tooling test; skipped where scipy is not installed (it comes with [dev], through scikit-image).
"""

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from einops import rearrange

import minivit

ndimage = pytest.importorskip("scipy.ndimage")

SOURCE = Path(__file__).resolve().parents[1] / "assignments" / "source" / "b_higher_resolution" / "b_higher_resolution.ipynb"
ATOL = 1e-5
CASES = [((8, 8), (12, 12)), ((2, 3), (4, 5)), ((6, 6), (4, 4)), ((5, 3), (3, 6)), ((4, 7), (9, 2)), ((3, 3), (8, 8))]


def _notebook_reference():
    """The function `authors_resize_pos_embed` of the source notebook's solution cell `authors`, run as it is."""
    cells = json.loads(SOURCE.read_text())["cells"]
    [cell] = [c for c in cells if c["metadata"].get("nbgrader", {}).get("grade_id") == "authors"]
    namespace = {"torch": torch, "F": F, "rearrange": rearrange}  # the names the notebook's set-up cell gives it
    exec(compile("".join(cell["source"]), f"{SOURCE.name}: cell authors", "exec"), namespace)
    return namespace["authors_resize_pos_embed"]


def _package_reference(pos_embed, old_grid, new_grid):
    return minivit.resize_pos_embed(pos_embed, old_grid, new_grid, mode="bilinear", antialias=False, align_corners=True)


def _scipy(pos_embed: torch.Tensor, old_grid, new_grid) -> torch.Tensor:
    """The authors' zoom, each axis by its own factor: (1, 1 + h*w, D) float32 -> (1, 1 + h'*w', D) float64."""
    (h, w), (new_h, new_w) = old_grid, new_grid
    grid = pos_embed[0, 1:].double().reshape(h, w, -1).numpy()  # (h, w, D)
    zoomed = ndimage.zoom(grid, (new_h / h, new_w / w, 1), order=1)  # (h', w', D)
    assert zoomed.shape[:2] == (new_h, new_w), f"scipy made a {zoomed.shape[:2]} grid, expected {(new_h, new_w)}"
    return torch.cat([pos_embed[:, :1].double(), torch.from_numpy(zoomed).reshape(1, new_h * new_w, -1)], dim=1)


@pytest.mark.parametrize("reference", ["notebook", "package"])
@pytest.mark.parametrize("old_grid,new_grid", CASES)
def test_the_reference_is_scipys_zoom(reference, old_grid, new_grid):
    fn = _notebook_reference() if reference == "notebook" else _package_reference
    seed = old_grid[0] * 100 + old_grid[1] * 10 + new_grid[0]
    pos_embed = torch.randn(1, 1 + old_grid[0] * old_grid[1], 16, generator=torch.Generator().manual_seed(seed))
    expected = _scipy(pos_embed, old_grid, new_grid)  # (1, 1 + h'*w', 16), float64
    got = fn(pos_embed, old_grid, new_grid)
    assert got.shape == expected.shape and got.dtype == torch.float32
    assert torch.equal(got[:, 0], pos_embed[:, 0]), "the [class] entry must be kept as it is"
    err = (got.double() - expected).abs().max().item()
    assert err <= ATOL, f"{reference} reference {old_grid} -> {new_grid}: differs from scipy.ndimage.zoom by {err:.3g}"
    # the other convention (centres aligned, timm's) is far from it: the tolerance tells the two apart
    centres = minivit.resize_pos_embed(pos_embed, old_grid, new_grid, mode="bilinear", antialias=False)
    assert (centres.double() - expected).abs().max().item() > 0.1
