"""minivit: the Vision Transformer (Dosovitskiy et al., ICLR 2021), built step by step.

The package grows with the course's notebooks; each module's docstring names
the notebook that introduces it. The public API:

    from minivit import ViT, ViTConfig
    model = ViT.from_preset("ViT-B/16", num_classes=10)

Data (`minivit.data`) and figures (`minivit.viz`) are modules of their own:
`from minivit.data import load_dataset`.
"""

from .attention import Attention, attention_with_weights
from .config import PRESETS, ViTConfig, get_preset, list_presets
from .embeddings import (
    pos_embed_similarity,
    prepend_class_token,
    resize_pos_embed,
    sincos_pos_embed_2d,
)
from .encoder import Block, Encoder, Mlp
from .flops import count_flops
from .inspection import (
    attention_rollout,
    class_token_map,
    filter_principal_components,
    mean_attention_distance,
    pos_embed_grid_summary,
    record_attention,
)
from .mpp import MaskedPatchPrediction, corrupt_patches, decode_color_code, mpp_loss, patch_color_codes
from .patching import PatchEmbed, conv_weight_as_linear, patchify, unpatchify
from .profile import Profile, get_profile
from .vit import MlpHead, ViT

__version__ = "0.1.0"

# Training, checkpoint, fine-tuning and torchvision-based names (CNN, hybrid) load on first use: `python -m
# minivit.train` and `python -m minivit.data` run their module once (no runpy double-import warning), and
# `import minivit` does not pay for importing torchvision.
_LAZY = {
    "History": "train",
    "evaluate": "train",
    "fit": "train",
    "predict": "train",
    "load_checkpoint": "checkpoint",
    "load_model": "checkpoint",
    "save_checkpoint": "checkpoint",
    "LoadReport": "finetune",
    "recipes": "recipes",
    "load_pretrained": "finetune",
    "CNN_PRESETS": "cnn",
    "CifarResNet": "cnn",
    "list_cnn_presets": "cnn",
    "resnet18_cifar": "cnn",
    "HybridEmbed": "hybrid",
    "resnet50_s16_backbone": "hybrid",
    "resnet50_s32_backbone": "hybrid",
    "resnet_s16_backbone": "hybrid",
    "resnet_s4_backbone": "hybrid",
    "Preprocess": "preprocess",
    "preprocess": "preprocess",
    "evaluate_mpp": "pretrain",
    "pretrain_mpp": "pretrain",
    "pretrain_mpp_or_load": "pretrain",
}


def __getattr__(name: str):
    if name in _LAZY:
        from importlib import import_module

        module = import_module(f".{_LAZY[name]}", __name__)
        return module if name == _LAZY[name] else getattr(module, name)  # a submodule, or a name in it
    raise AttributeError(f"module 'minivit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "Attention",
    "count_flops",
    "recipes",
    "CNN_PRESETS",
    "CifarResNet",
    "HybridEmbed",
    "list_cnn_presets",
    "resnet18_cifar",
    "resnet50_s16_backbone",
    "resnet50_s32_backbone",
    "resnet_s16_backbone",
    "resnet_s4_backbone",
    "LoadReport",
    "Preprocess",
    "preprocess",
    "MaskedPatchPrediction",
    "evaluate_mpp",
    "pretrain_mpp",
    "pretrain_mpp_or_load",
    "attention_rollout",
    "class_token_map",
    "corrupt_patches",
    "decode_color_code",
    "filter_principal_components",
    "load_pretrained",
    "mean_attention_distance",
    "mpp_loss",
    "patch_color_codes",
    "pos_embed_grid_summary",
    "record_attention",
    "Block",
    "Encoder",
    "History",
    "Profile",
    "evaluate",
    "fit",
    "get_profile",
    "load_checkpoint",
    "load_model",
    "predict",
    "save_checkpoint",
    "Mlp",
    "MlpHead",
    "PRESETS",
    "PatchEmbed",
    "ViT",
    "ViTConfig",
    "conv_weight_as_linear",
    "get_preset",
    "list_presets",
    "patchify",
    "pos_embed_similarity",
    "prepend_class_token",
    "resize_pos_embed",
    "attention_with_weights",
    "sincos_pos_embed_2d",
    "unpatchify",
]
