"""Figures for the course. Every function only draws what it is given and returns a matplotlib Figure.

Figures are made with pyplot, so a notebook shows them at the end of the cell; write
`_ = history.plot()` (nbval ignores a trailing `;`) and `plt.close(fig)` in scripts.

Introduced in 01_patches.ipynb (patch figures); each function names the notebook that uses it.
"""

from __future__ import annotations


def _figure(ncols: int, width: float = 4.0, height: float = 3.2):
    import matplotlib.pyplot as plt  # a pyplot figure: Jupyter's inline backend shows it at the end of the cell
    fig, axes = plt.subplots(1, ncols, squeeze=False, figsize=(width * ncols, height), layout="constrained")
    return fig, axes[0]


def plot_history(history, title: str | None = None):
    """Loss and accuracy per epoch and the learning rate of every step of a `minivit.train.History`
    -> Figure with 3 axes. Epoch ticks are whole numbers; the learning rate is drawn step by step (a
    warm-up shorter than an epoch shows), or per epoch for histories that did not record steps."""
    from matplotlib.ticker import MaxNLocator
    h = history.to_dict() if hasattr(history, "to_dict") else dict(history)
    fig, (ax_loss, ax_acc, ax_lr) = _figure(3)
    ep = h["epoch"]
    for ax, key, label in ((ax_loss, "loss", "cross-entropy"), (ax_acc, "acc", "top-1 accuracy")):
        ax.plot(ep, h[f"train_{key}"], "o-", label="train (running mean over the epoch)")
        val = [(e, v) for e, v in zip(ep, h[f"val_{key}"]) if v is not None]
        if val:
            ax.plot(*zip(*val), "s-", label="validation (end of epoch)")
        ax.set(xlabel="epoch", ylabel=label)
        ax.legend(fontsize=8)
    steps, per_epoch = h.get("step_lr") or [], h.get("steps_per_epoch")
    if steps and per_epoch:
        ax_lr.plot([(i + 1) / per_epoch for i in range(len(steps))], steps, "-", color="tab:gray")
        ax_lr.set(xlabel="epoch", ylabel="learning rate (every step)")
        ax_lr.set_xlim(0, max(len(steps) / per_epoch, 1))
    else:
        ax_lr.plot(ep, h["lr"], "o-", color="tab:gray")
        ax_lr.set(xlabel="epoch", ylabel="learning rate (last step of the epoch)")
    for ax in (ax_loss, ax_acc, ax_lr):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    return fig


# ---- 01_patches.ipynb: patches, the patch sequence, patch-size cost, embedding filters ----


