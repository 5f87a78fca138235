"""Figures for the course. Every function only draws what it is given and returns a matplotlib Figure.

Figures are made with pyplot, so a notebook shows them at the end of the cell; write
`_ = history.plot()` (nbval ignores a trailing `;`) and `plt.close(fig)` in scripts.

One module per topic, each naming the notebook that introduces it; everything is importable from
`minivit.viz`:

- `patches` (01): `plot_patch_grid`, `plot_patch_sequence`, `plot_patch_size_cost`, `plot_patch_filters`
- `positions` (02): `plot_pos_embed_similarity`, `plot_grid_maps`
- `attention` (03): `plot_attention_matrix`, `plot_attention_on_images`
- `training` (03): `plot_history`, `plot_predictions`
- `experiments` (04): `plot_runs`, `plot_confusion_matrices`, `plot_accuracies`, `plot_paired_gains`
- `scaling` (05): `plot_compute_accuracy`, `plot_data_scaling`
- `hybrid` (06): `plot_feature_maps`, `plot_feature_map_rows`, `plot_compute_by_family`
- `resolution` (07): `plot_image_rows`, `plot_position_mapping`, `plot_gains_over_baseline`
- `inspection` (08): `plot_attention_distance`, `plot_ratio_maps`
- `mpp` (09): `plot_pretext_curves`, `plot_pretext_loss`, `plot_color_predictions`
"""

from .attention import plot_attention_matrix, plot_attention_on_images
from .experiments import plot_accuracies, plot_confusion_matrices, plot_paired_gains, plot_runs
from .hybrid import plot_compute_by_family, plot_feature_map_rows, plot_feature_maps
from .inspection import plot_attention_distance, plot_ratio_maps
from .mpp import plot_color_predictions, plot_pretext_curves, plot_pretext_loss
from .patches import plot_patch_filters, plot_patch_grid, plot_patch_sequence, plot_patch_size_cost
from .positions import plot_grid_maps, plot_pos_embed_similarity
from .resolution import plot_gains_over_baseline, plot_image_rows, plot_position_mapping
from .scaling import plot_compute_accuracy, plot_data_scaling
from .training import plot_history, plot_predictions

__all__ = [
    "plot_accuracies",
    "plot_compute_accuracy",
    "plot_compute_by_family",
    "plot_confusion_matrices",
    "plot_data_scaling",
    "plot_paired_gains",
    "plot_feature_map_rows",
    "plot_feature_maps",
    "plot_runs",
    "plot_attention_distance",
    "plot_color_predictions",
    "plot_pretext_curves",
    "plot_pretext_loss",
    "plot_attention_matrix",
    "plot_attention_on_images",
    "plot_grid_maps",
    "plot_history",
    "plot_image_rows",
    "plot_gains_over_baseline",
    "plot_position_mapping",
    "plot_patch_filters",
    "plot_patch_grid",
    "plot_patch_sequence",
    "plot_patch_size_cost",
    "plot_pos_embed_similarity",
    "plot_predictions",
    "plot_ratio_maps",
]
