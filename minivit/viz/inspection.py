"""Figures for inspecting a trained ViT: mean attention distance by head and depth (Fig. 7 right, Fig. 11), also as
a share of uniform attention per head (`plot_distance_share`), and
attention maps as a ratio to uniform attention (Fig. 6).

Introduced in 08_inspecting_vit.ipynb.
"""

from __future__ import annotations

from ._common import _as_numpy, _label_map_grid


def _distance_arrays(distances: dict):
    """{label: (L, heads) or (B, L, heads)} -> {label: (mean (L, heads), s.e. (L, heads) or None)}, L."""
    import numpy as np
    out = {}
    for k, v in distances.items():
        a = _as_numpy(v).astype(float)
        if a.ndim == 3 and len(a) >= 2:  # per image: the mean over images and its standard error
            out[str(k)] = (a.mean(axis=0), a.std(axis=0, ddof=1) / np.sqrt(len(a)))
        elif a.ndim == 2:
            out[str(k)] = (a, None)
        else:
            raise ValueError(f"expected {{label: (L, heads)}} distances, or (B, L, heads) per image with B >= 2, "
                             f"got shapes {[_as_numpy(x).shape for x in distances.values()]}")
    if not out:
        raise ValueError("expected {label: (L, heads)} distances, got an empty dict")
    depths = {m.shape[0] for m, _ in out.values()}
    if len(depths) != 1:
        raise ValueError(f"expected the same number of layers L in every entry, got {sorted(depths)}")
    return out, depths.pop()


def plot_attention_distance(distances: dict, reference: float | None = None, max_distance: float | None = None,
                            title: str | None = None):
    """Mean attention distance per head against depth, as the paper's Fig. 7 (right) / Fig. 11 -> Figure.

    `distances`: {label: (L, heads)} in pixels, e.g. from `minivit.inspection.mean_attention_distance`, or
    {label: (B, L, heads)} per image (then the dots are the means over the B images, with standard errors),
    one entry per model (say "initialisation" and "trained"); all must have the same L.

    Left panel, the paper's view: each dot is one head at one layer (layers numbered from 0 on the x axis),
    one colour per entry, the entries side by side within a layer; a short bar marks each layer's mean over
    heads. All entries share one y axis from 0 to `max_distance` (default: 5% above the largest value).
    `reference`: the distance of uniform attention, drawn as a dashed line; with it, a right panel shows
    every head's distance minus `reference` (0 = uniform attention) on an axis fitted to the differences,
    with ±1 standard error bars when per-image distances are given, and each layer's mean over heads as a bar.
    Used in 08_inspecting_vit.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    arrays, depth = _distance_arrays(distances)
    top = max(float(m.max()) for m, _ in arrays.values())
    top = max(top, reference or 0.0) * 1.05 if max_distance is None else max_distance
    ncols = 1 if reference is None else 2
    fig, axes = plt.subplots(1, ncols, squeeze=False, layout="constrained",
                             figsize=(ncols * max(4.5, 1.1 * depth + 2.0), 3.6))
    ax, rel = axes[0, 0], (axes[0, 1] if reference is not None else None)
    width = 0.7 / len(arrays)
    for k, (label, (mean, se)) in enumerate(arrays.items()):
        x0 = np.arange(depth) - 0.35 + width * (k + 0.5)  # (L,): this entry's place within each layer
        heads = mean.shape[1]
        jitter = (np.arange(heads) - (heads - 1) / 2) * (0.5 * width / max(heads, 1))  # (heads,)
        x = (x0[:, None] + jitter[None]).ravel()  # (L * heads,)
        ax.scatter(x, mean.ravel(), s=18, color=f"C{k}", alpha=0.8, label=label, zorder=3)
        ax.hlines(mean.mean(axis=1), x0 - 0.4 * width, x0 + 0.4 * width, color=f"C{k}", lw=2, zorder=2)
        if rel is not None:
            diff = (mean - reference).ravel()
            rel.errorbar(x, diff, yerr=None if se is None else se.ravel(), fmt="o", ms=4, color=f"C{k}",
                         elinewidth=1, capsize=2, label=label, zorder=3)
            rel.hlines(mean.mean(axis=1) - reference, x0 - 0.4 * width, x0 + 0.4 * width, color=f"C{k}", lw=2,
                       zorder=2)
    if reference is not None:
        ax.axhline(reference, ls="--", color="0.4", lw=1, label=f"uniform attention ({reference:.0f} px)")
        rel.axhline(0.0, ls="--", color="0.4", lw=1)
        rel.set_xticks(range(depth), [str(i) for i in range(depth)])
        errs = "; bars ±1 s.e. over images" if any(se is not None for _, se in arrays.values()) else ""
        rel.set(xlabel="layer (0 = first)", ylabel="distance − uniform attention (pixels)",
                xlim=(-0.6, depth - 0.4), title=f"each head minus uniform attention{errs}")
        rel.title.set_fontsize(9)
        rel.grid(axis="y", alpha=0.3)
    ax.set_xticks(range(depth), [str(i) for i in range(depth)])
    ax.set(xlabel="layer (0 = first)", ylabel="mean attention distance (pixels)", ylim=(0, top),
           xlim=(-0.6, depth - 0.4), title="size of the attended area by head and depth")
    ax.title.set_fontsize(9)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def _head_positions(depth: int, heads: int):
    """x of every (layer, head), heads side by side within a layer, a gap between layers: (L, heads)."""
    import numpy as np
    return np.arange(depth)[:, None] * (heads + 1.0) + np.arange(heads)[None, :]


def _draw_heads(ax, arrays: dict, scale: float, colours=None):
    """Each head as a dot (±1 s.e. when per image), each layer's mean over heads as a bar, one colour per entry."""
    import numpy as np
    width = 0.6 / len(arrays)
    for k, (label, (mean, se)) in enumerate(arrays.items()):
        depth, heads = mean.shape
        x = _head_positions(depth, heads) - 0.3 + width * (k + 0.5)  # (L, heads)
        colour = (colours or {}).get(label, f"C{k}")
        ax.errorbar(x.ravel(), scale * mean.ravel(), yerr=None if se is None else scale * se.ravel(), fmt="o", ms=4,
                    color=colour, elinewidth=1, capsize=2, label=label, zorder=3)
        centre = x.mean(axis=1)  # (L,)
        ax.hlines(scale * mean.mean(axis=1), centre - heads / 2, centre + heads / 2, color=colour, lw=1.5,
                  alpha=0.6, zorder=2)


def _head_axis(ax, depth: int, heads: int):
    import matplotlib.transforms as mtransforms
    x = _head_positions(depth, heads)
    ax.set_xticks(x.ravel(), [str(h) for _ in range(depth) for h in range(heads)], fontsize=7)
    ax.set_xlim(-1, x.max() + 1)
    ax.set_xlabel("head, grouped by layer (bar: the layer's mean over heads)")
    blend = mtransforms.blended_transform_factory(ax.transData, ax.transAxes)
    for layer in range(depth):
        ax.text(x[layer].mean(), 1.01, f"layer {layer}", transform=blend, ha="center", va="bottom", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def plot_distance_share(shares: dict, difference=None, difference_label: str | None = None,
                        title: str | None = None):
    """Every head's mean attention distance as a share of uniform attention, layer by layer -> Figure.

    `shares`: {label: (B, L, heads) per image, or (L, heads)}: distance / the distance of uniform attention (1 =
    uniform; e.g. `mean_attention_distance(..., per_image=True) / uniform_attention_distance(grid, P)`), one entry
    per model, all with the same L and heads. Left panel: one dot per head, in percent of uniform attention, heads
    side by side within each layer so the spread between heads is visible, ±1 s.e. over images when per image,
    a bar at each layer's mean over heads, a dashed line at 100% (uniform attention).
    `difference`: optional (B, L, heads) or (L, heads), a paired difference of shares (say, model A minus model B
    on the same images); a second panel, below, draws it per head in percentage points of uniform attention, ±1 s.e. over
    images, with the layer means, and a dashed line at 0. `difference_label` titles that panel.
    Used in 08_inspecting_vit.ipynb."""
    import matplotlib.pyplot as plt
    arrays, depth = _distance_arrays(shares)
    head_counts = {m.shape[1] for m, _ in arrays.values()}
    if len(head_counts) != 1:
        raise ValueError(f"expected the same number of heads in every entry, got {sorted(head_counts)}")
    heads = head_counts.pop()
    diff = None
    if difference is not None:
        diff = _distance_arrays({"difference": difference})[0]["difference"]  # (mean, s.e. or None)
        if diff[0].shape != (depth, heads):
            raise ValueError(f"expected the difference on the same (L, heads) = {(depth, heads)} as the shares, got "
                             f"{diff[0].shape}")
    nrows = 1 if diff is None else 2  # the difference below the shares, on the same head positions
    fig, axes = plt.subplots(nrows, 1, squeeze=False, layout="constrained",
                             figsize=(max(5.0, 0.32 * depth * (heads + 1) + 2.0), 3.4 * nrows))
    ax = axes[0, 0]
    _draw_heads(ax, arrays, 100.0)
    ax.axhline(100.0, ls="--", color="0.4", lw=1, label="uniform attention")
    _head_axis(ax, depth, heads)
    errs = ", ±1 s.e. over images" if any(se is not None for _, se in arrays.values()) else ""
    ax.set_ylabel("mean attention distance (% of uniform)")
    ax.set_title(f"each head's distance as a share of uniform attention{errs}", fontsize=9, pad=16)
    ax.legend(fontsize=8, loc="lower right")
    if diff is not None:
        rel = axes[1, 0]
        _draw_heads(rel, {difference_label or "difference": diff}, 100.0, colours={difference_label or "difference":
                                                                                  "C3"})
        rel.axhline(0.0, ls="--", color="0.4", lw=1)
        _head_axis(rel, depth, heads)
        rel.set_ylabel("difference (points of uniform attention)")
        rel.set_title((difference_label or "paired difference") + (", ±1 s.e. over images" if diff[1] is not None
                                                                   else ""), fontsize=9, pad=16)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


def plot_ratio_maps(images, ratios, titles=None, row_labels=None, limit: float | None = None,
                    box: tuple[int, int, int, int] | None = None, title: str | None = None):
    """Maps over the patch grid as a ratio to uniform attention, below the images they were computed for -> Figure.

    `images`: (B, C, H, W), uint8 in [0, 255] or float in [0, 1], C = 1 or 3. `ratios`: (B, h, w) or (R, B, h, w),
    e.g. `minivit.inspection.ratio_to_uniform` of rollout maps, R rows for the same B images (say, at
    initialisation and trained). The first row shows the images; row r + 1 shows `ratios[r]`, each patch one block,
    on one diverging, logarithmic colour scale centred at 1 (white: the share uniform attention gives a patch; red:
    more; blue: less) from 1/`limit` to `limit` (default: the largest ratio or inverse ratio in any row, so every
    panel shares the scale). `box`: (row, column, height, width) of a rectangle of patches to outline on every map,
    e.g. the labelled tile of a mosaic. `titles`: B column titles; `row_labels`: R labels.
    Used in 08_inspecting_vit.ipynb."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import LogNorm
    from matplotlib.patches import Rectangle
    floating = images.is_floating_point() if hasattr(images, "is_floating_point") else np.asarray(images).dtype.kind == "f"
    x, m = _as_numpy(images), _as_numpy(ratios)
    m = m[None] if m.ndim == 3 else m
    if x.ndim != 4 or x.shape[1] not in (1, 3) or m.ndim != 4 or m.shape[1] != len(x):
        raise ValueError(f"expected images (B, C, H, W) with C = 1 or 3 and ratios (B, h, w) or (R, B, h, w) for "
                         f"the same B images, got shapes {x.shape} and {_as_numpy(ratios).shape}")
    if not np.all(m > 0):
        raise ValueError("expected positive ratios to uniform attention (a map divided by its mean)")
    if titles is not None and len(titles) != len(x):
        raise ValueError(f"expected {len(x)} titles, one per image, got {len(titles)}")
    if row_labels is not None and len(row_labels) != len(m):
        raise ValueError(f"expected {len(m)} row_labels, one per row of maps, got {len(row_labels)}")
    if limit is None:
        limit = float(np.exp(np.abs(np.log(m)).max()))
    if not limit > 1:
        raise ValueError(f"limit must be > 1 (the scale runs from 1/limit to limit), got {limit}")
    rgb = (x if floating else x / 255.0).transpose(0, 2, 3, 1)  # (B, H, W, C)
    b, rows = len(x), len(m) + 1
    fig, axes = plt.subplots(rows, b, squeeze=False, figsize=(1.45 * b + 1.0, 1.5 * rows + 0.4), layout="constrained")
    norm = LogNorm(vmin=1 / limit, vmax=limit)
    for j in range(b):
        axes[0, j].imshow(rgb[j, ..., 0] if rgb.shape[-1] == 1 else rgb[j], cmap="gray", vmin=0, vmax=1)
        if titles is not None:
            axes[0, j].set_title(str(titles[j]), fontsize=8)
        for r in range(len(m)):
            im = axes[r + 1, j].imshow(m[r, j], cmap="RdBu_r", norm=norm, interpolation="nearest")
            if box is not None:
                r0, c0, bh, bw = box
                axes[r + 1, j].add_patch(Rectangle((c0 - 0.5, r0 - 0.5), bw, bh, fill=False, ec="k", lw=1.5, ls="--"))
    _label_map_grid(axes, row_labels, len(m))
    ticks = [t for t in (1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8) if 1 / limit <= t <= limit]
    bar = fig.colorbar(im, ax=axes[1:].ravel().tolist(), shrink=0.8, label="ratio to uniform attention")
    bar.set_ticks(ticks, labels=[f"1/{round(1 / t)}" if t < 1 else f"{t:g}" for t in ticks])
    bar.minorticks_off()
    if title:
        fig.suptitle(title, fontsize=10)
    return fig


__all__ = ["plot_attention_distance", "plot_distance_share", "plot_ratio_maps"]