def _as_numpy(x):
    """A tensor or array as a NumPy array on the CPU (for drawing only)."""
    import numpy as np
    return x.detach().float().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _draw_tiles(ax, tiles, ncols: int, gap: float, cmap=None):
    """Draw `tiles` (n, h, w[, c]) row by row on one axes, `ncols` per row, `gap` pixels apart."""
    n, th, tw = tiles.shape[:3]
    nrows = -(-n // ncols)
    for i, tile in enumerate(tiles):
        r, c = divmod(i, ncols)
        x0, y0 = c * (tw + gap), r * (th + gap)
        ax.imshow(tile, extent=(x0, x0 + tw, y0 + th, y0), cmap=cmap, vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xlim(-gap, ncols * (tw + gap))
    ax.set_ylim(nrows * (th + gap), -gap)
    ax.set_aspect("equal")
    ax.axis("off")


def plot_patch_grid(patches, grid_size: tuple[int, int], gap: float = 2.0, title: str | None = None,
                    width: float = 5.0):
    """Patches (N, P, P, C) or (N, P, P) with values in [0, 1], in row-major order, drawn on their
    (H/P, W/P) grid with `gap` pixels between them, `width` inches wide -> Figure with 1 axes.
    Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    p = _as_numpy(patches)
    gh, gw = grid_size
    if p.ndim not in (3, 4) or p.shape[0] != gh * gw:
        raise ValueError(f"expected patches (N, P, P[, C]) with N = {gh}*{gw} = {gh * gw}, got shape {p.shape}")
    fig, ax = plt.subplots(figsize=(width, width * gh / gw), layout="constrained")
    _draw_tiles(ax, p, gw, gap, cmap="gray" if p.ndim == 3 else None)
    ax.set_title(title or f"{gh} x {gw} = {gh * gw} patches of {p.shape[1]} x {p.shape[2]} pixels")
    return fig


def plot_patch_sequence(sequence, patch_size: int, num_show: int = 16, title: str | None = None):
    """The flattened patch sequence x_p (N, P*P*C) of Eq. 1, values in [0, 1], flattened in (p1 p2 c)
    order -> Figure with 2 axes (and a colour bar): the first `num_show` patches as a strip (each row
    shown as its P x P x C patch) and the whole (N, P*P*C) matrix as an image. Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    x = _as_numpy(sequence)
    if x.ndim != 2 or x.shape[1] % (patch_size * patch_size):
        raise ValueError(f"expected a sequence (N, P*P*C) with P={patch_size}, got shape {x.shape}")
    n, d = x.shape
    c = d // (patch_size * patch_size)
    k = min(num_show, n)
    strip = x[:k].reshape(k, patch_size, patch_size, c)
    strip = strip[..., 0] if c == 1 else strip
    fig, (ax_strip, ax_seq) = plt.subplots(2, 1, figsize=(9, 6.5), height_ratios=(1, 5), layout="constrained")
    _draw_tiles(ax_strip, strip, k, gap=patch_size / 8, cmap="gray" if c == 1 else None)
    ax_strip.set_title(f"the first {k} of N = {n} patches, in order x_p^1, x_p^2, ...")
    im = ax_seq.imshow(x, aspect="auto", cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax_seq.set(xlabel=f"position in the flattened patch, (p1 p2 c) order: P·P·C = {d} values",
               ylabel=f"patch index n (N = {n})")
    fig.colorbar(im, ax=ax_seq, label="pixel value", shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_patch_size_cost(patch_sizes, num_tokens, attention_cost, flops=None, image_size: int | None = None):
    """How sequence length and cost grow as the patch size P shrinks -> Figure with 2 axes.

    `num_tokens`: N per patch size; `attention_cost`: relative attention cost (e.g. N^2 / N_16^2);
    `flops`: optional relative forward FLOPs of one model per patch size. Log-log axes, so a power
    law N ∝ P^-2 is a straight line. Used in 01_patches.ipynb."""
    from matplotlib.ticker import NullFormatter
    ps, n, att = (list(map(float, _as_numpy(v).ravel())) for v in (patch_sizes, num_tokens, attention_cost))
    if not len(ps) == len(n) == len(att) or (flops is not None and len(flops) != len(ps)):
        raise ValueError("expected patch_sizes, num_tokens, attention_cost (and flops) of the same length")
    fig, (ax_n, ax_c) = _figure(2, width=4.5, height=3.4)
    size = f" at {image_size} px" if image_size else ""
    ax_n.plot(ps, n, "o-")
    ax_n.set(xlabel="patch size P", ylabel="tokens N = HW / P²", yscale="log", title=f"sequence length{size}")
    ax_n.set_yticks(n, [f"{v:g}" for v in n])
    ax_n.yaxis.set_minor_formatter(NullFormatter())
    ax_c.plot(ps, att, "o-", label="attention ∝ N²")
    if flops is not None:
        ax_c.plot(ps, list(map(float, flops)), "s--", label="whole forward pass (FLOPs)")
    ax_c.set(xlabel="patch size P", ylabel="cost relative to P = 16", yscale="log", title=f"compute{size}")
    ax_c.legend()
    for ax in (ax_n, ax_c):
        ax.set_xscale("log")
        ax.set_xticks(ps, [f"{p:g}" for p in ps])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.invert_xaxis()
        ax.grid(alpha=0.3, which="both")
    return fig


def plot_patch_filters(weight, ncols: int = 8, title: str | None = None):
    """Patch-embedding filters, a Conv2d weight (D, C, P, P) (or a slice of its D filters) -> Figure
    with 1 axes: each filter min-max scaled to [0, 1] on its own, as an RGB (or grey) tile.
    The paper's Fig. 7 (left) shows trained ones. Used in 01_patches.ipynb."""
    import matplotlib.pyplot as plt
    w = _as_numpy(weight)
    if w.ndim != 4 or w.shape[1] not in (1, 3):
        raise ValueError(f"expected a Conv2d weight (D, C, P, P) with C = 1 or 3, got shape {w.shape}")
    lo = w.min(axis=(1, 2, 3), keepdims=True)
    span = w.max(axis=(1, 2, 3), keepdims=True) - lo
    tiles = ((w - lo) / (span + (span == 0))).transpose(0, 2, 3, 1)  # (D, P, P, C) for imshow
    tiles = tiles[..., 0] if tiles.shape[-1] == 1 else tiles
    ncols = min(ncols, len(tiles))
    nrows = -(-len(tiles) // ncols)
    fig, ax = plt.subplots(figsize=(0.8 * ncols + 0.4, 0.8 * nrows + 0.6), layout="constrained")
    _draw_tiles(ax, tiles, ncols, gap=w.shape[-1] / 8, cmap="gray" if tiles.ndim == 3 else None)
    ax.set_title(title or f"{len(tiles)} filters of {w.shape[-2]} x {w.shape[-1]} x {w.shape[1]}")
    return fig


def plot_pos_embed_similarity(similarity, title: str | None = None, vmin: float | None = -1.0,
                              vmax: float | None = 1.0, mask_self: bool = False):
    """Position-embedding similarity as the paper's Fig. 7 (centre) -> Figure.

    `similarity` (rows, cols, rows, cols), e.g. from `minivit.pos_embed_similarity`: tile (i, j) of
    the rows x cols grid of tiles is the map `similarity[i, j]`, the cosine similarity of patch
    (i, j)'s embedding with every patch's. Rows and columns are numbered from 0. One shared colour
    scale [vmin, vmax] (the paper's -1..1 by default; None: the data's min / max) and a colour bar.
    `mask_self`: leave each patch's similarity with itself (always 1) blank, so the scale shows how
    similar a patch is to the *other* patches; to compare several figures, give them all the same
    vmin and vmax. Used in 02_class_token_and_positions.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    s = _as_numpy(similarity).astype(float)
    if s.ndim != 4 or s.shape[:2] != s.shape[2:]:
        raise ValueError(f"expected a similarity of shape (rows, cols, rows, cols), got {s.shape}")
    rows, cols = s.shape[:2]
    if mask_self:
        s = s.copy()
        s[np.arange(rows)[:, None], np.arange(cols)[None], np.arange(rows)[:, None], np.arange(cols)[None]] = np.nan
    vmin = float(np.nanmin(s)) if vmin is None else vmin
    vmax = float(np.nanmax(s)) if vmax is None else vmax
    cmap = plt.get_cmap("viridis").with_extremes(bad="white")
    side = min(6.0, 0.55 * max(rows, cols) + 1.0)
    fig, axes = plt.subplots(rows, cols, squeeze=False, figsize=(side * cols / max(rows, cols) + 0.9, side),
                             gridspec_kw={"wspace": 0.06, "hspace": 0.06})
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            im = ax.imshow(s[i, j], cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            if j == 0:
                ax.set_ylabel(str(i), rotation=0, ha="right", va="center", fontsize=7)
            if i == rows - 1:
                ax.set_xlabel(str(j), fontsize=7)
    fig.supxlabel("input patch column", fontsize=9)
    fig.supylabel("input patch row", fontsize=9)
    label = "cosine similarity" + (" (self: blank)" if mask_self else "")
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label=label)
    fig.suptitle(title or f"position-embedding similarity, {rows} x {cols} grid", fontsize=10)
    return fig


def plot_grid_maps(maps, titles=None, cmap: str = "viridis", suptitle: str | None = None, colorbar: bool = True,
                   vmin: float | None = None, vmax: float | None = None, shared_scale: bool = True):
    """Side-by-side heat maps of 2-D arrays (each (h, w), sizes may differ), e.g. one channel of a position
    embedding laid out on its patch grid before and after `minivit.resize_pos_embed` -> Figure with
    len(maps) axes, each with a colour bar. With `shared_scale` (default) every map uses one colour scale,
    [vmin, vmax] or else the min / max over all maps, so the maps can be compared; otherwise each map has its
    own. Rows and columns are numbered from 0. Used in 02_class_token_and_positions.ipynb."""
    arrays = [_as_numpy(m) for m in maps]
    if not arrays or any(a.ndim != 2 for a in arrays):
        raise ValueError(f"expected a non-empty list of 2-D maps (h, w), got shapes {[a.shape for a in arrays]}")
    if titles is not None and len(titles) != len(arrays):
        raise ValueError(f"got {len(titles)} titles for {len(arrays)} maps")
    if shared_scale:
        vmin = min(float(a.min()) for a in arrays) if vmin is None else vmin
        vmax = max(float(a.max()) for a in arrays) if vmax is None else vmax
    fig, axes = _figure(len(arrays), width=3.4, height=3.0)
    for k, (ax, a) in enumerate(zip(axes, arrays)):
        im = ax.imshow(a, cmap=cmap, interpolation="nearest", vmin=vmin, vmax=vmax)
        ax.set(xlabel="patch column", ylabel="patch row", title=titles[k] if titles else f"{a.shape[0]} x {a.shape[1]}")
        if colorbar:
            fig.colorbar(im, ax=ax, shrink=0.85)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# ---- 03_transformer_encoder.ipynb: attention weight matrices, labelled predictions ----


def plot_attention_matrix(weights, token_labels=None, head_titles=None, ncols: int = 4, title: str | None = None):
    """Attention weights A (Appendix A, Eq. 6) of one sequence, (N, N) or (heads, N, N) -> Figure with one
    axes per head (plus a colour bar). Row i is query token i's weights over the key tokens j (columns),
    so each row sums to 1. `token_labels`: optional N tick labels (e.g. ["cls", "1", "2", ...]), drawn
    when N <= 20; `head_titles`: optional title per head. Used in 03_transformer_encoder.ipynb."""
    import matplotlib.pyplot as plt
    a = _as_numpy(weights)
    a = a[None] if a.ndim == 2 else a
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise ValueError(f"expected attention weights (N, N) or (heads, N, N), got shape {a.shape}")
    h, n = a.shape[0], a.shape[1]
    if token_labels is not None and len(token_labels) != n:
        raise ValueError(f"expected {n} token_labels, one per token, got {len(token_labels)}")
    if head_titles is not None and len(head_titles) != h:
        raise ValueError(f"expected {h} head_titles, one per head, got {len(head_titles)}")
    ncols = max(1, min(ncols, h))
    nrows = -(-h // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(3.3 * ncols + 1.0, 3.3 * nrows + 0.5),
                             layout="constrained")
    for i, ax in enumerate(axes.flat):
        if i >= h:
            ax.axis("off")
            continue
        im = ax.imshow(a[i], cmap="viridis", vmin=0.0, vmax=float(a.max()), interpolation="nearest")
        label = head_titles[i] if head_titles is not None else (f"head {i + 1}" if h > 1 else "A")
        ax.set(title=label, xlabel="key token j", ylabel="query token i")
        if token_labels is not None and n <= 20:
            ax.set_xticks(range(n), [str(t) for t in token_labels], rotation=90, fontsize=7)
            ax.set_yticks(range(n), [str(t) for t in token_labels], fontsize=7)
    fig.colorbar(im, ax=axes, label="attention weight A_ij", shrink=0.8)
    if title:
        fig.suptitle(title)
    return fig


def plot_predictions(images, labels, predictions, classes, ncols: int = 8, title: str | None = None):
    """A grid of labelled images -> Figure with one axes per image. `images`: (B, C, H, W) or (B, H, W),
    uint8 in [0, 255] or float in [0, 1], C = 1 (grey) or 3; `labels`, `predictions`: (B,) class indices
    into `classes`. Each image is titled with its prediction, green when right; a wrong one is red and
    also names the true class. Used in 03_transformer_encoder.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    floating = images.is_floating_point() if hasattr(images, "is_floating_point") else np.asarray(images).dtype.kind == "f"
    x = _as_numpy(images)
    y, p = (_as_numpy(v).astype(int).ravel() for v in (labels, predictions))
    if x.ndim == 4 and x.shape[1] in (1, 3):
        x = x.transpose(0, 2, 3, 1)  # (B, H, W, C) for imshow
        x = x[..., 0] if x.shape[-1] == 1 else x
    if x.ndim not in (3, 4) or not len(x) == len(y) == len(p):
        raise ValueError(f"expected images (B, C, H, W) or (B, H, W) with C = 1 or 3 and B labels and predictions, "
                         f"got shapes {_as_numpy(images).shape}, {y.shape}, {p.shape}")
    if len(x) == 0 or min(y.min(), p.min()) < 0 or max(y.max(), p.max()) >= len(classes):
        raise ValueError(f"expected at least one image and class indices in [0, {len(classes)}) for {len(classes)} classes")
    vmax = 1.0 if floating else 255
    ncols = min(ncols, len(x))
    nrows = -(-len(x) // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, figsize=(1.5 * ncols, 1.75 * nrows + 0.3), layout="constrained")
    for i, ax in enumerate(axes.flat):
        ax.axis("off")
        if i >= len(x):
            continue
        ax.imshow(x[i], cmap="gray" if x.ndim == 3 else None, vmin=0, vmax=vmax, interpolation="nearest")
        right = y[i] == p[i]
        text = str(classes[p[i]]) if right else f"{classes[p[i]]}\n(true: {classes[y[i]]})"
        ax.set_title(text, color="tab:green" if right else "tab:red", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig
