"""Checks for the notebooks' exercises: pass your answer, read what is right and what is wrong.

    from minivit.exercises import check_patchify
    check_patchify(my_patchify)        # prints one line per check, returns a CheckResult

Each check runs the student's answer on fixed cases and compares it with `minivit`'s own
implementation (or with a value computed from it). A wrong answer -- a wrong shape, wrong
numbers, `None`, an exception -- is reported, never raised, so a notebook cell that calls a check
always runs through. The returned `CheckResult` is true only when every case passed, so an
instructor can grade with `assert check_patchify(fn, verbose=False)`.

The shared machinery, for checks of your own, lives in `minivit.grading`: `_run` runs (label, thunk) cases and
never raises, showing on stdout what the answer writes to stderr (a progress bar, a warning: nbgrader would score a
cell with stderr output 0); `_call(fn, *args)` calls the answer on copies of its tensor arguments (an answer that
changes its input in place cannot spoil the expected value or a later case); `_compare` compares a tensor answer
with the expected one and, when the values are right but in another order, says so. Here, `_as_int` accepts a float
with an exact integer value (e.g. `H / P * W / P`) where an int is expected, and `with _without(fn, paths, hint):
fn(...)` runs the answer with the package's (or PyTorch's, SciPy's) own solution refusing to run, however the
answer holds it, so that an answer which only calls it is refused ("solve it without ...") instead of passed --
every check here does, 01-03's too.

The checks live in one module per group of notebooks, each read in one sitting; every name is imported here, the
same objects under both names (so a ban of "minivit.exercises" or of "minivit.exercises._mha" holds them):

    _common.py                the helpers above (_as_int, _Shortcut, _without, _images)
    patches_to_encoder.py     00_start_here, 01_patches, 02_class_token_and_positions, 03_transformer_encoder
    training_and_scaling.py   04_training_a_vit, 05_scaling, 06_hybrid
    inspection_and_mpp.py     07_finetuning_at_higher_resolution, 08_inspecting_vit, 09_masked_patch_prediction

Introduced in 00_start_here.ipynb; each check names the notebook whose exercise it checks.
"""

from __future__ import annotations

# minivit.grading's names that this module has always offered (a check of your own may import them from here)
from ..grading import CheckResult, Shortcut, _call, _compare, _copy, _run, without  # noqa: F401
from ._common import _as_int, _images, _Shortcut, _without  # noqa: F401
from .inspection_and_mpp import (_linear_weights, _off_edge_images, _patch_centres, _softmax_maps,  # noqa: F401
                                 _swap_tiles, check_color_codes, check_linear_weights, check_mean_attention_distance,
                                 check_patch_centres, check_sub_patch_codes, check_swap_tiles)
from .patches_to_encoder import (_ATTENTION_SOLUTIONS, _MSA_SOLUTIONS, _NOT_RESHAPE,  # noqa: F401
                                 _PATCHIFY_SOLUTIONS, _RESIZE_SOLUTIONS, _mha, check_attention, check_head_parameters,
                                 check_multi_head_attention, check_patchify, check_resize_pos_embed)
from .training_and_scaling import (_FLOP_COUNTERS, _factor_cases, _int_answer, _linear_lr_factor,  # noqa: F401
                                   _vit_configs, check_clip_grad_norm, check_forward_flops, check_hybrid_grid,
                                   check_hybrid_tokens, check_linear_lr_schedule, check_lr_schedule,
                                   check_param_groups, check_resnet50_compute, check_short_stem_share,
                                   check_training_flops)

__all__ = ["CheckResult", "check_head_parameters", "check_patchify", "check_resize_pos_embed", "check_attention",
           "check_multi_head_attention",
           "check_lr_schedule", "check_linear_lr_schedule", "check_param_groups", "check_clip_grad_norm",
           "check_forward_flops", "check_training_flops", "check_resnet50_compute",
           "check_hybrid_tokens", "check_hybrid_grid", "check_short_stem_share", "check_patch_centres",
           "check_linear_weights", "check_swap_tiles",
           "check_mean_attention_distance",
           "check_color_codes", "check_sub_patch_codes"]
