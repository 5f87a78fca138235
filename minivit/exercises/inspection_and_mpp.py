"""The checks of the exercises of notebooks 07-09 (07_finetuning_at_higher_resolution, 08_inspecting_vit,
09_masked_patch_prediction): patch centres, interpolation weights and swapped tiles; mean attention distance;
masked patch prediction's colour codes. Importable from `minivit.exercises`, as every check is."""

from __future__ import annotations

import torch

from ..grading import CheckResult, _compare, _run
from ._common import _without


# ---- 07_finetuning_at_higher_resolution.ipynb ----------------------------------------------------------


def _patch_centres(old_grid, new_grid) -> torch.Tensor:
    """Where each patch of `new_grid` (h', w') lies "in the original image" (§3.2), in patch units of
    `old_grid` (h, w): (h', w', 2) with (row, col) = ((i + 0.5) h / h' - 0.5, (j + 0.5) w / w' - 0.5).
    Patch centres map to patch centres when both grids cover the same image: the sampling positions of
    `F.interpolate(..., align_corners=False)`, which `minivit.resize_pos_embed` uses."""
    (h, w), (h2, w2) = (tuple(int(v) for v in g) for g in (old_grid, new_grid))
    rows = (torch.arange(h2, dtype=torch.float64) + 0.5) * h / h2 - 0.5  # (h',)
    cols = (torch.arange(w2, dtype=torch.float64) + 0.5) * w / w2 - 0.5  # (w',)
    return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), dim=-1)  # (h', w', 2)


