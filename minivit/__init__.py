"""minivit: the Vision Transformer (Dosovitskiy et al., ICLR 2021), built step by step.

The package grows with the course's notebooks; each module's docstring names
the notebook that introduces it. The public API:

    from minivit import ViT, ViTConfig
    model = ViT.from_preset("ViT-B/16", num_classes=10)
"""

from .attention import Attention, scaled_dot_product_attention
from .config import PRESETS, ViTConfig, get_preset, list_presets
from .embeddings import (
    pos_embed_similarity,
    prepend_class_token,
    resize_pos_embed,
    sincos_pos_embed_2d,
)
from .encoder import Block, Encoder, Mlp
from .patching import PatchEmbed, conv_weight_as_linear, patchify, unpatchify
from .vit import MlpHead, ViT

__version__ = "0.1.0"

__all__ = [
    "Attention",
    "Block",
    "Encoder",
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
    "scaled_dot_product_attention",
    "sincos_pos_embed_2d",
    "unpatchify",
]