def check_patch_centres(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution: `fn(old_grid (h, w), new_grid (h', w')) -> (h', w', 2)`: the
    (row, col) of every new patch's centre in the old grid's patch coordinates (patch (0, 0)'s centre is
    (0, 0)), both grids covering the same image -- "according to their location in the original image" (§3.2)."""
    def case(old, new):
        return lambda: _compare(fn(old, new), _patch_centres(old, new), atol=1e-6, what="centres")
    return _run("patch centres", [
        ("4x4 -> 8x8: each old patch becomes 2x2 new ones", case((4, 4), (4 * 2, 4 * 2))),
        ("the same grid: every patch stays where it is", case((5, 5), (5, 5))),
        ("a non-square 8x8 -> 8x12 (rows, then columns)", case((8, 8), (8, 12))),
        ("a smaller grid, 6x6 -> 4x4", case((6, 6), (4, 4))),
    ], verbose)


def _linear_weights(n_old: int, n_new: int, align_corners: bool = False) -> torch.Tensor:
    """(n_new, n_old): row i holds the weights of the old entries in new entry i under linear interpolation along
    one axis, as `F.interpolate(mode="linear", antialias=False, align_corners=...)` computes it -- the 1-D factor
    of `minivit.resize_pos_embed(mode="bilinear", antialias=False)` (read off by interpolating the identity)."""
    import torch.nn.functional as F
    eye = torch.eye(n_old, dtype=torch.float64)[None]  # (1, n_old channels, n_old positions): channel k is e_k
    return F.interpolate(eye, size=n_new, mode="linear", align_corners=align_corners)[0].T  # (n_new, n_old)


def check_linear_weights(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution, exercise 1: `fn(n_old, n_new, align_corners=False) -> (n_new, n_old)`,
    the weights of linear interpolation from n_old to n_new entries along one axis: with `align_corners=False`
    (minivit, timm) new entry i sits at old coordinate (i + 1/2) n_old / n_new - 1/2, with `True` (the authors'
    `scipy.ndimage.zoom(..., order=1)`) at i (n_old - 1) / (n_new - 1); a coordinate beyond the first or last
    old entry takes that entry (clamped); otherwise the two old entries around it share the weight linearly.
    The answer may not read the weights off a resizing function: `F.interpolate`, `minivit.resize_pos_embed` and
    `scipy.ndimage.zoom` do not work in it."""
    def case(n_old, n_new, corners):
        def run():
            want = _linear_weights(n_old, n_new, corners)
            with _without(fn, ["torch.nn.functional.interpolate", "minivit.embeddings.resize_pos_embed",
                               "scipy.ndimage.zoom"],
                          "find where new entry i reads in the old grid, clamp it, and split its weight between "
                          "the two old entries around it"):
                got = fn(n_old, n_new, align_corners=corners)
            problem = _compare(got, want, atol=1e-6, what="weights")
            if problem and "wrong values" in problem and isinstance(got, torch.Tensor):
                sums = got.double().sum(-1)
                if not torch.allclose(sums, torch.ones_like(sums), atol=1e-6):
                    problem += "; every row must sum to 1 (a weighted average of old entries)"
            return problem
        return run
    return _run("linear interpolation weights", [
        ("4 -> 8, centres aligned (minivit, timm)", case(4, 8, False)),
        ("4 -> 8, corners aligned (the authors' code)", case(4, 8, True)),
        ("the same size, centres aligned: the identity", case(5, 5, False)),
        ("the same size, corners aligned: the identity", case(5, 5, True)),
        ("8 -> 12, centres aligned (not a whole factor)", case(8, 12, False)),
        ("3 -> 7, corners aligned", case(3, 7, True)),
        ("6 -> 4, centres aligned (a smaller grid)", case(6, 4, False)),
    ], verbose)


def _swap_tiles(images: torch.Tensor, quadrant: int) -> torch.Tensor:
    """(B, C, H, W) -> a copy with the top-left quadrant and quadrant `quadrant` (0 top-left, 1 top-right,
    2 bottom-left, 3 bottom-right) exchanged."""
    h, w = images.shape[-2] // 2, images.shape[-1] // 2
    out = images.clone()
    r, c = divmod(quadrant, 2)
    out[..., :h, :w] = images[..., r * h:(r + 1) * h, c * w:(c + 1) * w]
    out[..., r * h:(r + 1) * h, c * w:(c + 1) * w] = images[..., :h, :w]
    return out


def check_swap_tiles(fn, verbose: bool = True) -> CheckResult:
    """07_finetuning_at_higher_resolution, exercise 2: `fn(images (B, C, H, W), quadrant) -> (B, C, H, W)`: the
    mosaics with their top-left tile and the tile in `quadrant` (0 top-left, 1 top-right, 2 bottom-left,
    3 bottom-right; H and W even) exchanged, leaving `images` itself unchanged."""
    def case(shape, quadrant, seed):
        def run():
            x = torch.randint(0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
            before = x.clone()
            got = fn(x, quadrant)
            if not torch.equal(x, before):
                return "changed its input in place; return a new tensor and leave the test mosaics as they are"
            return _compare(got, _swap_tiles(before, quadrant), atol=0, what="mosaics")
        return run
    return _run("swap tiles", [
        ("quadrant 3: top-left <-> bottom-right", case((2, 3, 8, 8), 3, 0)),
        ("quadrant 1: top-left <-> top-right, a wide mosaic", case((1, 3, 4, 6), 1, 1)),
        ("quadrant 2: top-left <-> bottom-left, a tall mosaic", case((2, 1, 6, 4), 2, 2)),
        ("quadrant 0: nothing moves", case((1, 3, 4, 4), 0, 3)),
    ], verbose)


# ---- 08_inspecting_vit.ipynb ---------------------------------------------------------------------------


def _softmax_maps(b: int, layers: int, heads: int, tokens: int, seed: int, sharpness: float = 3.0) -> torch.Tensor:
    """Random attention maps (B, L, heads, T, T) whose rows are softmax outputs (sum 1), like a ViT's."""
    g = torch.Generator().manual_seed(seed)
    return (sharpness * torch.randn(b, layers, heads, tokens, tokens, generator=g)).softmax(dim=-1)


def check_mean_attention_distance(fn, verbose: bool = True) -> CheckResult:
    """08_inspecting_vit: `fn(maps (B, L, heads, T, T), grid_size (h, w), patch_size) -> (L, heads)`: per layer
    and head, the attention-weighted mean distance in pixels between the centres of each query patch and the
    key patches, the [class] token (index 0) dropped and each row renormalised to sum 1 over the patches,
    averaged over query patches and images -- as `minivit.inspection.mean_attention_distance`, which the answer
    may not call."""
    from ..inspection import mean_attention_distance

    def case(b, layers, heads, grid, patch_size, seed, maps=None):
        t = 1 + grid[0] * grid[1]
        maps = _softmax_maps(b, layers, heads, t, seed) if maps is None else maps
        expected = mean_attention_distance(maps, grid, patch_size)

        def run():
            with _without(fn, ["minivit.inspection.mean_attention_distance"],
                          "drop the [class] token, renormalise each row over the patches and weight the distances "
                          "between patch centres yourself"):
                got = fn(maps.clone(), grid, patch_size)
            return _compare(got, expected, atol=1e-3, what="distances")
        return run

    t = 1 + 3 * 3
    to_class = torch.zeros(1, 1, 1, t, t)
    to_class[..., :, 0] = 0.5  # half of every row on [class]; the other half on the query patch itself or the next
    to_class[..., 1:, 1:] = 0.25 * (torch.eye(t - 1) + torch.eye(t - 1).roll(1, dims=1))
    to_class[..., 0, 1:] = 0.5 / (t - 1)
    return _run("mean attention distance", [
        ("random softmax maps, 2 images, 3 layers, 2 heads, a 4x4 grid of 8-pixel patches", case(2, 3, 2, (4, 4), 8, 0)),
        ("a non-square 2x3 grid (rows, then columns)", case(1, 2, 3, (2, 3), 16, 1)),
        ("half the attention on [class]: renormalise over the patches", case(1, 1, 1, (3, 3), 10, 2, maps=to_class)),
    ], verbose)


# ---- 09_masked_patch_prediction.ipynb ------------------------------------------------------------------


def _off_edge_images(b: int, h: int, w: int, p: int, seed: int) -> torch.Tensor:
    """Random uint8 images (b, 3, h, w) none of whose p x p patch means lies exactly on a 3-bit level edge
    (k 255 / 8), where float rounding could honestly go either way."""
    g = torch.Generator().manual_seed(seed)
    while True:
        x = torch.randint(0, 256, (b, 3, h, w), generator=g, dtype=torch.uint8)
        sums = x.long().unfold(2, p, p).unfold(3, p, p).sum(dim=(-1, -2))  # (b, 3, h/p, w/p) exact sums
        if not ((8 * sums) % (255 * p * p) == 0).any():
            return x


def check_color_codes(fn, verbose: bool = True) -> CheckResult:
    """09_masked_patch_prediction: `fn(images uint8 (B, 3, H, W), patch_size) -> (B, N)` integer colour classes:
    per patch (row by row, as `patchify`) the mean of each channel m in [0, 255], its 3-bit level
    min(7, floor(8 m / 255)), and the class 64 r + 8 g + b -- what `minivit.mpp.patch_color_codes` computes;
    the answer may not call it."""
    from ..mpp import patch_color_codes

    def case(images, p):
        def run():
            want = patch_color_codes(images, p)
            with _without(fn, ["minivit.mpp.patch_color_codes"],
                          "average each patch's channels, take their 3-bit levels and combine them yourself"):
                got = fn(images.clone(), p)
            if isinstance(got, torch.Tensor) and got.is_floating_point():
                return f"returned a {got.dtype} tensor, expected integer colour classes (e.g. torch.long)"
            return _compare(got, want, atol=0, what="colour classes")
        return run
    pure = torch.tensor([[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 0, 255], [100, 150, 200]], dtype=torch.uint8)
    constant = pure.view(5, 3, 1, 1).expand(5, 3, 4, 4).contiguous()  # one colour per image, 2 x 2 patches
    return _run("colour codes", [
        ("black, white, red, blue, (100, 150, 200): 0, 511, 448, 7, 230", case(constant, 2)),
        ("random images, 8x8 with 4x4 patches", case(_off_edge_images(2, 8, 8, 4, 0), 4)),
        ("a non-square 4x12 image (patches row by row)", case(_off_edge_images(1, 4, 12, 2, 1), 2)),
    ], verbose)


def check_sub_patch_codes(fn, verbose: bool = True) -> CheckResult:
    """09_masked_patch_prediction, exercise 4: `fn(images uint8 (B, 3, H, W), patch_size, sub) -> (B, N, S)`:
    for every patch (row by row, as `patchify`) the colour classes of its S = (patch_size / sub)^2 sub-patches of
    sub x sub pixels, row by row inside the patch -- the targets of the paper's "4 x 4 downsized version" in
    miniature."""
    from einops import rearrange

    from ..mpp import patch_color_codes

    def expected(images, p, sub):
        fine = patch_color_codes(images, sub)  # (B, (H/sub) * (W/sub)): the fine grid, row by row
        h, w, k = images.shape[-2] // p, images.shape[-1] // p, p // sub
        return rearrange(fine, "b (h i w j) -> b (h w) (i j)", h=h, i=k, w=w, j=k)  # (B, N, S)

    def case(images, p, sub):
        def run():
            got = fn(images.clone(), p, sub)
            if isinstance(got, torch.Tensor) and got.is_floating_point():
                return f"returned a {got.dtype} tensor, expected integer colour classes (e.g. torch.long)"
            return _compare(got, expected(images, p, sub), atol=0, what="sub-patch classes",
                            order_hint="patches row by row, and inside each patch its sub-patches row by row")
        return run
    return _run("sub-patch colour codes", [
        ("8x8 images, 4x4 patches of 2x2 sub-patches: (B, 4, 4)", case(_off_edge_images(2, 8, 8, 2, 2), 4, 2)),
        ("32x32 images as CIFAR-10's, 4x4 patches: (B, 64, 4)", case(_off_edge_images(2, 32, 32, 2, 3), 4, 2)),
        ("a non-square 8x16 image, 8x8 patches of 4x4 sub-patches: (1, 2, 4)", case(_off_edge_images(1, 8, 16, 4, 4), 8, 4)),
    ], verbose)
